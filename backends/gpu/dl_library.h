// A shared library's entry points resolved at run time (dlopen, dlsym), so that the GPU binaries
// start where a library is absent and say why (mltune-gpu-runner: the CUDA driver, cuBLASLt and
// cuDNN).
#pragma once

#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace mltune::backends::gpu {

class DlLibrary {
 public:
  // Opens the first of `names` that loads; false where none does (then tried() lists them and
  // error() is dlerror's last word).
  bool Open(std::initializer_list<const char*> names) {
    for (const char* name : names) {
      handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle_ != nullptr) return true;
      Append(&tried_, name);
      error_ = dlerror();
    }
    return false;
  }
  // *fn = the entry point `name`, or nullptr, which missing() then names.
  template <typename Fn>
  void Get(Fn* fn, const char* name) {
    *fn = reinterpret_cast<Fn>(dlsym(handle_, name));
    if (*fn == nullptr) Append(&missing_, name);
  }
  // The same for an entry point the caller can do without: not named by missing().
  template <typename Fn>
  void GetOptional(Fn* fn, const char* name) {
    *fn = reinterpret_cast<Fn>(dlsym(handle_, name));
  }
  const std::string& tried() const { return tried_; }
  const std::string& error() const { return error_; }
  const std::string& missing() const { return missing_; }

 private:
  static void Append(std::string* list, const char* name) {
    if (!list->empty()) list->append(", ");
    list->append(name);
  }

  void* handle_ = nullptr;
  std::string tried_, error_, missing_;
};

}  // namespace mltune::backends::gpu
