#include "backends/gpu/nvrtc_compiler.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#ifdef MLTUNE_HAVE_NVRTC
#include <nvrtc.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/cpu/subprocess.h"
#endif

namespace mltune::backends::gpu {

#ifdef MLTUNE_HAVE_NVRTC
namespace {

namespace fs = std::filesystem;

constexpr double kPtxasTimeoutSeconds = 60;

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

// "sm_90" -> "compute_90" (and sm_90a -> compute_90a); InvalidArgument for anything else, so a
// typo is named here and never reaches NVRTC or ptxas as a flag.
absl::StatusOr<std::string> VirtualArch(absl::string_view arch) {
  absl::string_view rest = arch;
  bool ok = absl::ConsumePrefix(&rest, "sm_");
  if (ok && !rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) {
    rest.remove_suffix(1);
  }
  ok = ok && (rest.size() == 2 || rest.size() == 3) && rest[0] != '0';
  for (char c : rest) ok = ok && absl::ascii_isdigit(static_cast<unsigned char>(c));
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GPU architecture '", arch, "': expected sm_<major><minor>[a|f] such as sm_80 or sm_90a"));
  }
  return absl::StrCat("compute_", arch.substr(3));
}

// The toolkit's include directories (MLTUNE_NVRTC_INCLUDE_PATH, ':'-separated): the CUDA headers
// (cuda_bf16.h, cuda_fp16.h) and, from CUDA 13 on, include/cccl for <cuda/std/...>.
std::vector<std::string> IncludeFlags() {
  std::vector<std::string> flags;
  for (absl::string_view dir : absl::StrSplit(MLTUNE_NVRTC_INCLUDE_PATH, ':', absl::SkipEmpty())) {
    flags.push_back(absl::StrCat("-I", dir));
  }
  return flags;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return text.str();
}

// A name no other thread or process writing into `dir` uses.
std::string UniqueTempName(const std::string& base) {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(base, ".", getpid(), ".", counter.fetch_add(1), ".tmp");
}

std::string TrimLog(std::string log) {
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::string ProgramLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  return TrimLog(std::move(log));
}

struct ProgramDeleter {
  void operator()(nvrtcProgram* program) const {
    nvrtcDestroyProgram(program);
    delete program;
  }
};

// Runs ptxas on `ptx` (written to a temporary file) for `arch` with `flags`.
absl::StatusOr<cpu::ChildResult> RunPtxas(const std::string& ptx, const std::string& arch,
                                          const std::vector<std::string>& flags) {
  if (absl::StatusOr<std::string> check = VirtualArch(arch); !check.ok()) return check.status();
  std::error_code ec;
  const fs::path tmp_dir = fs::temp_directory_path(ec);
  std::string path = absl::StrCat(ec ? "/tmp" : tmp_dir.string(), "/mltune-ptxas-XXXXXX.ptx");
  const int fd = mkstemps(path.data(), 4);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot create ", path));
  close(fd);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << ptx;
    if (!out) {
      fs::remove(path, ec);
      return absl::InternalError(absl::StrCat("cannot write ", path));
    }
  }
  std::vector<std::string> argv = {MLTUNE_PTXAS_PATH, absl::StrCat("-arch=", arch)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-o", "/dev/null", path});
  absl::StatusOr<cpu::ChildResult> run = cpu::RunChild(argv, kPtxasTimeoutSeconds);
  fs::remove(path, ec);
  if (!run.ok()) return run.status();
  if (run->timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("ptxas for ", arch, ": ", run->Describe()));
  }
  if (run->exit_code != 0) {
    return absl::InvalidArgumentError(absl::StrCat("ptxas rejected the PTX for ", arch, " (",
                                                   run->Describe(), "):\n",
                                                   TrimLog(run->err + run->out).substr(0, 4000)));
  }
  return run;
}

// The number just before `suffix` in `line` ("Used 10 registers" with " registers": 10), or -1.
int64_t NumberBefore(absl::string_view line, absl::string_view suffix) {
  const size_t at = line.find(suffix);
  if (at == absl::string_view::npos) return -1;
  size_t begin = at;
  while (begin > 0 && absl::ascii_isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  if (begin == at) return -1;
  int64_t value = 0;
  for (size_t i = begin; i < at; ++i) value = value * 10 + (line[i] - '0');
  return value;
}

}  // namespace
#endif  // MLTUNE_HAVE_NVRTC

std::string DefaultGpuKernelCacheDir() {
  if (const char* dir = std::getenv("MLTUNE_GPU_KERNEL_CACHE"); dir != nullptr && dir[0] != '\0') {
    return dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] != '\0') {
    return absl::StrCat(xdg, "/mltune/gpu-kernels");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    return absl::StrCat(home, "/.cache/mltune/gpu-kernels");
  }
  return "/tmp/mltune-gpu-kernels";
}

#ifdef MLTUNE_HAVE_NVRTC

std::string NvrtcVersion() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "";
  return absl::StrCat(major, ".", minor);
}

absl::StatusOr<PtxModule> CompileToPtx(const std::string& source, const std::string& name,
                                       const NvrtcOptions& options) {
  absl::StatusOr<std::string> virtual_arch = VirtualArch(options.arch);
  if (!virtual_arch.ok()) return virtual_arch.status();
  // No --use_fast_math by default: XLA keeps IEEE division, square roots and denormals.
  std::vector<std::string> flags = {absl::StrCat("--gpu-architecture=", *virtual_arch),
                                    "-default-device", "--std=c++17", "-lineinfo"};
  for (std::string& flag : IncludeFlags()) flags.push_back(std::move(flag));
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());

  PtxModule module;
  module.key = Sha256Hex(absl::StrCat("nvrtc ", NvrtcVersion(), "\n", options.arch, "\n",
                                      absl::StrJoin(flags, "\n"), "\n\n", source));
  const std::string dir =
      options.cache_dir.empty() ? DefaultGpuKernelCacheDir() : options.cache_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("GPU kernel cache '", dir, "': ", ec.message()));
  }
  const std::string path = absl::StrCat(dir, "/", module.key, ".ptx");
  if (absl::StatusOr<std::string> cached = ReadFile(path); cached.ok() && !cached->empty()) {
    module.ptx = *std::move(cached);
    module.cache_hit = true;
    return module;
  }

  std::unique_ptr<nvrtcProgram, ProgramDeleter> program(new nvrtcProgram(nullptr));
  if (nvrtcResult r =
          nvrtcCreateProgram(program.get(), source.c_str(), name.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("nvrtcCreateProgram(", name, "): ", nvrtcGetErrorString(r)));
  }
  std::vector<const char*> argv;
  for (const std::string& flag : flags) argv.push_back(flag.c_str());
  const nvrtcResult compiled =
      nvrtcCompileProgram(*program, static_cast<int>(argv.size()), argv.data());
  module.log = ProgramLog(*program);
  if (compiled != NVRTC_SUCCESS) {
    const std::string message =
        absl::StrCat("NVRTC could not compile ", name, " for ", options.arch, " (",
                     nvrtcGetErrorString(compiled), "):\n", module.log);
    if (compiled == NVRTC_ERROR_COMPILATION || compiled == NVRTC_ERROR_INVALID_OPTION) {
      return absl::InvalidArgumentError(message);
    }
    return absl::InternalError(message);
  }
  size_t size = 0;
  if (nvrtcResult r = nvrtcGetPTXSize(*program, &size); r != NVRTC_SUCCESS) {
    return absl::InternalError(absl::StrCat("nvrtcGetPTXSize: ", nvrtcGetErrorString(r)));
  }
  module.ptx.assign(size, '\0');
  if (nvrtcResult r = nvrtcGetPTX(*program, module.ptx.data()); r != NVRTC_SUCCESS) {
    return absl::InternalError(absl::StrCat("nvrtcGetPTX: ", nvrtcGetErrorString(r)));
  }
  while (!module.ptx.empty() && module.ptx.back() == '\0') module.ptx.pop_back();

  // Write under a unique name, then rename: concurrent compiles of one key and a process killed
  // half-way never leave a truncated file under the key.
  const std::string tmp = UniqueTempName(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << module.ptx;
    if (!out) {
      fs::remove(tmp, ec);
      return absl::InternalError(absl::StrCat("cannot write ", tmp));
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return absl::InternalError(absl::StrCat("cannot store ", path, ": ", ec.message()));
  }
  return module;
}

absl::Status AssemblePtx(const std::string& ptx, const std::string& arch) {
  return RunPtxas(ptx, arch, {}).status();
}

absl::StatusOr<PtxasUsage> PtxasResourceUsage(const std::string& ptx, const std::string& arch,
                                              const std::string& entry) {
  absl::StatusOr<cpu::ChildResult> run = RunPtxas(ptx, arch, {"-v"});
  if (!run.ok()) return run.status();
  // Per kernel: "Compiling entry function 'k' for 'sm_90'", "Function properties for k" and the
  // line after it (stack frame, spills), "Used 10 registers, used 1 barriers, 1024 bytes smem".
  const std::string entry_line = absl::StrCat("Compiling entry function '", entry, "'");
  const std::string properties_line = absl::StrCat("Function properties for ", entry);
  PtxasUsage usage;
  bool in_entry = false, found = false, properties_next = false;
  const std::string text = run->out + "\n" + run->err;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.find("Compiling entry function '") != absl::string_view::npos) {
      in_entry = line.find(entry_line) != absl::string_view::npos;
      found = found || in_entry;
      properties_next = false;
      continue;
    }
    if (!in_entry) continue;
    if (properties_next) {
      usage.stack_bytes = std::max<int64_t>(0, NumberBefore(line, " bytes stack frame"));
      usage.spill_store_bytes = std::max<int64_t>(0, NumberBefore(line, " bytes spill stores"));
      usage.spill_load_bytes = std::max<int64_t>(0, NumberBefore(line, " bytes spill loads"));
      properties_next = false;
      continue;
    }
    if (absl::EndsWith(absl::StripAsciiWhitespace(line), properties_line)) {
      properties_next = true;
      continue;
    }
    if (const int64_t registers = NumberBefore(line, " registers"); registers >= 0) {
      usage.registers = static_cast<int>(registers);
      usage.shared_bytes = std::max<int64_t>(0, NumberBefore(line, " bytes smem"));
    }
  }
  if (!found) {
    return absl::NotFoundError(
        absl::StrCat("ptxas -v reported no entry function '", entry, "' for ", arch));
  }
  return usage;
}

#else  // !MLTUNE_HAVE_NVRTC

namespace {
absl::Status NoToolkit(const char* tool) {
  return absl::UnimplementedError(
      absl::StrCat("built without the CUDA toolkit: ", tool, " is not available"));
}
}  // namespace

std::string NvrtcVersion() { return ""; }

absl::StatusOr<PtxModule> CompileToPtx(const std::string&, const std::string&,
                                       const NvrtcOptions&) {
  return NoToolkit("NVRTC");
}

absl::Status AssemblePtx(const std::string&, const std::string&) { return NoToolkit("ptxas"); }

absl::StatusOr<PtxasUsage> PtxasResourceUsage(const std::string&, const std::string&,
                                              const std::string&) {
  return NoToolkit("ptxas");
}

#endif  // MLTUNE_HAVE_NVRTC

}  // namespace mltune::backends::gpu
