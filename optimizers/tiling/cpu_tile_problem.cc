#include "optimizers/tiling/cpu_tile_problem.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <regex>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/codegen.h"

namespace mltune::opt::tiling {

backends::cpu::MeasureOptions KernelTuningMeasureOptions() {
  backends::cpu::MeasureOptions m;
  m.max_seconds = 0.05;
  m.min_reps = 5;
  return m;
}

backends::cpu::MeasureOptions ModuleTuningMeasureOptions() {
  backends::cpu::MeasureOptions m;
  m.max_seconds = 0.2;
  m.min_reps = 5;
  return m;
}

absl::StatusOr<std::string> KernelProgramKey(const backends::cpu::LoweredModule& module,
                                             const backends::cpu::Kernel& kernel) {
  absl::StatusOr<backends::cpu::Program> program = backends::cpu::GenerateKernel(module, kernel.id);
  if (!program.ok()) return program.status();
  const std::regex names(absl::StrCat("// (@mltune-unit )?kernel [^\n]*|\\bk", kernel.id,
                                      "(?=[(_])|red_k", kernel.id, "_"));
  std::string key = std::regex_replace(program->source, names, "");
  for (const backends::cpu::KernelParam& p : kernel.params) {
    absl::StrAppend(&key, "|", p.name, ":", absl::StrJoin(p.choices, ","));
  }
  return key;
}

CpuTileProblem::CpuTileProblem(const backends::cpu::LoweredModule& module, MeasureFn measure,
                               KeyFn key_of)
    : module_(module), measure_(std::move(measure)) {
  // Kernels that compile to one program (a model's repeated blocks) are tuned as one: the first
  // stands for the others, which take its configuration and its time.
  std::map<std::string, int32_t> first;
  for (const backends::cpu::Kernel& k : module_.kernels) {
    representative_.push_back(k.id);
    if (k.params.empty()) continue;
    absl::StatusOr<std::string> key = key_of(module_, k);
    if (!key.ok()) continue;
    representative_.back() = first.emplace(*key, k.id).first->second;
  }
  copies_.assign(module_.kernels.size(), 0);
  for (int32_t r : representative_) ++copies_[static_cast<size_t>(r)];
  for (const backends::cpu::Kernel& k : module_.kernels) {
    if (k.params.empty() || representative_[static_cast<size_t>(k.id)] != k.id) continue;
    parts_.emplace_back();
    part_kernel_.push_back(k.id);
    for (size_t p = 0; p < k.params.size(); ++p) {
      parts_.back().push_back(static_cast<int64_t>(slots_.size()));
      slots_.push_back({k.id, p});
      space_.choices.push_back(static_cast<int32_t>(k.params[p].choices.size()));
    }
  }
  space_.max_length = static_cast<int64_t>(slots_.size());
  space_.fixed_length = true;
  if (space_.choices.empty()) space_.choices = {1};
  (void)AddSeed(DefaultCandidate());
}

std::string CpuTileProblem::ActionName(int64_t position, Action action) const {
  const Slot& s = slots_[static_cast<size_t>(position)];
  const backends::cpu::KernelParam& p =
      module_.kernels[static_cast<size_t>(s.kernel)].params[s.param];
  return absl::StrCat(module_.kernels[static_cast<size_t>(s.kernel)].name, ":", p.name, "=",
                      p.choices[static_cast<size_t>(action)]);
}

std::vector<backends::cpu::KernelConfig> CpuTileProblem::Decode(const Candidate& candidate) const {
  std::vector<backends::cpu::KernelConfig> configs;
  for (const backends::cpu::Kernel& k : module_.kernels) configs.push_back(DefaultConfig(k));
  for (size_t i = 0; i < slots_.size() && i < candidate.size(); ++i) {
    const Slot& s = slots_[i];
    const std::vector<int64_t>& choices =
        module_.kernels[static_cast<size_t>(s.kernel)].params[s.param].choices;
    configs[static_cast<size_t>(s.kernel)][s.param] = choices[static_cast<size_t>(candidate[i])];
  }
  for (size_t k = 0; k < configs.size(); ++k) {
    configs[k] = configs[static_cast<size_t>(representative_[k])];
  }
  for (size_t k = 0; k < configs.size(); ++k) {
    configs[k] = backends::cpu::CanonicalConfig(module_.kernels[k], std::move(configs[k]));
  }
  return configs;
}

Candidate CpuTileProblem::WithDefaultKernels(Candidate candidate,
                                             const std::vector<int32_t>& kernels) const {
  for (size_t i = 0; i < slots_.size() && i < candidate.size(); ++i) {
    if (std::find(kernels.begin(), kernels.end(), slots_[i].kernel) != kernels.end()) {
      candidate[i] = 0;
    }
  }
  return candidate;
}

std::vector<std::vector<int64_t>> CpuTileProblem::Parts() const {
  // The largest share of the module's time (a kernel's seconds under its defaults, once
  // measured, times its identical copies) first: a search cut short by its budget has then spent
  // it where the time is.
  const std::vector<backends::cpu::KernelConfig> defaults = Decode(DefaultCandidate());
  std::vector<double> seconds(parts_.size(), 0);
  for (size_t p = 0; p < parts_.size(); ++p) {
    const size_t k = static_cast<size_t>(part_kernel_[p]);
    auto it = cache_.find({part_kernel_[p], defaults[k]});
    if (it != cache_.end() && std::isfinite(it->second)) seconds[p] = it->second * copies_[k];
  }
  std::vector<size_t> order(parts_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return seconds[a] > seconds[b]; });
  std::vector<std::vector<int64_t>> parts;
  listed_kernel_.clear();
  for (size_t p : order) {
    parts.push_back(parts_[p]);
    listed_kernel_.push_back(part_kernel_[p]);
  }
  return parts;
}

absl::StatusOr<std::vector<double>> CpuTileProblem::RankSettings(
    int64_t part, const std::vector<Candidate>& settings) {
  if (!rank_) {
    return absl::FailedPreconditionError(
        "the cpu tile problem has no cost model attached to rank configurations with");
  }
  if (settings.empty()) return std::vector<double>{};
  if (listed_kernel_.empty()) (void)Parts();
  if (part < 0 || part >= static_cast<int64_t>(listed_kernel_.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("no part ", part, " (the problem has ", listed_kernel_.size(), ")"));
  }
  const backends::cpu::Kernel& kernel =
      module_.kernels[static_cast<size_t>(listed_kernel_[static_cast<size_t>(part)])];
  std::vector<backends::cpu::KernelConfig> configs;
  for (const Candidate& s : settings) {
    if (s.size() != kernel.params.size()) {
      return absl::InvalidArgumentError(absl::StrCat("a setting of kernel ", kernel.name, " has ",
                                                     s.size(), " values; it has ",
                                                     kernel.params.size(), " parameters"));
    }
    backends::cpu::KernelConfig c;
    for (size_t p = 0; p < s.size(); ++p) {
      const std::vector<int64_t>& choices = kernel.params[p].choices;
      if (s[p] < 0 || static_cast<size_t>(s[p]) >= choices.size()) {
        return absl::InvalidArgumentError(absl::StrCat("kernel ", kernel.name, " parameter ",
                                                       kernel.params[p].name, ": choice ", s[p],
                                                       " of ", choices.size()));
      }
      c.push_back(choices[static_cast<size_t>(s[p])]);
    }
    configs.push_back(backends::cpu::CanonicalConfig(kernel, std::move(c)));
  }
  absl::StatusOr<std::vector<double>> scores = rank_(kernel.id, configs);
  if (!scores.ok()) return scores;
  if (scores->size() != settings.size()) {
    return absl::InternalError(absl::StrCat("the ranker scored ", scores->size(), " of ",
                                            settings.size(), " configurations"));
  }
  // A setting compiling to the program of an earlier one would be measured from the cache: rank
  // it last, so a top-k search measures k different programs.
  std::set<backends::cpu::KernelConfig> seen;
  for (size_t i = 0; i < configs.size(); ++i) {
    if (!seen.insert(configs[i]).second) (*scores)[i] = std::numeric_limits<double>::infinity();
  }
  MarkImplementationMustTries(kernel, settings, *scores);
  return scores;
}

void CpuTileProblem::MarkImplementationMustTries(const backends::cpu::Kernel& kernel,
                                                 const std::vector<Candidate>& settings,
                                                 std::vector<double>& scores) {
  size_t impl = kernel.params.size();
  for (size_t p = 0; p < kernel.params.size(); ++p) {
    if (kernel.params[p].name == "impl") impl = p;
  }
  if (impl == kernel.params.size()) return;
  std::map<int64_t, size_t> best;  // impl choice -> its best-scored setting
  for (size_t i = 0; i < settings.size(); ++i) {
    auto [it, fresh] = best.emplace(settings[i][impl], i);
    if (!fresh && scores[i] < scores[it->second]) it->second = i;
  }
  if (best.size() < 2) return;
  // Measured in addition to the k best ranked (Problem::RankSettings).
  for (const auto& [choice, i] : best) scores[i] = -std::numeric_limits<double>::infinity();
}

double CpuTileProblem::KernelSeconds(int32_t kernel, const backends::cpu::KernelConfig& config) {
  if (kernel >= 0 && static_cast<size_t>(kernel) < representative_.size()) {
    kernel = representative_[static_cast<size_t>(kernel)];
  }
  auto key = std::make_pair(
      kernel, backends::cpu::CanonicalConfig(module_.kernels[static_cast<size_t>(kernel)], config));
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  absl::StatusOr<double> seconds = measure_(kernel, key.second);
  double value = std::numeric_limits<double>::infinity();
  if (seconds.ok()) {
    value = *seconds;
  } else {
    last_error_ = std::string(seconds.status().message());
  }
  cache_[key] = value;
  return value;
}

double CpuTileProblem::Evaluate(const Candidate& candidate) {
  const std::vector<backends::cpu::KernelConfig> configs = Decode(candidate);
  double total = 0;
  for (size_t k = 0; k < configs.size(); ++k) {
    total += KernelSeconds(static_cast<int32_t>(k), configs[k]);
  }
  return total;
}

}  // namespace mltune::opt::tiling
