#include "backends/cpu/runner.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/subprocess.h"
#include "nlohmann/json.hpp"

namespace mltune::backends::cpu {
namespace {

namespace fs = std::filesystem;

std::string BufferSpec(const ir::Shape& shape) {
  return absl::StrCat(std::string(ir::PrimitiveTypeName(shape.element_type())), ":",
                      absl::StrJoin(shape.dimensions(), ","));
}

std::vector<std::string> BaseArgs(const CompiledObject& object, const Program& program,
                                  const MeasureOptions& options) {
  std::vector<std::string> argv = {RunnerPath(), "--lib", object.path};
  for (const ir::Shape& s : program.params) argv.insert(argv.end(), {"--param", BufferSpec(s)});
  for (const ir::Shape& s : program.results) argv.insert(argv.end(), {"--result", BufferSpec(s)});
  argv.insert(argv.end(),
              {"--reps", absl::StrCat(options.min_reps, ",", options.max_reps), "--max-seconds",
               absl::StrCat(options.max_seconds), "--spread", absl::StrCat(options.target_spread),
               "--mem-mb", absl::StrCat(options.memory_limit_mb), "--cpu-seconds",
               absl::StrCat(static_cast<int64_t>(options.timeout_seconds * options.threads) + 5)});
  if (options.kernel_times) argv.insert(argv.end(), {"--kernel-times", "1"});
  if (!object.constants_path.empty())
    argv.insert(argv.end(), {"--constants", object.constants_path});
  return argv;
}

// The runner allocates every parameter, result and the scratch arena up front; a module whose
// buffers exceed its memory limit is refused here, naming the largest buffer, rather than failing
// in the child with a bare out-of-memory.
absl::Status CheckBuffersFit(const Program& program, const MeasureOptions& options) {
  const int64_t limit = options.memory_limit_mb * (int64_t{1} << 20);
  int64_t total = program.scratch_bytes, largest = -1;
  std::string largest_name;
  auto add = [&](const ir::Shape& shape, const char* kind, size_t i) {
    const int64_t bytes = shape.ByteSize();
    total = bytes > std::numeric_limits<int64_t>::max() - total
                ? std::numeric_limits<int64_t>::max()
                : total + bytes;
    if (bytes > largest) {
      largest = bytes;
      largest_name = absl::StrCat(kind, " ", i, " ", shape.ToString(false));
    }
  };
  for (size_t i = 0; i < program.params.size(); ++i) add(program.params[i], "parameter", i);
  for (size_t i = 0; i < program.results.size(); ++i) add(program.results[i], "result", i);
  if (program.constants != nullptr) {
    const int64_t bytes = static_cast<int64_t>(program.constants->size());
    total += bytes;
    if (bytes > largest) {
      largest = bytes;
      largest_name = "the constants segment";
    }
  }
  if (total <= limit) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the module's buffers need ", total, " bytes (largest: ", largest_name, ", ", largest,
      " bytes), over the runner's memory limit of ", options.memory_limit_mb, " MB"));
}

absl::StatusOr<nlohmann::json> RunRunner(const std::vector<std::string>& argv,
                                         const MeasureOptions& options) {
  const std::vector<std::string> env = {absl::StrCat("OMP_NUM_THREADS=", options.threads),
                                        absl::StrCat("OPENBLAS_NUM_THREADS=", options.threads)};
  absl::StatusOr<ChildResult> run = RunChild(argv, options.timeout_seconds, env);
  if (!run.ok()) return run.status();
  if (run->exit_code == 2) {
    return absl::InternalError(absl::StrCat("mltune-cpu-runner usage error: ", run->err));
  }
  if (run->timed_out || run->signal != 0) {
    // The candidate itself misbehaved: the caller scores it invalid.
    return absl::AbortedError(absl::StrCat("candidate ", run->Describe()));
  }
  nlohmann::json j = nlohmann::json::parse(run->out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::AbortedError(absl::StrCat("candidate runner: ", run->Describe(),
                                           ", no result (stderr: ", run->err.substr(0, 500), ")"));
  }
  if (!j.value("ok", false)) {
    return absl::AbortedError(absl::StrCat("candidate runner: ", j.value("error", "failed")));
  }
  return j;
}

Timing TimingOf(const nlohmann::json& j) {
  Timing t;
  t.median_s = j.value("median_s", j.value("first_s", 0.0));
  t.min_s = j.value("min_s", t.median_s);
  t.p25_s = j.value("p25_s", t.median_s);
  t.p75_s = j.value("p75_s", t.median_s);
  t.spread = j.value("spread", 0.0);
  t.samples = j.value("samples", 0);
  t.calls_per_sample = j.value("calls_per_sample", 1);
  if (auto it = j.find("kernel_s"); it != j.end() && it->is_array()) {
    for (const nlohmann::json& s : *it) {
      if (s.is_number()) t.kernel_s.push_back(s.get<double>());
    }
  }
  return t;
}

std::string TempPath(const std::string& what) {
  static std::atomic<int64_t> counter{0};
  return (fs::temp_directory_path() /
          absl::StrCat("mltune-", getpid(), "-", counter.fetch_add(1), "-", what))
      .string();
}

}  // namespace

std::string RunnerPath() {
  if (const char* env = std::getenv("MLTUNE_CPU_RUNNER"); env != nullptr && env[0] != '\0') {
    return env;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path sibling = self.parent_path() / "mltune-cpu-runner";
    if (access(sibling.c_str(), X_OK) == 0) return sibling.string();
  }
  return MLTUNE_CPU_RUNNER_BUILD_PATH;
}

namespace {

std::mutex delegate_mu;
std::shared_ptr<const MeasureDelegate> measure_delegate;

}  // namespace

void SetMeasureDelegate(MeasureDelegate delegate) {
  std::lock_guard<std::mutex> lock(delegate_mu);
  measure_delegate =
      delegate ? std::make_shared<const MeasureDelegate>(std::move(delegate)) : nullptr;
}

absl::StatusOr<Timing> Measure(const CompiledObject& object, const Program& program, uint64_t seed,
                               const MeasureOptions& options) {
  std::shared_ptr<const MeasureDelegate> delegate;
  {
    std::lock_guard<std::mutex> lock(delegate_mu);
    delegate = measure_delegate;
  }
  if (delegate != nullptr) {
    std::optional<absl::StatusOr<Timing>> remote = (*delegate)(program, seed, options);
    if (remote.has_value()) return *std::move(remote);
  }
  if (absl::Status fits = CheckBuffersFit(program, options); !fits.ok()) return fits;
  std::vector<std::string> argv = BaseArgs(object, program, options);
  argv.insert(argv.end(), {"--seed", absl::StrCat(seed)});
  absl::StatusOr<nlohmann::json> j = RunRunner(argv, options);
  if (!j.ok()) return j.status();
  return TimingOf(*j);
}

absl::StatusOr<std::vector<ir::Literal>> Execute(const CompiledObject& object,
                                                 const Program& program,
                                                 const std::vector<ir::Literal>& args,
                                                 const MeasureOptions& options, Timing* timing) {
  if (args.size() != program.params.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the program takes ", program.params.size(), " arguments; got ", args.size()));
  }
  if (absl::Status fits = CheckBuffersFit(program, options); !fits.ok()) return fits;
  const std::string in_path = TempPath("in.bin"), out_path = TempPath("out.bin");
  {
    std::ofstream in(in_path, std::ios::binary);
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i].shape().Compatible(program.params[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", i, " is ", args[i].shape().ToString(false), "; expected ",
                         program.params[i].ToString(false)));
      }
      in.write(reinterpret_cast<const char*>(args[i].untyped_data()), args[i].size_bytes());
    }
    if (!in) return absl::InternalError(absl::StrCat("cannot write ", in_path));
  }
  MeasureOptions run_options = options;
  if (timing == nullptr) run_options.max_reps = 0;
  std::vector<std::string> argv = BaseArgs(object, program, run_options);
  argv.insert(argv.end(), {"--inputs", in_path, "--outputs", out_path});
  absl::StatusOr<nlohmann::json> j = RunRunner(argv, run_options);
  std::error_code ec;
  fs::remove(in_path, ec);
  if (!j.ok()) {
    fs::remove(out_path, ec);
    return j.status();
  }
  std::ifstream out(out_path, std::ios::binary);
  std::vector<ir::Literal> results;
  for (const ir::Shape& s : program.results) {
    absl::StatusOr<ir::Literal> lit = ir::Literal::Create(s);
    if (!lit.ok()) return lit.status();
    out.read(reinterpret_cast<char*>(lit->untyped_data()), lit->size_bytes());
    if (out.gcount() != lit->size_bytes()) {
      fs::remove(out_path, ec);
      return absl::InternalError("the runner wrote fewer result bytes than the program has");
    }
    results.push_back(*std::move(lit));
  }
  fs::remove(out_path, ec);
  if (timing != nullptr) *timing = TimingOf(*j);
  return results;
}

}  // namespace mltune::backends::cpu
