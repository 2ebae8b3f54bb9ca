// Building a GpuModuleProgram: each kernel of the lowered module generated, compiled with NVRTC
// and appended as launches over buffers; while loops and conditionals as nested launch lists
// that the runner drives from the host.
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/gpu/gpu_codegen.h"
#include "backends/gpu/gpu_program.h"

namespace mltune::backends::gpu {
namespace {

// A new device buffer of `bytes`; its index.
int64_t AddBuffer(GpuModuleProgram& program, int64_t bytes) {
  program.buffer_bytes.push_back(bytes);
  return static_cast<int64_t>(program.buffer_bytes.size()) - 1;
}

// A buffer for parameter leaf `p` of the program, recorded in `buffer_of`.
void AddParameter(const ir::Instruction* p, GpuModuleProgram& program,
                  std::unordered_map<const ir::Instruction*, int64_t>& buffer_of) {
  const int64_t b = AddBuffer(program, p->shape().ByteSize());
  buffer_of[p] = b;
  program.params.push_back({b, p->shape()});
}

// Generates and compiles kernel `k` with `config` and appends its launches to `program`, its
// inputs read from (and its outputs and workspaces added as) buffers of `buffer_of`.
absl::Status AppendKernel(const cpu::LoweredModule& lowered, const cpu::Kernel& k,
                          const cpu::KernelConfig& config, const NvrtcOptions& options,
                          std::unordered_map<const ir::Instruction*, int64_t>& buffer_of,
                          GpuModuleProgram& program,
                          std::vector<GpuModuleProgram::Launch>& target) {
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
    const int64_t b = AddBuffer(program, o->shape().ByteSize());
    buffer_of[o] = b;
    outputs.push_back(b);
  }
  std::vector<int64_t> workspaces;
  for (int64_t bytes : kp->workspaces) workspaces.push_back(AddBuffer(program, bytes));
  for (const GpuLaunch& l : kp->launches) {
    GpuModuleProgram::Launch launch;
    switch (l.kind) {
      case GpuLaunch::Kind::kKernel:
        launch.kind = GpuModuleProgram::Launch::Kind::kKernel;
        break;
      case GpuLaunch::Kind::kGemm:
        launch.kind = GpuModuleProgram::Launch::Kind::kGemm;
        break;
      case GpuLaunch::Kind::kConv:
        launch.kind = GpuModuleProgram::Launch::Kind::kConv;
        break;
    }
    launch.conv = l.conv;
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
  const int64_t b = AddBuffer(program, base->shape().ByteSize());
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
    state.push_back(AddBuffer(program, bytes));
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
      const int64_t saved = AddBuffer(program, bytes);
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
    outputs.push_back(AddBuffer(program, o->shape().ByteSize()));
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
  for (const ir::Instruction* p : lowered.parameters) AddParameter(p, program, buffer_of);
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
  for (const ir::Instruction* in : k.inputs) AddParameter(in, program, buffer_of);
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

}  // namespace mltune::backends::gpu
