// After XLA CPU's ConvCanonicalization: NCHW 2-D convolutions (ONNX's, PyTorch's) read and write
// [batch, spatial..., feature] (NHWC), with transposes around them, which reshape-mover and
// algsimp then sink through elementwise ops and cancel between consecutive convolutions. oneDNN's
// kernels run NHWC without reorders on this CPU; an NCHW convolution paid a source and a result
// reorder on every call, 2.5-8% of a ResNet-50 3x3 layer's time.
#include <algorithm>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/hlo_rewrites.h"
#include "ir/hlo_builder.h"
#include "passes/registry.h"

namespace mltune::backends::cpu {
namespace {

using ir::Instruction;
using ir::Opcode;

// Whether batch, feature and spatial dimensions are 0, 1 and 2..k+1 (NCHW).
bool ChannelsFirst(int64_t batch, const std::vector<int64_t>& spatial, int64_t feature) {
  if (batch != 0 || feature != 1) return false;
  for (size_t i = 0; i < spatial.size(); ++i) {
    if (spatial[i] != static_cast<int64_t>(i) + 2) return false;
  }
  return true;
}

// Whether CanonicalizeConvolutions rewrites `conv`: a forward NCHW 2-D convolution.
bool Rewritable(const Instruction& conv) {
  if (conv.opcode() != Opcode::kConvolution || !conv.conv_dnums.has_value() ||
      !conv.shape().IsArray() || conv.operand_count() != 2) {
    return false;
  }
  const ir::ConvolutionDimensionNumbers& dn = *conv.conv_dnums;
  // 2-D only: WaveNet's dilated causal 1-D convolutions ran 1.9x slower as NWC (its module
  // 116 -> 205 ms), where oneDNN's NCW kernels served them well. Forward convolutions of NCHW
  // networks only: a weight gradient's (f01b_i01o->01bf, the batch contracted) runs on the
  // GEMMs, where transposes would only add copies.
  return dn.input_spatial_dimensions.size() == 2 &&
         ChannelsFirst(dn.input_batch_dimension, dn.input_spatial_dimensions,
                       dn.input_feature_dimension) &&
         ChannelsFirst(dn.output_batch_dimension, dn.output_spatial_dimensions,
                       dn.output_feature_dimension);
}

// The permutation to [batch, spatial..., feature] (a transpose's: result dim i = operand dim
// perm[i]).
std::vector<int64_t> ToCanonical(int64_t batch, const std::vector<int64_t>& spatial,
                                 int64_t feature) {
  std::vector<int64_t> perm = {batch};
  perm.insert(perm.end(), spatial.begin(), spatial.end());
  perm.push_back(feature);
  return perm;
}

// reduce-window(transpose(x)) as transpose(reduce-window(x)), its window permuted: a max pool
// between NHWC convolutions would otherwise stay NCHW and keep the transposes around it.
int64_t SinkTransposesBelowReduceWindows(ir::Module& module) {
  int64_t moved = 0;
  for (ir::Computation* comp : module.computations()) {
    for (Instruction* rw : comp->MakePostOrder()) {
      if (rw->opcode() != Opcode::kReduceWindow || rw->operand_count() != 2 ||
          !rw->shape().IsArray() || !rw->window.has_value() ||
          rw->operand(0)->opcode() != Opcode::kTranspose) {
        continue;
      }
      Instruction* transpose = rw->operand(0);
      const std::vector<int64_t>& perm = transpose->dimensions;
      if (perm.size() != rw->window->dims.size()) continue;
      // Result dimension i of the transpose is its operand's dimension perm[i].
      ir::Window window;
      window.dims.resize(perm.size());
      std::vector<int64_t> dims(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) {
        window.dims[static_cast<size_t>(perm[i])] = rw->window->dims[i];
        dims[static_cast<size_t>(perm[i])] = rw->shape().dimensions()[i];
      }
      Instruction* inner =
          ir::CloneInstruction(*rw, *comp, {transpose->operand(0), rw->operand(1)});
      inner->window = window;
      inner->mutable_shape() = ir::Shape(rw->shape().element_type(), dims);
      ir::ReplaceInstruction(rw, ir::MakeTranspose(*comp, inner, perm));
      ++moved;
    }
  }
  return moved;
}

// Where broadcast `b` (of a transpose's result shape) maps its operand under the inverse of
// transpose `perm`; empty where that mapping is not in order.
std::vector<int64_t> BroadcastBeforeTranspose(const Instruction* b,
                                              const std::vector<int64_t>& perm) {
  std::vector<int64_t> mapped;
  for (int64_t d : b->dimensions) mapped.push_back(perm[static_cast<size_t>(d)]);
  if (!std::is_sorted(mapped.begin(), mapped.end())) return {};
  return mapped;
}

// The elementwise ops below transpose `t` computed before it instead, as one region: every op
// whose operands are `t`, ops of the region, transposes like `t`, or broadcasts. Values leaving the
// region are transposed there; algsimp cancels those that meet the next convolution's. Unlike
// reshape-mover, which moves one op at a time and never while the transpose has another user, this
// moves a SiLU (x * logistic(x): the transpose read twice) between NHWC convolutions. Done only
// where every user of `t` joins and no more values leave as copies than transposes are absorbed.
bool SinkTransposeThroughElementwiseRegion(ir::Computation& comp, Instruction* t) {
  const std::vector<int64_t>& perm = t->dimensions;
  const std::vector<int64_t>& after = t->shape().dimensions();
  const std::vector<int64_t>& before = t->operand(0)->shape().dimensions();
  auto like_t = [&](const Instruction* x) {
    return x->opcode() == Opcode::kTranspose && x->dimensions == perm &&
           x->operand(0)->shape().dimensions() == before;
  };
  auto broadcast = [&](const Instruction* x) {
    return x->opcode() == Opcode::kBroadcast &&
           (x->dimensions.empty() || !BroadcastBeforeTranspose(x, perm).empty());
  };
  std::vector<Instruction*> order;
  std::unordered_set<const Instruction*> region;
  for (Instruction* e : comp.MakePostOrder()) {
    if (!ir::IsElementwise(e->opcode()) || e->HasSideEffect() || !e->shape().IsArray() ||
        e->shape().dimensions() != after) {
      continue;
    }
    bool touches = false, fits = true;
    for (const Instruction* op : e->operands()) {
      if (op == t || region.count(op) != 0) {
        touches = true;
      } else if (!like_t(op) && !broadcast(op)) {
        fits = false;
      }
    }
    if (touches && fits) {
      region.insert(e);
      order.push_back(e);
    }
  }
  if (region.empty()) return false;
  for (const Instruction* u : t->users()) {
    if (region.count(u) == 0) return false;
  }
  // Values leaving the region stay copies unless read by the inverse transpose or a reduction.
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = i;
  int64_t copies = 0, absorbed = 1;
  std::unordered_set<const Instruction*> others;
  for (const Instruction* e : order) {
    bool copy = comp.root() == e;
    for (const Instruction* u : e->users()) {
      const bool cancels = u->opcode() == Opcode::kTranspose && u->dimensions == inverse;
      if (region.count(u) == 0 && !cancels && u->opcode() != Opcode::kReduce) copy = true;
    }
    copies += copy;
    for (const Instruction* op : e->operands()) {
      if (op == t || !like_t(op) || !others.insert(op).second) continue;
      absorbed += std::all_of(op->users().begin(), op->users().end(),
                              [&](const Instruction* u) { return region.count(u) != 0; });
    }
  }
  if (copies > absorbed) return false;
  std::unordered_map<const Instruction*, Instruction*> moved;
  for (Instruction* e : order) {
    std::vector<Instruction*> operands;
    for (Instruction* op : e->operands()) {
      if (op == t || like_t(op)) {
        operands.push_back(op->operand(0));
      } else if (auto it = moved.find(op); it != moved.end()) {
        operands.push_back(it->second);
      } else {
        operands.push_back(
            ir::MakeBroadcast(comp, op->operand(0), before, BroadcastBeforeTranspose(op, perm)));
      }
    }
    Instruction* inner = ir::CloneInstruction(*e, comp, operands);
    inner->mutable_shape() = ir::Shape(e->shape().element_type(), before);
    moved[e] = inner;
  }
  for (Instruction* e : order) ir::ReplaceInstruction(e, ir::MakeTranspose(comp, moved[e], perm));
  return true;
}

// SinkTransposeThroughElementwiseRegion on every transpose, until none moves.
int64_t SinkTransposesThroughElementwiseRegions(ir::Module& module) {
  int64_t moved = 0;
  for (ir::Computation* comp : module.computations()) {
    // Each move leaves fewer ops below a transpose; the cap only guards that argument.
    const int64_t cap = static_cast<int64_t>(comp->instructions().size());
    for (bool again = true; again && moved < cap;) {
      again = false;
      for (Instruction* t : comp->MakePostOrder()) {
        if (t->opcode() != Opcode::kTranspose || t->users().empty()) continue;
        if (SinkTransposeThroughElementwiseRegion(*comp, t)) {
          ++moved;
          again = true;
          break;
        }
      }
    }
  }
  return moved;
}

}  // namespace

bool HasChannelsFirstConvolutions(const ir::Module& module) {
  for (const ir::Computation* comp : module.computations()) {
    for (const Instruction* i : comp->instructions()) {
      if (Rewritable(*i)) return true;
    }
  }
  return false;
}

int64_t CanonicalizeConvolutions(ir::Module& module) {
  int64_t rewritten = 0;
  for (ir::Computation* comp : module.computations()) {
    for (Instruction* conv : comp->MakePostOrder()) {
      if (!Rewritable(*conv)) continue;
      const ir::ConvolutionDimensionNumbers dn = *conv->conv_dnums;
      const int64_t k = static_cast<int64_t>(dn.input_spatial_dimensions.size());
      Instruction* input =
          ir::MakeTranspose(*comp, conv->operand(0),
                            ToCanonical(dn.input_batch_dimension, dn.input_spatial_dimensions,
                                        dn.input_feature_dimension));
      const std::vector<int64_t> out_perm = ToCanonical(
          dn.output_batch_dimension, dn.output_spatial_dimensions, dn.output_feature_dimension);
      Instruction* canonical = ir::CloneInstruction(*conv, *comp, {input, conv->operand(1)});
      ir::ConvolutionDimensionNumbers& cdn = *canonical->conv_dnums;
      cdn.input_batch_dimension = cdn.output_batch_dimension = 0;
      cdn.input_feature_dimension = cdn.output_feature_dimension = k + 1;
      for (int64_t i = 0; i < k; ++i) {
        cdn.input_spatial_dimensions[static_cast<size_t>(i)] = i + 1;
        cdn.output_spatial_dimensions[static_cast<size_t>(i)] = i + 1;
      }
      std::vector<int64_t> dims;
      for (int64_t d : out_perm) dims.push_back(conv->shape().dimensions()[static_cast<size_t>(d)]);
      canonical->mutable_shape() = ir::Shape(conv->shape().element_type(), dims);
      // Back to the original order: original dimension d sits at canonical position pos[d].
      std::vector<int64_t> back(out_perm.size());
      for (size_t i = 0; i < out_perm.size(); ++i) back[static_cast<size_t>(out_perm[i])] = i;
      ir::ReplaceInstruction(conv, ir::MakeTranspose(*comp, canonical, back));
      ++rewritten;
    }
  }
  return rewritten;
}

// Transposes that stay copies: those read by anything but reductions (a reduce reads its operand
// through the transpose's index map, as a squeeze-and-excitation block's pool does).
int64_t TransposeCopies(const ir::Module& module) {
  int64_t n = 0;
  for (const ir::Computation* comp : module.computations()) {
    for (const Instruction* i : comp->instructions()) {
      if (i->opcode() != Opcode::kTranspose) continue;
      bool reduced = !i->users().empty();
      for (const Instruction* u : i->users()) reduced &= u->opcode() == Opcode::kReduce;
      n += !reduced;
    }
  }
  return n;
}

absl::StatusOr<bool> CanonicalizeConvolutionLayouts(ir::Module& module,
                                                    const passes::Registry& registry) {
  const int64_t before = TransposeCopies(module);
  if (CanonicalizeConvolutions(module) == 0) return false;
  // A few rounds: each may expose transposes the next one moves (below a pool, then below the
  // residual add after it).
  for (int round = 0; round < 4; ++round) {
    bool changed = SinkTransposesBelowReduceWindows(module) > 0;
    changed |= SinkTransposesThroughElementwiseRegions(module) > 0;
    for (const char* name : {"reshape-mover", "algsimp"}) {
      absl::StatusOr<std::unique_ptr<passes::Pass>> pass = registry.Create(name);
      if (!pass.ok()) return pass.status();
      absl::StatusOr<bool> ran = (*pass)->Run(module);
      if (!ran.ok()) {
        return absl::InternalError(absl::StrCat(name, " failed: ", ran.status().message()));
      }
      changed |= *ran;
    }
    if (!changed) break;
  }
  absl::StatusOr<std::unique_ptr<passes::Pass>> dce = registry.Create("dce");
  if (!dce.ok()) return dce.status();
  if (absl::Status s = (*dce)->Run(module).status(); !s.ok()) return s;
  // Worth it where the transposes cancelled, leaving at most the input's and the output's.
  return TransposeCopies(module) <= before + 2;
}

}  // namespace mltune::backends::cpu
