// Lowering of a module's entry computation to CPU kernels: the op graph is split by a fusion plan
// (XLA-style loop and input fusion, costmodels::PlanFusion), each kernel gets its kind, its
// materialized inputs and outputs and its tunable parameters. Buffers are logical row-major
// arrays (layouts are ignored, as in the reference evaluator), so a bitcast is a view.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "ir/module.h"

namespace mltune::backends::cpu {

enum class KernelKind {
  kLoop,          // elementwise-like ops, one loop nest per output shape
  kReduce,        // a reduce with its fused operand expression
  kReduceWindow,  // a reduce-window (pooling) with its fused operand expression
  kDot,           // pack, GEMM, epilogue
  kConvolution,   // im2col pack, GEMM, epilogue
  kRow,           // row fusion (row_fusion.h): minor-dimension reduces and their row consumers
  kScatter,       // a scatter or select-and-scatter: the output set, then updates folded in order
  kWhile,         // a while loop: its condition and body run as programs of their own (`called`)
  kConditional,   // a conditional: the branch chosen runs as a program of its own (`called`)
  kSort,          // a sort of one or more arrays along one dimension, its comparator inlined
  kLibrary,       // a routine over whole buffers: threefry and the LAPACK-style custom-calls
};
const char* KernelKindName(KernelKind kind);

// One tunable parameter of a kernel: its name and the values it may take. The first value is the
// compiler's default.
struct KernelParam {
  std::string name;
  std::vector<int64_t> choices;
};

struct LoweredModule;

struct Kernel {
  int32_t id = 0;
  KernelKind kind = KernelKind::kLoop;
  std::string name;                             // its root op's name
  const ir::Instruction* root = nullptr;        // the heavy op, or the last member
  std::vector<const ir::Instruction*> members;  // topological; node ops and inlined bitcasts
  std::unordered_set<const ir::Instruction*> member_set;
  // Buffer-backed values read (entry parameters, other kernels' outputs), as base instructions
  // (bitcast chains resolved), each once.
  std::vector<const ir::Instruction*> inputs;
  std::vector<const ir::Instruction*> outputs;  // members whose value leaves the kernel
  std::vector<KernelParam> params;
  // Kernels of one tuple-shaped op (while, conditional, sort, library) write one buffer per leaf
  // of its result: `outputs` are then its leaves (each its get-tuple-element) in order. These
  // kernels read `operand_leaves`: each operand's array leaves in order, repeats and constants
  // kept, as base values.
  std::vector<const ir::Instruction*> operand_leaves;
  // while: [condition, body]; conditional: its branches; each lowered as a program of its own.
  std::vector<std::shared_ptr<const LoweredModule>> called;
  // The inputs that are frozen weights (FrozenWeights): their packed copies are made once per
  // parameter epoch, not on every call. Empty in called programs, whose parameters change.
  std::unordered_set<const ir::Instruction*> frozen_inputs;
  bool Contains(const ir::Instruction* i) const { return member_set.count(i) != 0; }
};

// The longest inner loop (a constant trip count) that `unroll` leaves alone. GCC unrolls and
// vectorizes such loops by itself; `#pragma GCC unroll u` with u below the trip count stops that
// (measured: a [2048,20,4] compare ran 75-108 us with unroll 2 against 12-19 us without), and no
// factor beat no pragma on inner loops of 4-64 iterations.
inline constexpr int64_t kShortInnerLoop = 64;

// The fewest bytes a loop kernel writes, or another non-GEMM kernel reads, for `parallel` to be
// offered: 32,768 f32 elements, PyTorch's grain (at::internal::GRAIN_SIZE), below which ATen runs
// elementwise ops and reductions on one thread. Tuning measures with one thread, where `parallel`
// only adds an OpenMP region (0.2-0.3 us). Of the 1,536 non-GEMM kernels below this size that
// the tile store measured both ways, it was more than 5% faster on 12 (all loops) and more than
// 5% slower on 1,428 (1.5x on 1,095): the choice mostly taught the cost model to mistake the
// region for a speed-up.
inline constexpr int64_t kParallelMinBytes = 128 * 1024;

// The least operand bytes for which a dot's or convolution's `parallel` defaults to 1. Those
// split through mt_for, which enters no OpenMP region at one thread, so the default costs
// nothing there and splits the products at two. Loop, reduction and window kernels keep 0: their
// parallel loop is outlined by OpenMP, which at one thread made them up to 1.5x slower (above).
inline constexpr int64_t kParallelDefaultGemmBytes = 1 << 20;

// The fewest bytes a loop kernel must read through a transpose that moves its operand's minor
// dimension for `block=32` to be its default: such a read gathers one element per cache line,
// and once the operand outgrows a core's L2 (1-2 MiB on the machines here) the lines are gone
// before the row's neighbours use them. On the cpu tile store's 39 transposes reading 1 MB or more,
// block=32 ran 1.28x faster than block=0 (geometric mean; over 1.2x on 13, up to 6.4x, and 5-21%
// slower on 3); on the 22 reading 100 KB to 1 MB it ran 0.95x as fast, so there block=0 stays the
// default.
inline constexpr int64_t kBlockTransposeMinBytes = 1'000'000;

// Reduce `r` (a member of `kernel`) folds its trailing reduced dimensions as one flat run when they
// end at the operand's minor dimension (their elements are contiguous) and its operand expression
// indexes every element the same way, so the run's flat position can stand for the minor index:
// a global average pool over NCHW's 7x7 folds 49 elements with vector accumulators instead of 7
// rows of 7. Returns how many dimensions the run merges (1: none merged) and sets `length` to the
// elements it folds (the innermost reduced dimension's when none are merged).
int64_t FlatReducedRun(const Kernel& kernel, const ir::Instruction& r, int64_t* length);

// Reduce-window as rows (order 1) folds a window at most this wide on the minor dimension inside
// the row loop, unrolled (pooling windows); such windows default to rows, as do windows one element
// wide there.
inline constexpr int64_t kInnerWindowMax = 8;

// A kernel configuration: one value (not index) per KernelParam.
using KernelConfig = std::vector<int64_t>;
KernelConfig DefaultConfig(const Kernel& kernel);
// `config` with the values its `impl` makes irrelevant set to their defaults: a oneDNN call
// (impl >= 1) picks its own blocking and threads, so the generated GEMM's micro, mc, kc, nc and
// parallel do not enter its program. Configurations with one canonical form compile to the same
// program; the tuners and `mltune collect` measure each canonical form once. A config of the
// wrong length comes back as it is.
KernelConfig CanonicalConfig(const Kernel& kernel, KernelConfig config);

struct LoweredModule {
  const ir::Module* module = nullptr;
  const ir::Computation* computation = nullptr;  // the entry, or a computation a kernel calls
  costmodels::OpGraph graph;
  costmodels::FusionPlan plan;
  std::vector<Kernel> kernels;
  // The computation's parameters' array leaves, in order (a tuple parameter's leaves are its
  // get-tuple-elements).
  std::vector<const ir::Instruction*> parameters;
  std::vector<const ir::Instruction*> results;  // the root's array leaves, as base values
  // The kernel producing each materialized value (base instructions only).
  std::unordered_map<const ir::Instruction*, int32_t> producer;
};

// Follows bitcasts and get-tuple-element(tuple) to the instruction owning the buffer. A leaf of
// another tuple-shaped value (a while, a tuple parameter) is owned by its get-tuple-element
// (LeafValue).
const ir::Instruction* BaseValue(const ir::Instruction* instr);
// The get-tuple-element standing for leaf `index` of tuple-shaped `value`: its first such user,
// or nullptr where it has none (NormalizeTupleUses gives every leaf one).
const ir::Instruction* LeafValue(const ir::Instruction* value, int64_t index);

// Puts every computation of `module` in the form the lowering reads: each leaf of a tuple-shaped
// value other than a tuple instruction has a get-tuple-element, and such values are used through
// those alone (another use reads a tuple of them). RunCpuPasses ends with it.
void NormalizeTupleUses(ir::Module& module);
// Gives every user of a broadcast, an iota, or a cheap elementwise expression of constants,
// iotas and broadcasts its own copy, as XLA's fusion duplicates such producers: otherwise a shared
// one (CSE merges the erf polynomial's coefficient broadcasts of all twelve ViT layers) is a
// kernel of its own, written out at full size and read back by each consumer (ViT b1: 453 ms
// before, 365 ms after). RunCpuPasses runs it before NormalizeTupleUses.
void DuplicateSharedBroadcasts(ir::Module& module);

// The entry parameters read only as weights: every use, through bitcasts, reshapes, transposes,
// converts, copies, slices and concatenates, is the right-hand operand of a dot or the kernel of a
// convolution (an inference step's weights; a training step's are also updated, so they are not).
// The program takes their values not to change between calls unless told (mltune_params_changed,
// codegen.h), as ONNX Runtime takes initializers and PyTorch a frozen module's parameters, so its
// GEMMs and convolutions pack them once. Empty where MLTUNE_NO_FROZEN_WEIGHTS is set (not 0): every
// call then packs them again, as XLA does.
std::unordered_set<const ir::Instruction*> FrozenWeights(const ir::Computation& entry);
bool FrozenWeightsEnabled();

// OK when the backend can compile the module; otherwise Unimplemented naming the first op (and
// its line) it cannot lower and why.
absl::Status CheckSupported(const ir::Module& module);
// The same for one instruction of the entry.
absl::Status CheckInstructionSupported(const ir::Instruction& instr);

// Lowers the entry with `plan`, a fusion plan over costmodels::BuildOpGraph(module) (nullptr: the
// compiler's default, costmodels::PlanFusion with everything fusible fused).
absl::StatusOr<LoweredModule> Lower(const ir::Module& module,
                                    const costmodels::FusionPlan* plan = nullptr);

}  // namespace mltune::backends::cpu
