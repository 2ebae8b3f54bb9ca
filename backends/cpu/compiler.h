// Compiles generated programs with the system C++ compiler (-O3 -march=native) into shared
// objects, kept in a disk cache keyed by the SHA-256 of the sources, the flags and the compiler's
// identity (version, target, this CPU's model), so an unchanged kernel is compiled once per
// machine and compiler. A large program is split into translation units (units.h) compiled in
// parallel and linked into the one object. Constants segments are kept beside them, keyed by
// their content.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "backends/cpu/codegen.h"
#include "backends/cpu/units.h"

namespace mltune::backends::cpu {

struct CompilerOptions {
  std::string cache_dir;         // "" = DefaultKernelCacheDir()
  std::string compiler;          // "" = $MLTUNE_CXX, else g++
  double timeout_seconds = 300;  // a compile past this is killed and reported
  // Compilers at once for this program, which is split into at least as many translation units
  // where large enough (units.h); 0 = DefaultCompileJobs().
  int jobs = 0;
  // The least and most kernel text of a unit (units.h); tests split small programs with lower
  // ones.
  size_t min_unit_bytes = kMinUnitBytes;
  size_t max_unit_bytes = kMaxUnitBytes;
};

struct CompiledObject {
  std::string path;  // the shared object
  std::string key;   // its cache key (hex)
  // The program's constants segment, stored once per content under the cache's constants/
  // folder (the object names constants by offset, so one object serves any values); "" if none.
  std::string constants_path;
  bool cache_hit = false;
  double compile_seconds = 0;  // 0 on a hit
  int units = 1;               // translation units the program compiles as (units.h)
};

// $MLTUNE_COMPILE_JOBS, else the cores: the default `jobs`, and how many compiler processes this
// process runs at once, whatever the number of programs being compiled (a daemon's worker threads
// each compiling a split program would start threads x units).
int DefaultCompileJobs();

// $MLTUNE_KERNEL_CACHE, else $XDG_CACHE_HOME/mltune/kernels, else ~/.cache/mltune/kernels.
std::string DefaultKernelCacheDir();

// The compiler's identity string that goes into cache keys ("g++ 12.2.0 x86_64-linux-gnu ...").
absl::StatusOr<std::string> CompilerIdentity(const CompilerOptions& options);

absl::StatusOr<CompiledObject> CompileProgram(const Program& program,
                                              const CompilerOptions& options = {});

}  // namespace mltune::backends::cpu
