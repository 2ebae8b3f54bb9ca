#include "backends/gpu/gpu_program.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/check.h"
#include "backends/cpu/subprocess.h"
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

// Writes the PTX files and the plan; returns the plan's path.
absl::StatusOr<std::string> WritePlan(const GpuModuleProgram& program,
                                      const GpuMeasureOptions& options, TempFiles* files,
                                      json extra) {
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
    const std::string path = files->Add(absl::StrCat("k", i, ".ptx"));
    std::ofstream out(path, std::ios::binary);
    out << program.ptx[i];
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    modules.push_back(path);
  }
  plan["modules"] = modules;
  json sources = json::array();
  for (size_t i = 0; i < program.sources.size(); ++i) {
    const std::string path = files->Add(absl::StrCat("k", i, ".cu"));
    std::ofstream out(path, std::ios::binary);
    out << program.sources[i];
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    sources.push_back(path);
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
  json launches = LaunchesJson(program.launches);
  if (!program.constants.empty()) {
    // The constants' bytes, one after another in one file.
    const std::string path = files->Add("constants.bin");
    std::ofstream out(path, std::ios::binary);
    json constants = json::array();
    for (const GpuModuleProgram::Constant& c : program.constants) {
      out.write(c.bytes.data(), static_cast<std::streamsize>(c.bytes.size()));
      constants.push_back({{"buffer", c.buffer}, {"bytes", c.bytes.size()}});
    }
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    plan["constants_file"] = path;
    plan["constants"] = constants;
  }
  plan["launches"] = launches;
  const std::string path = files->Add("plan.json");
  std::ofstream out(path);
  out << plan.dump();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return path;
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

// Generates and compiles kernel `k` with `config` and appends its launches to `program`, its
// inputs read from (and its outputs and workspaces added as) buffers of `buffer_of`.
absl::Status AppendKernel(const cpu::LoweredModule& lowered, const cpu::Kernel& k,
                          const cpu::KernelConfig& config, const NvrtcOptions& options,
                          std::unordered_map<const ir::Instruction*, int64_t>& buffer_of,
                          GpuModuleProgram& program,
                          std::vector<GpuModuleProgram::Launch>& target) {
  auto add_buffer = [&](int64_t bytes) {
    program.buffer_bytes.push_back(bytes);
    return static_cast<int64_t>(program.buffer_bytes.size()) - 1;
  };
  absl::StatusOr<GpuKernelProgram> kp = GenerateGpuKernel(lowered, k.id, config);
  if (!kp.ok()) return kp.status();
  absl::StatusOr<PtxModule> ptx = CompileToPtx(kp->source, kp->name + ".cu", options);
  if (!ptx.ok()) {
    return absl::Status(ptx.status().code(),
                        absl::StrCat("kernel '", k.name, "' (", cpu::KernelKindName(k.kind),
                                     "): ", ptx.status().message()));
  }
  program.cache_hits += ptx->cache_hit ? 1 : 0;
  const int64_t module = static_cast<int64_t>(program.ptx.size());
  program.ptx.push_back(ptx->ptx);
  program.sources.push_back(kp->source);
  std::vector<int64_t> inputs, outputs;
  for (const ir::Instruction* in : k.inputs) {
    auto it = buffer_of.find(in);
    if (it == buffer_of.end()) it = buffer_of.find(cpu::BaseValue(in));
    if (it == buffer_of.end()) {
      return absl::InternalError(
          absl::StrCat("kernel '", k.name, "' reads '", in->name(), "', which has no buffer"));
    }
    inputs.push_back(it->second);
  }
  for (const ir::Instruction* o : k.outputs) {
    const int64_t b = add_buffer(o->shape().ByteSize());
    buffer_of[o] = b;
    outputs.push_back(b);
  }
  std::vector<int64_t> workspaces;
  for (int64_t bytes : kp->workspaces) workspaces.push_back(add_buffer(bytes));
  for (const GpuLaunch& l : kp->launches) {
    GpuModuleProgram::Launch launch;
    launch.kind = l.kind == GpuLaunch::Kind::kGemm ? GpuModuleProgram::Launch::Kind::kGemm
                                                   : GpuModuleProgram::Launch::Kind::kKernel;
    launch.batch = l.batch;
    launch.m = l.m;
    launch.n = l.n;
    launch.k = l.k;
    launch.algo = l.algo;
    launch.module = module;
    launch.kernel = k.id;
    launch.entry = l.entry;
    for (int d = 0; d < 3; ++d) launch.grid[d] = l.grid[d];
    launch.block = l.block;
    for (const GpuArg& a : l.args) {
      switch (a.kind) {
        case GpuArg::Kind::kInput:
          launch.args.push_back(inputs[static_cast<size_t>(a.index)]);
          break;
        case GpuArg::Kind::kOutput:
          launch.args.push_back(outputs[static_cast<size_t>(a.index)]);
          break;
        case GpuArg::Kind::kWorkspace:
          launch.args.push_back(workspaces[static_cast<size_t>(a.index)]);
          break;
      }
    }
    target.push_back(std::move(launch));
  }
  return absl::OkStatus();
}

// Whether the GPU runs `k`: a kernel it generates, or a while loop whose condition and body it
// runs whole.
bool Supported(const cpu::Kernel& k) {
  if (k.kind == cpu::KernelKind::kWhile || k.kind == cpu::KernelKind::kConditional) {
    for (const auto& called : k.called) {
      for (const cpu::Kernel& inner : called->kernels) {
        if (!Supported(inner)) return false;
      }
    }
    return k.kind == cpu::KernelKind::kConditional ? !k.called.empty() : k.called.size() == 2;
  }
  return CheckGpuSupported(k).ok();
}

absl::Status CheckAllSupported(const cpu::LoweredModule& lowered) {
  std::vector<std::string> unsupported;
  for (const cpu::Kernel& k : lowered.kernels) {
    if (!Supported(k)) {
      unsupported.push_back(absl::StrCat(k.name, " (", cpu::KernelKindName(k.kind), ")"));
    }
  }
  if (unsupported.empty()) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      unsupported.size(), " of ", lowered.kernels.size(),
      " kernels are of kinds the GPU does not generate yet: ",
      absl::StrJoin(unsupported.begin(),
                    unsupported.begin() + std::min<size_t>(unsupported.size(), 8), ", "),
      unsupported.size() > 8 ? ", ..." : ""));
}

// A buffer holding constant `base`'s bytes.
int64_t ConstantBuffer(const ir::Instruction* base, GpuModuleProgram& program) {
  program.buffer_bytes.push_back(base->shape().ByteSize());
  const int64_t b = static_cast<int64_t>(program.buffer_bytes.size()) - 1;
  program.constants.push_back(
      {b, std::string(reinterpret_cast<const char*>(base->literal->untyped_data()),
                      static_cast<size_t>(base->shape().ByteSize()))});
  return b;
}

// The buffer of value `v` (a kernel's output or a parameter), or a new constant buffer.
absl::StatusOr<int64_t> BufferOf(const ir::Instruction* v,
                                 std::unordered_map<const ir::Instruction*, int64_t>& buffer_of,
                                 GpuModuleProgram& program) {
  auto it = buffer_of.find(v);
  if (it == buffer_of.end()) it = buffer_of.find(cpu::BaseValue(v));
  if (it != buffer_of.end()) return it->second;
  const ir::Instruction* base = cpu::BaseValue(v);
  if (base->opcode() == ir::Opcode::kConstant && base->literal.has_value()) {
    const int64_t b = ConstantBuffer(base, program);
    buffer_of[base] = b;
    return b;
  }
  return absl::InternalError(absl::StrCat("'", v->name(), "' has no buffer"));
}

absl::Status AppendComputation(const cpu::LoweredModule& sub,
                               const std::vector<int64_t>& param_buffers,
                               const std::vector<cpu::KernelConfig>& configs,
                               const NvrtcOptions& options, GpuModuleProgram& program,
                               std::vector<GpuModuleProgram::Launch>& target,
                               std::vector<int64_t>* results);

// A while loop: its state in buffers of its own (the kernel's outputs), set from its operand,
// then the condition's launches and, while its predicate holds, the body's and a copy of the
// body's results into the state.
absl::Status AppendWhile(const cpu::Kernel& k, const NvrtcOptions& options,
                         std::unordered_map<const ir::Instruction*, int64_t>& buffer_of,
                         GpuModuleProgram& program, std::vector<GpuModuleProgram::Launch>& target) {
  using Launch = GpuModuleProgram::Launch;
  if (k.outputs.size() != k.operand_leaves.size()) {
    return absl::InternalError(absl::StrCat("while '", k.name, "': ", k.outputs.size(),
                                            " state buffers for ", k.operand_leaves.size(),
                                            " operand leaves"));
  }
  auto add_buffer = [&](int64_t bytes) {
    program.buffer_bytes.push_back(bytes);
    return static_cast<int64_t>(program.buffer_bytes.size()) - 1;
  };
  auto copy = [](int64_t from, int64_t to, int64_t bytes) {
    Launch c;
    c.kind = Launch::Kind::kCopy;
    c.args = {from, to};
    c.bytes = bytes;
    return c;
  };
  std::vector<int64_t> state;
  for (size_t i = 0; i < k.outputs.size(); ++i) {
    const int64_t bytes = k.outputs[i]->shape().ByteSize();
    absl::StatusOr<int64_t> init = BufferOf(k.operand_leaves[i], buffer_of, program);
    if (!init.ok()) return init.status();
    state.push_back(add_buffer(bytes));
    buffer_of[k.outputs[i]] = state.back();
    target.push_back(copy(*init, state.back(), bytes));
  }
  Launch loop;
  loop.kind = Launch::Kind::kWhile;
  loop.kernel = k.id;
  loop.entry = k.name;
  std::vector<int64_t> pred, next;
  if (absl::Status s =
          AppendComputation(*k.called[0], state, {}, options, program, loop.cond, &pred);
      !s.ok()) {
    return s;
  }
  if (pred.size() != 1) {
    return absl::InternalError(
        absl::StrCat("while '", k.name, "': a condition of ", pred.size(), " results"));
  }
  loop.pred = pred[0];
  if (absl::Status s =
          AppendComputation(*k.called[1], state, {}, options, program, loop.body, &next);
      !s.ok()) {
    return s;
  }
  if (next.size() != state.size()) {
    return absl::InternalError(absl::StrCat("while '", k.name, "': a body of ", next.size(),
                                            " results for ", state.size(), " state buffers"));
  }
  // A result that is another leaf's state (the body permutes its parameters) is saved first, so
  // that no copy reads a state buffer already overwritten.
  for (size_t i = 0; i < next.size(); ++i) {
    if (next[i] == state[i]) continue;
    if (std::find(state.begin(), state.end(), next[i]) != state.end()) {
      const int64_t bytes = program.buffer_bytes[static_cast<size_t>(next[i])];
      const int64_t saved = add_buffer(bytes);
      loop.body.push_back(copy(next[i], saved, bytes));
      next[i] = saved;
    }
  }
  for (size_t i = 0; i < next.size(); ++i) {
    if (next[i] != state[i]) {
      loop.body.push_back(
          copy(next[i], state[i], program.buffer_bytes[static_cast<size_t>(state[i])]));
    }
  }
  target.push_back(std::move(loop));
  return absl::OkStatus();
}

// A conditional: each branch's computation compiled over its operand's leaves, its results
// copied into the conditional's outputs; the runner picks the branch from the index it reads back.
absl::Status AppendConditional(const cpu::Kernel& k, const NvrtcOptions& options,
                               std::unordered_map<const ir::Instruction*, int64_t>& buffer_of,
                               GpuModuleProgram& program,
                               std::vector<GpuModuleProgram::Launch>& target) {
  using Launch = GpuModuleProgram::Launch;
  std::vector<int64_t> outputs;
  for (const ir::Instruction* o : k.outputs) {
    program.buffer_bytes.push_back(o->shape().ByteSize());
    outputs.push_back(static_cast<int64_t>(program.buffer_bytes.size()) - 1);
    buffer_of[o] = outputs.back();
  }
  Launch pick;
  pick.kind = Launch::Kind::kConditional;
  pick.kernel = k.id;
  pick.entry = k.name;
  const ir::Instruction* c = k.root;
  pick.pred_index = c->operand(0)->shape().element_type() != ir::PrimitiveType::kPred;
  absl::StatusOr<int64_t> index = BufferOf(k.operand_leaves[0], buffer_of, program);
  if (!index.ok()) return index.status();
  pick.pred = *index;
  size_t at = 1;  // operand_leaves[0] is the index
  for (size_t b = 0; b < k.called.size(); ++b) {
    const ir::Shape& operand = c->operand(static_cast<int64_t>(b) + 1)->shape();
    const size_t leaves = operand.IsTuple() ? static_cast<size_t>(operand.tuple_size()) : 1;
    std::vector<int64_t> params;
    for (size_t l = 0; l < leaves; ++l) {
      if (at >= k.operand_leaves.size()) {
        return absl::InternalError(absl::StrCat("conditional '", k.name, "': too few leaves"));
      }
      absl::StatusOr<int64_t> p = BufferOf(k.operand_leaves[at++], buffer_of, program);
      if (!p.ok()) return p.status();
      params.push_back(*p);
    }
    std::vector<Launch>& branch = pick.branches.emplace_back();
    std::vector<int64_t> results;
    if (absl::Status s =
            AppendComputation(*k.called[b], params, {}, options, program, branch, &results);
        !s.ok()) {
      return s;
    }
    if (results.size() != outputs.size()) {
      return absl::InternalError(absl::StrCat("conditional '", k.name, "': branch ", b, " has ",
                                              results.size(), " results for ", outputs.size(),
                                              " outputs"));
    }
    for (size_t i = 0; i < results.size(); ++i) {
      Launch copy;
      copy.kind = Launch::Kind::kCopy;
      copy.args = {results[i], outputs[i]};
      copy.bytes = program.buffer_bytes[static_cast<size_t>(outputs[i])];
      branch.push_back(std::move(copy));
    }
  }
  target.push_back(std::move(pick));
  return absl::OkStatus();
}

absl::Status AppendComputation(const cpu::LoweredModule& sub,
                               const std::vector<int64_t>& param_buffers,
                               const std::vector<cpu::KernelConfig>& configs,
                               const NvrtcOptions& options, GpuModuleProgram& program,
                               std::vector<GpuModuleProgram::Launch>& target,
                               std::vector<int64_t>* results) {
  if (param_buffers.size() != sub.parameters.size()) {
    return absl::InternalError(absl::StrCat("a computation of ", sub.parameters.size(),
                                            " parameters given ", param_buffers.size()));
  }
  std::unordered_map<const ir::Instruction*, int64_t> buffer_of;
  for (size_t i = 0; i < sub.parameters.size(); ++i)
    buffer_of[sub.parameters[i]] = param_buffers[i];
  for (const cpu::Kernel& k : sub.kernels) {
    const size_t i = static_cast<size_t>(k.id);
    absl::Status s =
        k.kind == cpu::KernelKind::kWhile ? AppendWhile(k, options, buffer_of, program, target)
        : k.kind == cpu::KernelKind::kConditional
            ? AppendConditional(k, options, buffer_of, program, target)
            : AppendKernel(sub, k, i < configs.size() ? configs[i] : cpu::KernelConfig{}, options,
                           buffer_of, program, target);
    if (!s.ok()) return s;
  }
  for (const ir::Instruction* r : sub.results) {
    absl::StatusOr<int64_t> b = BufferOf(r, buffer_of, program);
    if (!b.ok()) return b.status();
    results->push_back(*b);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GpuModuleProgram> CompileGpuModule(const cpu::LoweredModule& lowered,
                                                  const std::vector<cpu::KernelConfig>& configs,
                                                  const NvrtcOptions& options) {
  if (absl::Status s = CheckAllSupported(lowered); !s.ok()) return s;
  GpuModuleProgram program;
  program.arch = options.arch;
  std::unordered_map<const ir::Instruction*, int64_t> buffer_of;
  for (const ir::Instruction* p : lowered.parameters) {
    program.buffer_bytes.push_back(p->shape().ByteSize());
    const int64_t b = static_cast<int64_t>(program.buffer_bytes.size()) - 1;
    buffer_of[p] = b;
    program.params.push_back({b, p->shape()});
  }
  for (const cpu::Kernel& k : lowered.kernels) {
    const size_t i = static_cast<size_t>(k.id);
    const cpu::KernelConfig config = i < configs.size() ? configs[i] : cpu::KernelConfig{};
    absl::Status s =
        k.kind == cpu::KernelKind::kWhile
            ? AppendWhile(k, options, buffer_of, program, program.launches)
        : k.kind == cpu::KernelKind::kConditional
            ? AppendConditional(k, options, buffer_of, program, program.launches)
            : AppendKernel(lowered, k, config, options, buffer_of, program, program.launches);
    if (!s.ok()) return s;
  }
  for (const ir::Instruction* r : lowered.results) {
    GpuModuleProgram::Result result;
    result.shape = r->shape();
    auto it = buffer_of.find(r);
    if (it == buffer_of.end()) it = buffer_of.find(cpu::BaseValue(r));
    if (it != buffer_of.end()) {
      result.buffer = it->second;
    } else if (const ir::Instruction* base = cpu::BaseValue(r);
               base->opcode() == ir::Opcode::kConstant) {
      absl::StatusOr<ir::Literal> lit = ir::Literal::Create(r->shape());
      if (!lit.ok()) return lit.status();
      std::memcpy(lit->untyped_data(), base->literal->untyped_data(),
                  static_cast<size_t>(lit->size_bytes()));
      result.constant = *std::move(lit);
    } else {
      return absl::InternalError(absl::StrCat("result '", r->name(), "' has no buffer"));
    }
    program.results.push_back(std::move(result));
  }
  return program;
}

absl::StatusOr<GpuModuleProgram> CompileGpuKernel(const cpu::LoweredModule& lowered, int32_t kernel,
                                                  const cpu::KernelConfig& config,
                                                  const NvrtcOptions& options) {
  if (kernel < 0 || kernel >= static_cast<int32_t>(lowered.kernels.size())) {
    return absl::InvalidArgumentError(absl::StrCat("no kernel ", kernel));
  }
  const cpu::Kernel& k = lowered.kernels[static_cast<size_t>(kernel)];
  if (absl::Status s = CheckGpuSupported(k); !s.ok()) return s;
  GpuModuleProgram program;
  program.arch = options.arch;
  std::unordered_map<const ir::Instruction*, int64_t> buffer_of;
  for (const ir::Instruction* in : k.inputs) {
    program.buffer_bytes.push_back(in->shape().ByteSize());
    const int64_t b = static_cast<int64_t>(program.buffer_bytes.size()) - 1;
    buffer_of[in] = b;
    program.params.push_back({b, in->shape()});
  }
  if (absl::Status s =
          AppendKernel(lowered, k, config, options, buffer_of, program, program.launches);
      !s.ok()) {
    return s;
  }
  for (const ir::Instruction* o : k.outputs) {
    GpuModuleProgram::Result result;
    result.shape = o->shape();
    result.buffer = buffer_of.at(o);
    program.results.push_back(std::move(result));
  }
  return program;
}

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

absl::StatusOr<GpuTiming> MeasureGpu(const GpuModuleProgram& program, uint64_t seed,
                                     const GpuMeasureOptions& options) {
  TempFiles files;
  absl::StatusOr<std::string> plan = WritePlan(program, options, &files, {{"seed", seed}});
  if (!plan.ok()) return plan.status();
  absl::StatusOr<json> j = RunRunner(*plan, options);
  if (!j.ok()) return j.status();
  return TimingOf(*j);
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
