// Compiles generated programs with the system C++ compiler (-O3 -march=native) into shared
// objects, kept in a disk cache keyed by the SHA-256 of the source, the flags and the compiler's
// identity (version, target, this CPU's model), so an unchanged kernel is compiled once per
// machine and compiler. Constants segments are kept beside them, keyed by their content.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "backends/cpu/codegen.h"

namespace mltune::backends::cpu {

struct CompilerOptions {
  std::string cache_dir;         // "" = DefaultKernelCacheDir()
  std::string compiler;          // "" = $MLTUNE_CXX, else g++
  double timeout_seconds = 300;  // a compile past this is killed and reported
};

struct CompiledObject {
  std::string path;  // the shared object
  std::string key;   // its cache key (hex)
  // The program's constants segment, stored once per content under the cache's constants/
  // folder (the object names constants by offset, so one object serves any values); "" if none.
  std::string constants_path;
  bool cache_hit = false;
  double compile_seconds = 0;  // 0 on a hit
};

// $MLTUNE_KERNEL_CACHE, else $XDG_CACHE_HOME/mltune/kernels, else ~/.cache/mltune/kernels.
std::string DefaultKernelCacheDir();

// The compiler's identity string that goes into cache keys ("g++ 12.2.0 x86_64-linux-gnu ...").
absl::StatusOr<std::string> CompilerIdentity(const CompilerOptions& options);

absl::StatusOr<CompiledObject> CompileProgram(const Program& program,
                                              const CompilerOptions& options = {});

}  // namespace mltune::backends::cpu
