#include "backends/gpu/gpu_program.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/check.h"
#include "backends/cpu/subprocess.h"
#include "backends/gpu/device.h"
#include "backends/gpu/gpu_codegen.h"
#include "ir/evaluator/evaluator.h"
#include "nlohmann/json.hpp"

namespace mltune::backends::gpu {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string TempPath(const std::string& what) {
  static std::atomic<int64_t> counter{0};
  return (fs::temp_directory_path() /
          absl::StrCat("mltune-gpu-", getpid(), "-", counter.fetch_add(1), "-", what))
      .string();
}

// Removes the files it names when it goes out of scope.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    std::error_code ec;
    for (const std::string& p : paths) fs::remove(p, ec);
  }
  std::string Add(const std::string& what) {
    paths.push_back(TempPath(what));
    return paths.back();
  }
};

GpuTiming TimingOf(const json& j) {
  GpuTiming t;
  t.median_s = j.value("median_s", 0.0);
  t.min_s = j.value("min_s", t.median_s);
  t.p25_s = j.value("p25_s", t.median_s);
  t.p75_s = j.value("p75_s", t.median_s);
  t.spread = j.value("spread", 0.0);
  t.samples = j.value("samples", 0);
  t.device = j.value("device", "");
  t.graph = j.value("graph", "off");
  if (auto it = j.find("launch_s"); it != j.end() && it->is_array()) {
    for (const json& s : *it) {
      if (s.is_number()) t.launch_s.push_back(s.get<double>());
    }
  }
  return t;
}

json LaunchesJson(const std::vector<GpuModuleProgram::Launch>& list) {
  using Kind = GpuModuleProgram::Launch::Kind;
  json launches = json::array();
  for (const GpuModuleProgram::Launch& l : list) {
    switch (l.kind) {
      case Kind::kGemm:
        launches.push_back({{"kind", "gemm"},
                            {"batch", l.batch},
                            {"m", l.m},
                            {"n", l.n},
                            {"k", l.k},
                            {"algo", l.algo},
                            {"args", l.args}});
        break;
      case Kind::kConv:
        launches.push_back({{"kind", "conv"},
                            {"nhwc", l.conv.nhwc},
                            {"groups", l.conv.groups},
                            {"x", l.conv.x},
                            {"w", l.conv.w},
                            {"y", l.conv.y},
                            {"pad", l.conv.pad},
                            {"stride", l.conv.stride},
                            {"dilation", l.conv.dilation},
                            {"algo", l.algo},
                            {"args", l.args}});
        break;
      case Kind::kCopy:
        launches.push_back({{"kind", "copy"}, {"args", l.args}, {"bytes", l.bytes}});
        break;
      case Kind::kWhile:
        launches.push_back({{"kind", "while"},
                            {"cond", LaunchesJson(l.cond)},
                            {"pred", l.pred},
                            {"body", LaunchesJson(l.body)}});
        break;
      case Kind::kConditional: {
        json branches = json::array();
        for (const std::vector<GpuModuleProgram::Launch>& b : l.branches) {
          branches.push_back(LaunchesJson(b));
        }
        launches.push_back({{"kind", "conditional"},
                            {"pred", l.pred},
                            {"index", l.pred_index},
                            {"branches", branches}});
        break;
      }
      case Kind::kKernel:
        launches.push_back({{"module", l.module},
                            {"entry", l.entry},
                            {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
                            {"block", l.block},
                            {"args", l.args}});
        break;
    }
  }
  return launches;
}

// The plan names its files relative to its folder; WriteBundle makes them absolute.
GpuPlanBundle MakeBundle(const GpuModuleProgram& program, const GpuMeasureOptions& options,
                         json extra) {
  GpuPlanBundle bundle;
  json plan = std::move(extra);
  plan["device"] = options.device;
  plan["min_reps"] = options.min_reps;
  plan["max_reps"] = options.max_reps;
  plan["max_seconds"] = options.max_seconds;
  plan["spread"] = options.target_spread;
  plan["flush_l2"] = options.flush_l2;
  plan["graph"] = options.graph;
  plan["launch_times"] = options.launch_times;
  plan["device_memory_mb"] = options.device_memory_mb;
  plan["cpu_seconds"] = static_cast<int64_t>(options.timeout_seconds) + 5;
  json modules = json::array();
  for (size_t i = 0; i < program.ptx.size(); ++i) {
    const std::string name = absl::StrCat("k", i, ".ptx");
    bundle.files[name] = program.ptx[i];
    modules.push_back(name);
  }
  plan["modules"] = modules;
  json sources = json::array();
  for (size_t i = 0; i < program.sources.size(); ++i) {
    const std::string name = absl::StrCat("k", i, ".cu");
    bundle.files[name] = program.sources[i];
    sources.push_back(name);
  }
  plan["sources"] = sources;
  plan["buffers"] = program.buffer_bytes;
  json params = json::array();
  for (const GpuModuleProgram::Param& p : program.params) {
    params.push_back({{"buffer", p.buffer},
                      {"type", std::string(ir::PrimitiveTypeName(p.shape.element_type()))},
                      {"elements", p.shape.ElementCount()}});
  }
  plan["params"] = params;
  json results = json::array();
  for (const GpuModuleProgram::Result& r : program.results) {
    if (r.buffer >= 0) results.push_back({{"buffer", r.buffer}, {"bytes", r.shape.ByteSize()}});
  }
  plan["results"] = results;
  if (!program.constants.empty()) {
    // The constants' bytes, one after another in one file.
    std::string& bytes = bundle.files["constants.bin"];
    json constants = json::array();
    for (const GpuModuleProgram::Constant& c : program.constants) {
      bytes += c.bytes;
      constants.push_back({{"buffer", c.buffer}, {"bytes", c.bytes.size()}});
    }
    plan["constants_file"] = "constants.bin";
    plan["constants"] = constants;
  }
  plan["launches"] = LaunchesJson(program.launches);
  bundle.plan_json = plan.dump();
  return bundle;
}

// Writes the bundle's files and its plan, with the file names made absolute; returns the plan's
// path. InvalidArgument for a plan naming a file the bundle does not hold (a remote one).
absl::StatusOr<std::string> WriteBundle(const GpuPlanBundle& bundle, TempFiles* files) {
  json plan = json::parse(bundle.plan_json, nullptr, false);
  if (!plan.is_object()) return absl::InvalidArgumentError("GPU plan: not a JSON object");
  auto place = [&](json& name) -> absl::Status {
    if (!name.is_string()) return absl::InvalidArgumentError("GPU plan: a file name is no string");
    auto it = bundle.files.find(name.get<std::string>());
    if (it == bundle.files.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU plan: file '", name.get<std::string>(), "' is not in the bundle"));
    }
    const std::string path = files->Add(it->first);
    std::ofstream out(path, std::ios::binary);
    out << it->second;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    name = path;
    return absl::OkStatus();
  };
  for (const char* list : {"modules", "sources"}) {
    if (!plan.contains(list) || !plan[list].is_array()) continue;
    for (json& name : plan[list]) {
      if (absl::Status s = place(name); !s.ok()) return s;
    }
  }
  if (plan.contains("constants_file")) {
    if (absl::Status s = place(plan["constants_file"]); !s.ok()) return s;
  }
  const std::string path = files->Add("plan.json");
  std::ofstream out(path);
  out << plan.dump();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return path;
}

// Writes the PTX files and the plan; returns the plan's path.
absl::StatusOr<std::string> WritePlan(const GpuModuleProgram& program,
                                      const GpuMeasureOptions& options, TempFiles* files,
                                      json extra) {
  return WriteBundle(MakeBundle(program, options, std::move(extra)), files);
}

absl::StatusOr<json> RunRunner(const std::string& plan, const GpuMeasureOptions& options) {
  const std::string runner = options.runner.empty() ? GpuRunnerPath() : options.runner;
  if (runner.empty()) {
    return absl::UnimplementedError("built without the CUDA toolkit: no mltune-gpu-runner");
  }
  absl::StatusOr<cpu::ChildResult> run = cpu::RunChild({runner, plan}, options.timeout_seconds);
  if (!run.ok()) return run.status();
  if (run->exit_code == 2) {
    return absl::InternalError(absl::StrCat("mltune-gpu-runner usage error: ", run->err));
  }
  if (run->timed_out || run->signal != 0) {
    return absl::AbortedError(absl::StrCat("candidate ", run->Describe()));
  }
  json j = json::parse(run->out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::AbortedError(absl::StrCat("gpu runner: ", run->Describe(),
                                           ", no result (stderr: ", run->err.substr(0, 500), ")"));
  }
  if (!j.value("ok", false)) {
    const std::string error = j.value("error", "failed");
    // No driver or no device is the machine's state, not the candidate's fault.
    if (error.rfind("no CUDA driver", 0) == 0 || error.rfind("cuInit", 0) == 0) {
      return absl::UnavailableError(absl::StrCat("gpu runner: ", error));
    }
    return absl::AbortedError(absl::StrCat("gpu runner: ", error));
  }
  return j;
}

}  // namespace

namespace {

std::string ChildPath(const char* env_name, const char* file, const char* build_path) {
  if (const char* env = std::getenv(env_name); env != nullptr && env[0] != '\0') return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path sibling = self.parent_path() / file;
    if (access(sibling.c_str(), X_OK) == 0) return sibling.string();
  }
  return build_path;
}

}  // namespace

std::string GpuRunnerPath() {
  return ChildPath("MLTUNE_GPU_RUNNER", "mltune-gpu-runner", MLTUNE_GPU_RUNNER_BUILD_PATH);
}

std::string GpuEmulatorPath() {
  return ChildPath("MLTUNE_GPU_EMULATOR", "mltune-gpu-emulator", MLTUNE_GPU_EMULATOR_BUILD_PATH);
}

namespace {

std::mutex delegate_mu;
std::shared_ptr<const GpuMeasureDelegate> measure_delegate;

}  // namespace

void SetGpuMeasureDelegate(GpuMeasureDelegate delegate) {
  std::lock_guard<std::mutex> lock(delegate_mu);
  measure_delegate =
      delegate ? std::make_shared<const GpuMeasureDelegate>(std::move(delegate)) : nullptr;
}

GpuPlanBundle BundleForMeasure(const GpuModuleProgram& program, uint64_t seed,
                               const GpuMeasureOptions& options) {
  return MakeBundle(program, options, {{"seed", seed}});
}

absl::StatusOr<GpuTiming> MeasureGpuBundle(const GpuPlanBundle& bundle,
                                           const GpuMeasureOptions& options) {
  TempFiles files;
  absl::StatusOr<std::string> plan = WriteBundle(bundle, &files);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<json> j = RunRunner(*plan, options);
  if (!j.ok()) return j.status();
  return TimingOf(*j);
}

absl::StatusOr<GpuTiming> MeasureGpu(const GpuModuleProgram& program, uint64_t seed,
                                     const GpuMeasureOptions& options) {
  const GpuPlanBundle bundle = BundleForMeasure(program, seed, options);
  std::shared_ptr<const GpuMeasureDelegate> delegate;
  {
    std::lock_guard<std::mutex> lock(delegate_mu);
    delegate = measure_delegate;
  }
  // A runner named in the options (the emulator, in tests) always runs here.
  if (delegate != nullptr && options.runner.empty() && !AttachedDevice().ok()) {
    std::optional<absl::StatusOr<GpuTiming>> remote = (*delegate)(bundle, options);
    if (remote.has_value()) return *std::move(remote);
  }
  return MeasureGpuBundle(bundle, options);
}

absl::StatusOr<std::vector<ir::Literal>> ExecuteGpu(const GpuModuleProgram& program,
                                                    const std::vector<ir::Literal>& args,
                                                    const GpuMeasureOptions& options,
                                                    GpuTiming* timing) {
  if (args.size() != program.params.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the program takes ", program.params.size(), " arguments; got ", args.size()));
  }
  TempFiles files;
  const std::string in_path = files.Add("in.bin"), out_path = files.Add("out.bin");
  {
    std::ofstream in(in_path, std::ios::binary);
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i].shape().Compatible(program.params[i].shape)) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", i, " is ", args[i].shape().ToString(false), "; expected ",
                         program.params[i].shape.ToString(false)));
      }
      in.write(reinterpret_cast<const char*>(args[i].untyped_data()), args[i].size_bytes());
    }
    if (!in) return absl::InternalError(absl::StrCat("cannot write ", in_path));
  }
  GpuMeasureOptions run_options = options;
  if (timing == nullptr) run_options.max_reps = 0;
  absl::StatusOr<std::string> plan =
      WritePlan(program, run_options, &files, {{"inputs", in_path}, {"outputs", out_path}});
  if (!plan.ok()) return plan.status();
  absl::StatusOr<json> j = RunRunner(*plan, run_options);
  if (!j.ok()) return j.status();
  std::ifstream out(out_path, std::ios::binary);
  std::vector<ir::Literal> results;
  for (const GpuModuleProgram::Result& r : program.results) {
    if (r.constant.has_value()) {
      results.push_back(*r.constant);
      continue;
    }
    absl::StatusOr<ir::Literal> lit = ir::Literal::Create(r.shape);
    if (!lit.ok()) return lit.status();
    out.read(reinterpret_cast<char*>(lit->untyped_data()), lit->size_bytes());
    if (out.gcount() != lit->size_bytes()) {
      return absl::InternalError("the gpu runner wrote fewer result bytes than the program has");
    }
    results.push_back(*std::move(lit));
  }
  if (timing != nullptr) *timing = TimingOf(*j);
  return results;
}

absl::Status CheckGpuAgainstEvaluator(const ir::Module& module, const GpuModuleProgram& program,
                                      uint64_t seed, const GpuMeasureOptions& options,
                                      GpuTiming* timing, int64_t* ill_conditioned) {
  if (ill_conditioned != nullptr) *ill_conditioned = 0;
  absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(module, seed);
  if (!args.ok()) return args.status();
  absl::StatusOr<ir::Literal> expected = ir::Evaluate(module, *args);
  if (!expected.ok()) return expected.status();
  std::vector<ir::Literal> leaves;
  for (const ir::Literal& a : *args) {
    for (ir::Literal& leaf : cpu::FlattenLeaves(a)) leaves.push_back(std::move(leaf));
  }
  absl::StatusOr<std::vector<ir::Literal>> actual = ExecuteGpu(program, leaves, options, timing);
  if (!actual.ok()) return actual.status();
  return cpu::CompareWithRoundingSpread(module, *args, cpu::FlattenLeaves(*expected), *actual,
                                        cpu::Tolerance{}, ill_conditioned);
}

}  // namespace mltune::backends::gpu
