#include "backends/cpu/compiler.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/onednn.h"
#include "backends/cpu/subprocess.h"

namespace mltune::backends::cpu {
namespace {

namespace fs = std::filesystem;

std::string Sha256Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

std::string CompilerCommand(const CompilerOptions& options) {
  if (!options.compiler.empty()) return options.compiler;
  const char* env = std::getenv("MLTUNE_CXX");
  return env != nullptr && env[0] != '\0' ? env : "g++";
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 1);
  }
  return "unknown-cpu";
}

std::vector<std::string> Flags() {
  // -fno-math-errno lets sqrt and friends inline and vectorize, -fno-trapping-math does the same
  // for floor/ceil/round (neither changes a result: errno and FP exception flags are never read);
  // -fopenmp for the parallel pragmas; gnu++20 keeps FMA contraction on.
  std::vector<std::string> flags = {"-std=gnu++20",
                                    "-O3",
                                    "-march=native",
                                    "-fno-math-errno",
                                    "-fno-trapping-math",
                                    "-fopenmp",
                                    "-fPIC",
                                    "-shared",
                                    "-w"};
  return flags;
}

// Writes `data` to `path` unless a file is there already, through a unique temporary name and a
// rename, so concurrent writers and a crash never leave a truncated file under the name.
absl::Status StoreOnce(const std::string& path, const std::string& data) {
  if (access(path.c_str(), R_OK) == 0) return absl::OkStatus();
  static std::atomic<int64_t> counter{0};
  const std::string tmp = absl::StrCat(path, ".", getpid(), ".", counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return absl::InternalError(absl::StrCat("cannot store ", path));
  }
  return absl::OkStatus();
}

}  // namespace

std::string DefaultKernelCacheDir() {
  if (const char* dir = std::getenv("MLTUNE_KERNEL_CACHE"); dir != nullptr && dir[0] != '\0') {
    return dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] != '\0') {
    return absl::StrCat(xdg, "/mltune/kernels");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    return absl::StrCat(home, "/.cache/mltune/kernels");
  }
  return "/tmp/mltune-kernels";
}

absl::StatusOr<std::string> CompilerIdentity(const CompilerOptions& options) {
  static std::mutex mu;
  static std::map<std::string, std::string>* cache = new std::map<std::string, std::string>();
  const std::string cxx = CompilerCommand(options);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(cxx);
  if (it != cache->end()) return it->second;
  absl::StatusOr<ChildResult> version = RunChild({cxx, "-dumpfullversion"}, 30);
  if (!version.ok()) return version.status();
  absl::StatusOr<ChildResult> machine = RunChild({cxx, "-dumpmachine"}, 30);
  if (!machine.ok()) return machine.status();
  if (version->exit_code != 0 || machine->exit_code != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", cxx, " -dumpfullversion' failed: ", version->err));
  }
  auto trim = [](std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  };
  std::string id =
      absl::StrCat(cxx, " ", trim(version->out), " ", trim(machine->out), " ", trim(CpuModel()));
  (*cache)[cxx] = id;
  return id;
}

absl::StatusOr<CompiledObject> CompileProgram(const Program& program,
                                              const CompilerOptions& options) {
  absl::StatusOr<std::string> identity = CompilerIdentity(options);
  if (!identity.ok()) return identity.status();
  const std::vector<std::string> flags = Flags();
  CompiledObject obj;
  obj.key = Sha256Hex(absl::StrCat(*identity, "\n", absl::StrJoin(flags, " "),
                                   program.uses_onednn ? OneDnnLinkArgument() : "", "\n",
                                   program.source));
  const std::string dir = options.cache_dir.empty() ? DefaultKernelCacheDir() : options.cache_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat("kernel cache '", dir, "': ", ec.message()));
  }
  obj.path = absl::StrCat(dir, "/", obj.key, ".so");
  if (program.constants != nullptr && !program.constants->empty()) {
    fs::create_directories(absl::StrCat(dir, "/constants"), ec);
    obj.constants_path = absl::StrCat(dir, "/constants/", Sha256Hex(*program.constants), ".bin");
    if (absl::Status s = StoreOnce(obj.constants_path, *program.constants); !s.ok()) return s;
  }
  if (access(obj.path.c_str(), R_OK) == 0) {
    obj.cache_hit = true;
    return obj;
  }
  // Write and compile under unique names, then rename: concurrent compiles of one key (two
  // daemon jobs) and a compile killed half-way never leave a truncated object under the key.
  const std::string tmp =
      absl::StrCat(obj.path, ".", getpid(), ".", reinterpret_cast<uintptr_t>(&obj));
  const std::string src = absl::StrCat(tmp, ".cc");
  {
    std::ofstream out(src);
    out << program.source;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", src));
  }
  std::vector<std::string> argv = {CompilerCommand(options)};
  for (const std::string& f : flags) argv.push_back(f);
  argv.insert(argv.end(), {"-o", absl::StrCat(tmp, ".so"), src});
  // After the source: Debian links --as-needed, so a library named before its user is dropped.
  if (program.uses_onednn) argv.push_back(OneDnnLinkArgument());
  absl::StatusOr<ChildResult> run = RunChild(argv, options.timeout_seconds);
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    // Keep the source next to the error: a failing compile is a code generator bug.
    const std::string kept = absl::StrCat(dir, "/failed-", obj.key, ".cc");
    fs::rename(src, kept, ec);
    fs::remove(absl::StrCat(tmp, ".so"), ec);
    return absl::InternalError(absl::StrCat("compiling generated code failed (", run->Describe(),
                                            "; source kept at ", kept, "):\n",
                                            run->err.substr(0, 4000)));
  }
  fs::remove(src, ec);
  fs::rename(absl::StrCat(tmp, ".so"), obj.path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot store ", obj.path, ": ", ec.message()));
  obj.compile_seconds = run->seconds;
  return obj;
}

}  // namespace mltune::backends::cpu
