// The opcode vocabulary of the learned cost model. Ids are positions in this list plus one and are
// baked into trained models, so the list is append-only: a new IR opcode goes at the end (the
// features test fails until it is listed), and a removed one keeps its slot.
#include <iterator>
#include <string>
#include <unordered_map>

#include "costmodels/features/kernel_graph.h"

namespace mltune::costmodels::features {
namespace {

// Frozen from ir/opcode.h (121 opcodes) when the vocabulary was introduced; append only.
constexpr const char* kVocabulary[] = {
    "abs",
    "add",
    "add-dependency",
    "after-all",
    "all-gather",
    "all-gather-done",
    "all-gather-start",
    "all-reduce",
    "all-reduce-done",
    "all-reduce-start",
    "all-to-all",
    "and",
    "async-done",
    "async-start",
    "async-update",
    "atan2",
    "batch-norm-grad",
    "batch-norm-inference",
    "batch-norm-training",
    "bitcast",
    "bitcast-convert",
    "broadcast",
    "call",
    "cbrt",
    "ceil",
    "cholesky",
    "clamp",
    "count-leading-zeros",
    "collective-broadcast",
    "collective-permute",
    "collective-permute-done",
    "collective-permute-start",
    "compare",
    "complex",
    "concatenate",
    "conditional",
    "constant",
    "convert",
    "convolution",
    "copy",
    "copy-done",
    "copy-start",
    "cosine",
    "custom-call",
    "divide",
    "domain",
    "dot",
    "dynamic-reshape",
    "dynamic-slice",
    "dynamic-update-slice",
    "erf",
    "exponential",
    "exponential-minus-one",
    "fft",
    "floor",
    "fusion",
    "gather",
    "get-dimension-size",
    "get-tuple-element",
    "imag",
    "infeed",
    "iota",
    "is-finite",
    "log",
    "log-plus-one",
    "logistic",
    "map",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "opt-barrier",
    "or",
    "outfeed",
    "pad",
    "parameter",
    "partition-id",
    "popcnt",
    "power",
    "real",
    "recv",
    "recv-done",
    "reduce",
    "reduce-precision",
    "reduce-scatter",
    "reduce-window",
    "remainder",
    "replica-id",
    "reshape",
    "reverse",
    "rng",
    "rng-bit-generator",
    "rng-get-and-update-state",
    "round-nearest-afz",
    "round-nearest-even",
    "rsqrt",
    "scatter",
    "select",
    "select-and-scatter",
    "send",
    "send-done",
    "set-dimension-size",
    "shift-left",
    "shift-right-arithmetic",
    "shift-right-logical",
    "sign",
    "sine",
    "slice",
    "sort",
    "sqrt",
    "stochastic-convert",
    "subtract",
    "tan",
    "tanh",
    "topk",
    "transpose",
    "triangular-solve",
    "tuple",
    "while",
    "xor",
};

const std::unordered_map<std::string, int32_t>& IdByName() {
  static const auto* ids = [] {
    auto* m = new std::unordered_map<std::string, int32_t>();
    int32_t id = 1;
    for (const char* name : kVocabulary) m->emplace(name, id++);
    return m;
  }();
  return *ids;
}

}  // namespace

int32_t OpcodeId(const std::string& opcode) {
  auto it = IdByName().find(opcode);
  return it == IdByName().end() ? 0 : it->second;
}

int32_t OpcodeVocabularySize() {
  return static_cast<int32_t>(std::size(kVocabulary)) + 1;  // + the unknown id 0
}

}  // namespace mltune::costmodels::features
