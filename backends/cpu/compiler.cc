#include "backends/cpu/compiler.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <semaphore>
#include <sstream>
#include <thread>

#include "absl/strings/numbers.h"
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
  // -fopenmp for the parallel pragmas (and libgomp at the link); gnu++20 keeps FMA contraction
  // on. Each command adds -shared (one unit, or the link of several) or -c (a unit of several).
  std::vector<std::string> flags = {
      "-std=gnu++20",       "-O3",      "-march=native", "-fno-math-errno",
      "-fno-trapping-math", "-fopenmp", "-fPIC",         "-w"};
  return flags;
}

// A compiler process under the process-wide limit (DefaultCompileJobs).
absl::StatusOr<ChildResult> RunCompiler(const std::vector<std::string>& argv, double timeout) {
  static auto* slots = new std::counting_semaphore<>(DefaultCompileJobs());
  slots->acquire();
  absl::StatusOr<ChildResult> run = RunChild(argv, timeout);
  slots->release();
  return run;
}

// `argv`, one command line per unit, run `jobs` at a time (each under the process-wide limit
// too); results in order.
std::vector<absl::StatusOr<ChildResult>> RunCompilers(
    const std::vector<std::vector<std::string>>& argv, int jobs, double timeout) {
  std::vector<absl::StatusOr<ChildResult>> runs(argv.size(), absl::UnknownError("not run"));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < argv.size(); i = next++) runs[i] = RunCompiler(argv[i], timeout);
  };
  std::vector<std::thread> threads;
  const size_t workers = std::min(argv.size(), static_cast<size_t>(std::max(jobs, 1)));
  for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return runs;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
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

int DefaultCompileJobs() {
  int jobs = 0;
  if (const char* env = std::getenv("MLTUNE_COMPILE_JOBS");
      env != nullptr && absl::SimpleAtoi(env, &jobs) && jobs > 0) {
    return jobs;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

absl::StatusOr<CompiledObject> CompileProgram(const Program& program,
                                              const CompilerOptions& options) {
  absl::StatusOr<std::string> identity = CompilerIdentity(options);
  if (!identity.ok()) return identity.status();
  const std::vector<std::string> flags = Flags();
  const std::string link = program.uses_onednn ? OneDnnLinkArgument() : "";
  const int jobs = options.jobs > 0 ? options.jobs : DefaultCompileJobs();
  const std::vector<std::string> units =
      SplitIntoUnits(program.source, jobs, options.min_unit_bytes, options.max_unit_bytes);
  CompiledObject obj;
  obj.units = static_cast<int>(units.size());
  // Everything compiled: a split program's key names its units apart, so no two splits of
  // different programs hash alike.
  std::string keyed = absl::StrCat(*identity, "\n", absl::StrJoin(flags, " "), link, "\n");
  if (units.size() == 1) {
    keyed += units[0];
  } else {
    for (size_t i = 0; i < units.size(); ++i) {
      absl::StrAppend(&keyed, "\n// unit ", i, " of ", units.size(), ", ", units[i].size(),
                      " bytes\n", units[i]);
    }
  }
  obj.key = Sha256Hex(keyed);
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
  const auto start = std::chrono::steady_clock::now();
  // Write and compile under unique names, then rename: concurrent compiles of one key (two
  // daemon jobs) and a compile killed half-way never leave a truncated object under the key.
  const std::string tmp =
      absl::StrCat(obj.path, ".", getpid(), ".", reinterpret_cast<uintptr_t>(&obj));
  const std::string so = absl::StrCat(tmp, ".so");
  const std::string cxx = CompilerCommand(options);
  // One command per unit: the whole object from one unit (one compiler start-up), else an object
  // file per unit, linked below.
  std::vector<std::string> sources, objects;
  auto discard = [&] {
    for (const std::string& f : sources) fs::remove(f, ec);
    for (const std::string& f : objects) fs::remove(f, ec);
    fs::remove(so, ec);
  };
  std::vector<std::vector<std::string>> commands;
  for (size_t i = 0; i < units.size(); ++i) {
    const bool alone = units.size() == 1;
    sources.push_back(alone ? absl::StrCat(tmp, ".cc") : absl::StrCat(tmp, ".u", i, ".cc"));
    if (absl::Status s = WriteFile(sources.back(), units[i]); !s.ok()) {
      discard();
      return s;
    }
    std::vector<std::string> argv = {cxx};
    argv.insert(argv.end(), flags.begin(), flags.end());
    if (alone) {
      argv.insert(argv.end(), {"-shared", "-o", so, sources.back()});
      // After the source: Debian links --as-needed, so a library named before its user is
      // dropped.
      if (!link.empty()) argv.push_back(link);
    } else {
      objects.push_back(absl::StrCat(tmp, ".u", i, ".o"));
      argv.insert(argv.end(), {"-c", "-o", objects.back(), sources.back()});
    }
    commands.push_back(std::move(argv));
  }
  const std::vector<absl::StatusOr<ChildResult>> runs =
      RunCompilers(commands, jobs, options.timeout_seconds);
  std::string failures;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].ok()) {
      discard();
      return runs[i].status();
    }
    if (runs[i]->exit_code == 0) continue;
    // Keep the source next to the error: a failing compile is a code generator bug.
    const std::string kept = units.size() == 1
                                 ? absl::StrCat(dir, "/failed-", obj.key, ".cc")
                                 : absl::StrCat(dir, "/failed-", obj.key, ".u", i, ".cc");
    fs::rename(sources[i], kept, ec);
    absl::StrAppend(&failures, failures.empty() ? "" : "\n", "(",
                    units.size() == 1 ? "" : absl::StrCat("unit ", i, " of ", units.size(), ": "),
                    runs[i]->Describe(), "; source kept at ", kept, "):\n",
                    runs[i]->err.substr(0, 4000));
  }
  if (!failures.empty()) {
    discard();
    return absl::InternalError(
        absl::StrCat("compiling generated code failed ", failures.substr(0, 12000)));
  }
  if (!objects.empty()) {
    std::vector<std::string> argv = {cxx};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-shared", "-o", so});
    argv.insert(argv.end(), objects.begin(), objects.end());
    if (!link.empty()) argv.push_back(link);  // after the objects, as above
    absl::StatusOr<ChildResult> run = RunCompiler(argv, options.timeout_seconds);
    if (!run.ok() || run->exit_code != 0) {
      discard();
      if (!run.ok()) return run.status();
      // The whole program compiles alone: kept as one file, with the linker's complaint.
      const std::string kept = absl::StrCat(dir, "/failed-", obj.key, ".cc");
      if (absl::Status s = WriteFile(kept, program.source); !s.ok()) return s;
      return absl::InternalError(absl::StrCat("linking generated code failed (", run->Describe(),
                                              "; source kept at ", kept, "):\n",
                                              run->err.substr(0, 4000)));
    }
  }
  for (const std::string& f : sources) fs::remove(f, ec);
  for (const std::string& f : objects) fs::remove(f, ec);
  fs::rename(so, obj.path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot store ", obj.path, ": ", ec.message()));
  obj.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return obj;
}

}  // namespace mltune::backends::cpu
