// Observations of a module for pass ordering: the op count (the default score), a per-opcode
// histogram and an Autophase-style feature vector. docs/search.md defines each and relates the op
// count to XLA Gym's "operation count".
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/module.h"

namespace mltune::opt::pass_order {

// The op count: instructions other than parameters, summed over the computations reachable from
// the entry (each counted once, however often it is called). Dead instructions still count: they
// are in the program until a pass removes them.
int64_t OpCount(const ir::Module& module);

// Op-count instructions per opcode, indexed by static_cast<int>(ir::Opcode); sums to OpCount.
std::vector<int64_t> OpcodeHistogram(const ir::Module& module);

// The feature vector, in the fixed order of GraphFeatureNames() (append-only: new features go at
// the end, so trained models keep their indices).
std::vector<double> GraphFeatures(const ir::Module& module);
const std::vector<std::string>& GraphFeatureNames();
// Index of a feature by name, or -1.
int GraphFeatureIndex(std::string_view name);

// A score to minimise, e.g. a cost model's prediction; the default is the op count.
using ScoreFn = std::function<double(const ir::Module&)>;

struct Observation {
  int64_t op_count = 0;
  double score = 0;  // op count, or the cost model's score when one is set
  std::vector<int64_t> opcode_histogram;
  std::vector<double> features;
  std::string fingerprint;  // ir::Fingerprint
};

// `score_fn` empty: score = op count.
Observation Observe(const ir::Module& module, const ScoreFn& score_fn = nullptr);

}  // namespace mltune::opt::pass_order
