#include "optimizers/cost_model_training/train_cost_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "costmodels/features/kernel_graph.h"
#include "costmodels/learned/learned_model.h"
#include "costmodels/synthetic/synthetic_programs.h"
#include "nlohmann/json.hpp"
#include "optimizers/cost_model_training/baselines.h"
#include "optimizers/cost_model_training/gate.h"
#include "optimizers/fusion/cpu_fusion_problem.h"
#include "optimizers/guided/stored_cost_models.h"
#include "optimizers/tiling/cpu_tile_problem.h"
#include "storage/store.h"

namespace mltune::opt::cost_model_training {
namespace {

namespace features = costmodels::features;
namespace learned = costmodels::learned;
using json = nlohmann::json;

// One measured configuration of one kernel.
struct Row {
  int32_t kernel = 0;  // index into Data::kernels
  features::KernelGraph graph;
  double seconds = 0;
  bool is_default = false;    // the compiler's default configuration
  std::string configuration;  // as logged
  // The analytical baseline's prediction: logged at collect time (tpu-sim) or computed from the
  // graph and the configuration (cpu).
  std::optional<double> analytical;
};

struct Data {
  std::vector<std::string> kernels;   // kernel keys
  std::vector<std::string> programs;  // per kernel: the module it came from
  // Per kernel: from a synthetic program (mltune synthesize). Those always train: the metrics are
  // about real programs.
  std::vector<bool> synthetic;
  // Per kernel: known only from the daemon's fusion runs, timed inside its module
  // (opt::fusion::kFusionKernelInModuleTask), with no row of its own time alone. Those train but
  // are never tested: the metrics are about kernels timed alone.
  std::vector<bool> in_module;
  std::vector<int64_t> first_logged_ms;  // per kernel: its earliest measurement (unix ms)
  std::vector<Row> rows;
  int64_t skipped = 0;             // rows whose configuration or graph could not be read
  int64_t too_fast = 0;            // kernels left out by --min-seconds
  int64_t in_module_too_fast = 0;  // in-module kernels left out by --in-module-min-seconds
};

// How a kernel of `data` takes part in cross-validation: a real program's kernel timed alone is
// tested once; the others only train.
bool Testable(const Data& data, size_t k) { return !data.synthetic[k] && !data.in_module[k]; }

// The measurement log's task of a train-cost-model task.
std::string LogTask(const std::string& task) { return task + "-kernel"; }

// `in_module_min_seconds` < 0: no in-module rows.
absl::StatusOr<Data> ReadData(storage::Store& store, const std::string& task,
                              const std::string& target, double min_seconds,
                              double in_module_min_seconds, std::ostream& err) {
  storage::MeasurementFilter filter;
  filter.task = LogTask(task);
  filter.target = target;
  absl::StatusOr<std::vector<storage::MeasurementRecord>> logged = store.QueryMeasurements(filter);
  if (!logged.ok()) return logged.status();
  // The analytical baseline's rows (mltune collect --target tpu-sim), by key and configuration.
  filter.task = LogTask(task) + "-analytical";
  absl::StatusOr<std::vector<storage::MeasurementRecord>> analytical_rows =
      store.QueryMeasurements(filter);
  if (!analytical_rows.ok()) return analytical_rows.status();
  std::map<std::string, double> analytical;
  for (const storage::MeasurementRecord& m : *analytical_rows) {
    analytical[absl::StrCat(m.graph_key, "\n", m.configuration)] = m.value;
  }
  const bool cpu_roofline = target == "cpu" && task == "fusion";
  Data data;
  std::map<std::string, int32_t> index;
  std::map<std::string, std::optional<features::KernelGraph>> graphs;
  std::map<std::string, std::string> defaults;  // kernel key -> its first logged configuration
  // A store from before a feature change holds graphs of every kernel in the old widths: name a
  // few, count the rest.
  constexpr int64_t kUnreadableNamed = 3;
  int64_t unreadable = 0;
  // Kernels whose fastest measurement is under min_seconds go whole (dropping only their fast
  // configurations would bias the tile ranking).
  std::map<std::string, double> fastest;
  std::map<std::string, int64_t> first_logged;  // by kernel key, over every row read
  auto note_time = [&first_logged](const storage::MeasurementRecord& m) {
    auto [it, fresh] = first_logged.emplace(m.graph_key, m.time_ms);
    if (!fresh) it->second = std::min(it->second, m.time_ms);
  };
  for (const storage::MeasurementRecord& m : *logged) {
    auto [it, fresh] = fastest.emplace(m.graph_key, m.value);
    if (!fresh) it->second = std::min(it->second, m.value);
    note_time(m);
  }
  for (const auto& [key, seconds] : fastest) data.too_fast += seconds < min_seconds ? 1 : 0;
  // Reads `key`'s stored graph and, when readable, adds the kernel to `data` (nullopt otherwise).
  auto add_kernel = [&](const std::string& key,
                        bool in_module) -> absl::StatusOr<std::optional<features::KernelGraph>> {
    absl::StatusOr<std::optional<storage::KernelGraphRecord>> rec = store.GetKernelGraph(key);
    if (!rec.ok()) return rec.status();
    if (!rec->has_value()) return std::nullopt;
    absl::StatusOr<features::KernelGraph> kg = features::ParseKernelGraph((*rec)->graph);
    if (!kg.ok()) {
      if (++unreadable <= kUnreadableNamed) {
        err << "warning: kernel " << key.substr(0, 12)
            << ": stored graph unreadable: " << kg.status().message() << "\n";
      }
      return std::nullopt;
    }
    index[key] = static_cast<int32_t>(data.kernels.size());
    data.kernels.push_back(key);
    data.programs.push_back((*rec)->module_fingerprint.empty() ? (*rec)->module
                                                               : (*rec)->module_fingerprint);
    data.synthetic.push_back((*rec)->module.starts_with(costmodels::synthetic::kModulePrefix));
    data.in_module.push_back(in_module);
    return std::optional<features::KernelGraph>(*std::move(kg));
  };
  // Sets the row's graph to `graph` with `configuration` applied and returns the configuration;
  // nullopt (counted skipped) when either cannot be read.
  auto configured = [&](const std::optional<features::KernelGraph>& graph,
                        const std::string& configuration,
                        Row& row) -> std::optional<features::Configuration> {
    absl::StatusOr<features::Configuration> config = features::ParseConfiguration(configuration);
    if (graph.has_value() && config.ok()) {
      row.graph = *graph;
      if (features::SetConfiguration(*config, &row.graph).ok()) return *std::move(config);
    }
    ++data.skipped;
    return std::nullopt;
  };
  for (const storage::MeasurementRecord& m : *logged) {
    if (!(m.value > 0) || !std::isfinite(m.value)) {
      ++data.skipped;
      continue;
    }
    if (fastest.at(m.graph_key) < min_seconds) continue;
    auto g = graphs.find(m.graph_key);
    if (g == graphs.end()) {
      absl::StatusOr<std::optional<features::KernelGraph>> parsed =
          add_kernel(m.graph_key, /*in_module=*/false);
      if (!parsed.ok()) return parsed.status();
      g = graphs.emplace(m.graph_key, *std::move(parsed)).first;
      defaults.emplace(m.graph_key, m.configuration);
    }
    Row row;
    const std::optional<features::Configuration> config =
        configured(g->second, m.configuration, row);
    if (!config.has_value()) continue;
    row.kernel = index.at(m.graph_key);
    row.seconds = m.value;
    row.configuration = m.configuration;
    // collect and the daemon measure the default configuration first.
    row.is_default = m.configuration == defaults.at(m.graph_key);
    if (auto a = analytical.find(absl::StrCat(m.graph_key, "\n", m.configuration));
        a != analytical.end()) {
      row.analytical = a->second;
    } else if (cpu_roofline) {
      row.analytical = CpuRooflineSeconds(row.graph);
    } else if (target == "cpu") {
      row.analytical =
          CpuTileSeconds(row.graph, *config, opt::tiling::KernelTuningMeasureOptions().threads);
    }
    data.rows.push_back(std::move(row));
  }
  if (task == "fusion" && in_module_min_seconds >= 0) {
    // Kernels the daemon's fusion searches timed inside their modules, where no time alone was
    // logged: one row each, at the geometric mean of its times (one configuration, the default).
    filter.task = opt::fusion::kFusionKernelInModuleTask;
    absl::StatusOr<std::vector<storage::MeasurementRecord>> in_module =
        store.QueryMeasurements(filter);
    if (!in_module.ok()) return in_module.status();
    std::map<std::string, std::pair<double, int>> log_sum;  // key -> (sum of logs, count)
    std::map<std::string, std::string> configuration;
    for (const storage::MeasurementRecord& m : *in_module) {
      // A model that trained on its time in a module has seen the kernel, timed alone since.
      note_time(m);
      if (fastest.contains(m.graph_key)) continue;  // timed alone: that is its label
      if (!(m.value > 0) || !std::isfinite(m.value)) {
        ++data.skipped;
        continue;
      }
      auto& [sum, n] = log_sum[m.graph_key];
      sum += std::log(m.value);
      ++n;
      configuration.emplace(m.graph_key, m.configuration);
    }
    for (const auto& [key, sum_n] : log_sum) {
      const double seconds = std::exp(sum_n.first / sum_n.second);
      if (seconds < std::max(min_seconds, in_module_min_seconds)) {
        ++data.in_module_too_fast;
        continue;
      }
      absl::StatusOr<std::optional<features::KernelGraph>> graph = add_kernel(key, true);
      if (!graph.ok()) return graph.status();
      Row row;
      if (!configured(*graph, configuration.at(key), row).has_value()) continue;
      row.kernel = index.at(key);
      row.seconds = seconds;
      row.configuration = configuration.at(key);
      row.is_default = true;
      if (cpu_roofline) row.analytical = CpuRooflineSeconds(row.graph);
      data.rows.push_back(std::move(row));
    }
  }
  for (const std::string& key : data.kernels) data.first_logged_ms.push_back(first_logged.at(key));
  if (unreadable > 0) {
    err << "warning: " << unreadable << " kernel(s) with a stored graph this build cannot read "
        << "left out (" << std::min(unreadable, kUnreadableNamed) << " named above); mltune "
        << "collect over the same files with the same --task and --target replaces graphs of "
           "an older feature set without measuring again\n";
  }
  return data;
}

// Cross-validation folds: per kernel its fold in [0, folds), or -1 for a synthetic program's
// kernel (always trained on). Real kernels are dealt to folds at random, one by one or (by_program)
// a whole program at a time, so each is tested exactly once by a model that never saw it (or its
// program). An in-module kernel is never tested; by program it takes its program's fold, so it
// does not train the model that tests its program's other kernels.
std::vector<int> Folds(const Data& data, bool by_program, int folds, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int> fold(data.kernels.size(), -1);
  if (by_program) {
    std::vector<std::string> programs;
    for (size_t k = 0; k < data.kernels.size(); ++k) {
      if (Testable(data, k)) programs.push_back(data.programs[k]);
    }
    std::sort(programs.begin(), programs.end());
    programs.erase(std::unique(programs.begin(), programs.end()), programs.end());
    std::shuffle(programs.begin(), programs.end(), rng);
    std::map<std::string, int> program_fold;
    for (size_t i = 0; i < programs.size(); ++i) {
      program_fold[programs[i]] = static_cast<int>(i % static_cast<size_t>(folds));
    }
    for (size_t k = 0; k < fold.size(); ++k) {
      if (data.synthetic[k]) continue;
      auto f = program_fold.find(data.programs[k]);
      if (f != program_fold.end()) fold[k] = f->second;
    }
  } else {
    std::vector<size_t> order;
    for (size_t k = 0; k < data.kernels.size(); ++k) {
      if (Testable(data, k)) order.push_back(k);
    }
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size(); ++i) {
      fold[order[i]] = static_cast<int>(i % static_cast<size_t>(folds));
    }
  }
  return fold;
}

// The fusion tables' runtime bands: under 10 ns a kernel is little more than its call, under
// 1 us it is too short to time inside a module (--in-module-min-seconds), and from 100 us on it
// is what a program's time is made of.
constexpr double kRuntimeBandEdges[] = {1e-8, 1e-6, 1e-4};

struct SplitMetrics {
  std::string name;
  int folds = 0;
  int64_t train_kernels = 0;                // per fold, on average
  int64_t test_kernels = 0, test_rows = 0;  // over all folds: every real kernel once
  learned::RankMetrics relative, absolute, default_pick, analytical;
  // The relative head's pick where the absolute head predicts it --pick-margin faster than the
  // default, else the default (learned::GuardDefaultPick); needs both heads.
  std::optional<learned::RankMetrics> guarded;
  bool has_analytical = false;      // every test row has the baseline's prediction
  double mape = 0, ape_median = 0;  // learned, absolute head
  // The relative-error point (learned::RuntimePoint::kRelativeError): each fold's rows shifted
  // by the spread model fitted on the other folds' rows, so no row calibrates its own
  // prediction; and the fit over every row, which the stored checkpoint carries.
  double point_mape = 0, point_ape_median = 0;
  std::optional<learned::RuntimeSpread> spread_fit;
  double analytical_mape = 0, analytical_ape_median = 0;  // the baseline's
  // fusion: the same MAPEs by measured runtime (kRuntimeBandEdges); empty where not computed.
  std::vector<learned::RuntimeBand> bands, point_bands, analytical_bands;
  std::string skipped;  // why the split was not evaluated
};

// Training samples of `rows`; a real program's rows `real_weight` times each. With
// --kernel-weights program-share, each kernel's rank pairs count by its share of its program's
// time among these rows (learned::ProgramShareWeights), so no test row's time enters training.
std::vector<learned::Sample> Samples(const Data& data, const std::vector<size_t>& rows,
                                     const TrainingOptions& cmd) {
  std::vector<double> rank_weight(rows.size(), 1.0);
  if (cmd.kernel_weights == "program-share") {
    std::vector<int64_t> group, program;
    std::vector<double> seconds;
    std::map<std::string, int64_t> program_ids;
    for (size_t r : rows) {
      const Row& row = data.rows[r];
      group.push_back(row.kernel);
      seconds.push_back(row.seconds);
      program.push_back(program_ids
                            .emplace(data.programs[static_cast<size_t>(row.kernel)],
                                     static_cast<int64_t>(program_ids.size()))
                            .first->second);
    }
    rank_weight = learned::ProgramShareWeights(group, seconds, program);
  }
  std::vector<learned::Sample> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = data.rows[rows[i]];
    const int copies = data.synthetic[static_cast<size_t>(row.kernel)] ? 1 : cmd.real_weight;
    for (int c = 0; c < copies; ++c) {
      out.push_back({&row.graph, row.kernel, row.seconds, rank_weight[i]});
    }
  }
  return out;
}

// One CSV line per test row (--predictions): what each model said next to what was measured.
void WritePredictions(const Data& data, const std::string& split, const std::vector<size_t>& rows,
                      const std::vector<double>& log_seconds, const std::vector<double>& relative,
                      const std::vector<double>& log_spread,
                      const std::vector<double>& point_seconds, std::ostream& csv) {
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = data.rows[rows[i]];
    csv << split << "," << data.kernels[static_cast<size_t>(r.kernel)] << ","
        << data.programs[static_cast<size_t>(r.kernel)] << ",\"" << r.configuration << "\","
        << absl::StrFormat("%.9g", r.seconds) << ","
        << (i < log_seconds.size() ? absl::StrFormat("%.9g", std::exp(log_seconds[i])) : "") << ","
        << (i < relative.size() ? absl::StrFormat("%.6g", relative[i]) : "") << ","
        << (r.analytical ? absl::StrFormat("%.9g", *r.analytical) : "") << ","
        << (r.is_default ? 1 : 0) << ","
        << (i < log_spread.size() ? absl::StrFormat("%.6g", log_spread[i]) : "") << ","
        << (i < point_seconds.size() ? absl::StrFormat("%.9g", point_seconds[i]) : "") << "\n";
  }
}

// The relative-error point of each test row, its variance model fitted on the other folds'
// rows only (the folds' own predictions, `row_fold` parallel to the rest).
std::vector<double> FoldCalibratedPoint(const std::vector<double>& truth,
                                        const std::vector<double>& log_mean,
                                        const std::vector<double>& spread,
                                        const std::vector<int>& row_fold, int folds) {
  std::vector<double> point(truth.size(), 0);
  for (int f = 0; f < folds; ++f) {
    std::vector<double> fit_truth, fit_mean, fit_spread, mean, sd;
    std::vector<size_t> at;
    for (size_t i = 0; i < truth.size(); ++i) {
      if (row_fold[i] == f) {
        at.push_back(i);
        mean.push_back(log_mean[i]);
        sd.push_back(spread[i]);
      } else {
        fit_truth.push_back(truth[i]);
        fit_mean.push_back(log_mean[i]);
        fit_spread.push_back(spread[i]);
      }
    }
    if (at.empty()) continue;
    const std::vector<double> shifted = learned::RelativeErrorSeconds(
        mean, sd, learned::FitRuntimeSpread(fit_truth, fit_mean, fit_spread));
    for (size_t j = 0; j < at.size(); ++j) point[at[j]] = shifted[j];
  }
  return point;
}

absl::StatusOr<SplitMetrics> Evaluate(const Data& data, const std::string& name, bool by_program,
                                      const TrainingOptions& cmd,
                                      const learned::ModelOptions& options,
                                      std::ostream* predictions) {
  SplitMetrics s;
  s.name = name;
  std::set<std::string> programs;
  int64_t real_kernels = 0;
  for (size_t k = 0; k < data.kernels.size(); ++k) {
    if (!Testable(data, k)) continue;
    programs.insert(data.programs[k]);
    ++real_kernels;
  }
  if (by_program && programs.size() < 2) {
    s.skipped = "needs kernels from at least 2 programs (synthetic ones always train)";
    return s;
  }
  if (real_kernels < 2) {
    s.skipped = "needs at least 2 kernels of real programs (synthetic ones always train)";
    return s;
  }
  // --holdout 0.25 is 4 folds: each model trains on 3/4 of the real kernels or programs.
  const int folds = std::max(2, static_cast<int>(std::lround(1 / cmd.holdout)));
  const std::vector<int> fold = Folds(data, by_program, folds, cmd.seed);
  std::vector<size_t> test_rows;  // in fold order
  std::vector<int64_t> group, program;
  std::map<std::string, int64_t> program_ids;
  std::vector<double> truth, default_score, analytical, relative, log_seconds, log_spread;
  std::vector<bool> is_default;
  std::vector<int> row_fold;
  s.has_analytical = true;
  double train_kernels = 0;
  int used_folds = 0;
  for (int f = 0; f < folds; ++f) {
    std::vector<size_t> train, test;
    std::set<int32_t> train_k;
    for (size_t r = 0; r < data.rows.size(); ++r) {
      const int32_t k = data.rows[r].kernel;
      if (fold[static_cast<size_t>(k)] == f) {
        if (Testable(data, static_cast<size_t>(k))) test.push_back(r);
      } else {
        train.push_back(r);
        train_k.insert(k);
      }
    }
    if (test.empty()) continue;  // fewer programs than folds
    if (train.empty()) {
      s.skipped = "a fold left nothing to train on";
      return s;
    }
    train_kernels += static_cast<double>(train_k.size());
    ++used_folds;
    absl::StatusOr<std::unique_ptr<learned::LearnedModel>> model =
        learned::LearnedModel::Create(options);
    if (!model.ok()) return model.status();
    absl::StatusOr<learned::TrainReport> report = (*model)->Train(Samples(data, train, cmd));
    if (!report.ok()) return report.status();
    std::vector<const features::KernelGraph*> fold_graphs;
    for (size_t r : test) {
      test_rows.push_back(r);
      row_fold.push_back(f);
      fold_graphs.push_back(&data.rows[r].graph);
      group.push_back(data.rows[r].kernel);
      program.push_back(
          program_ids
              .emplace(data.programs[static_cast<size_t>(data.rows[r].kernel)], program_ids.size())
              .first->second);
      truth.push_back(data.rows[r].seconds);
      default_score.push_back(data.rows[r].is_default ? 0.0 : 1.0);
      is_default.push_back(data.rows[r].is_default);
      s.has_analytical = s.has_analytical && data.rows[r].analytical.has_value();
      analytical.push_back(data.rows[r].analytical.value_or(0));
    }
    for (const learned::Head head : {learned::Head::kRelative, learned::Head::kAbsolute}) {
      if (!(*model)->HasHead(head)) continue;
      std::vector<double> spread;
      absl::StatusOr<std::vector<double>> p = (*model)->Predict(fold_graphs, head, &spread);
      if (!p.ok()) return p.status();
      std::vector<double>& into = head == learned::Head::kRelative ? relative : log_seconds;
      into.insert(into.end(), p->begin(), p->end());
      if (head == learned::Head::kAbsolute) {
        log_spread.insert(log_spread.end(), spread.begin(), spread.end());
      }
    }
  }
  s.folds = used_folds;
  s.train_kernels = static_cast<int64_t>(std::lround(train_kernels / std::max(1, used_folds)));
  s.test_kernels = static_cast<int64_t>(std::set<int64_t>(group.begin(), group.end()).size());
  s.test_rows = static_cast<int64_t>(test_rows.size());
  s.default_pick = learned::EvaluateRanking(group, truth, default_score, program);
  if (s.has_analytical) {
    s.analytical = learned::EvaluateRanking(group, truth, analytical, program);
    s.analytical_mape = learned::Mape(truth, analytical);
    s.analytical_ape_median = learned::MedianApe(truth, analytical);
    s.analytical_bands = learned::MapeByRuntime(truth, analytical, kRuntimeBandEdges);
  }
  if (!relative.empty()) s.relative = learned::EvaluateRanking(group, truth, relative, program);
  if (!relative.empty() && !log_seconds.empty()) {
    s.guarded = learned::EvaluateRanking(
        group, truth,
        learned::GuardDefaultPick(group, relative, log_seconds, is_default, cmd.pick_margin),
        program);
  }
  if (!log_seconds.empty()) {
    s.absolute = learned::EvaluateRanking(group, truth, log_seconds, program);
    std::vector<double> seconds;
    for (double v : log_seconds) seconds.push_back(std::exp(v));
    s.mape = learned::Mape(truth, seconds);
    s.ape_median = learned::MedianApe(truth, seconds);
    s.bands = learned::MapeByRuntime(truth, seconds, kRuntimeBandEdges);
  }
  std::vector<double> point_seconds;
  if (!log_seconds.empty() && log_spread.size() == log_seconds.size()) {
    s.spread_fit = learned::FitRuntimeSpread(truth, log_seconds, log_spread);
    point_seconds = FoldCalibratedPoint(truth, log_seconds, log_spread, row_fold, folds);
    s.point_mape = learned::Mape(truth, point_seconds);
    s.point_ape_median = learned::MedianApe(truth, point_seconds);
    s.point_bands = learned::MapeByRuntime(truth, point_seconds, kRuntimeBandEdges);
  }
  if (predictions != nullptr) {
    WritePredictions(data, name, test_rows, log_seconds, relative, log_spread, point_seconds,
                     *predictions);
  }
  return s;
}

std::string Percent(double v) { return absl::StrFormat("%.1f%%", 100 * v); }

// "under 10 ns", "10 ns to 1 µs", "100 µs and more": a runtime band's row label.
std::string BandLabel(const learned::RuntimeBand& band) {
  auto time = [](double s) {
    if (s < 1e-6) return absl::StrFormat("%g ns", s * 1e9);
    if (s < 1e-3) return absl::StrFormat("%g µs", s * 1e6);
    return absl::StrFormat("%g ms", s * 1e3);
  };
  if (band.lower_seconds == 0) return "under " + time(band.upper_seconds);
  if (band.upper_seconds == 0) return time(band.lower_seconds) + " and more";
  return time(band.lower_seconds) + " to " + time(band.upper_seconds);
}

// Both cross-validations, as a table on `out`; returns the metrics stored with the checkpoint.
absl::StatusOr<json> EvaluateSplits(const Data& data, const TrainingOptions& cmd,
                                    const learned::ModelOptions& options, const std::string& target,
                                    std::ostream* predictions, std::ostream& out) {
  const bool tile = cmd.task == "tile";
  json metrics = json::array();
  std::vector<std::string> program_table;  // tile: the per-program APE, a second table
  std::vector<std::string> spread_fits;    // each split's variance model over all its folds
  std::vector<std::string> band_table;     // fusion: MAPE by measured runtime, a second table
  if (tile) {
    out << "\n| split | folds | train kernels per fold | test kernels | test configs | "
           "APE mean (relative head) | APE median | Kendall tau | APE mean (absolute head) | MAPE "
           "| "
           "APE mean (default config) | APE mean (analytical) | Kendall tau (analytical) | "
           "top-5 APE mean (relative head) | top-5 APE mean (analytical) | APE mean (guarded "
           "pick) |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  } else {
    out << "\n| split | folds | train kernels per fold | test kernels | MAPE (learned) | "
           "APE median (learned) | MAPE (learned, relative-error point) | APE median (same) | "
           "MAPE (analytical) | APE median (analytical) |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  }
  for (const auto& [name, by_program] : std::vector<std::pair<std::string, bool>>{
           {"random kernels", false}, {"held-out programs", true}}) {
    if (cmd.splits != "both" && (cmd.splits == "programs") != by_program) continue;
    absl::StatusOr<SplitMetrics> s = Evaluate(data, name, by_program, cmd, options, predictions);
    if (!s.ok()) {
      return absl::Status(s.status().code(), absl::StrCat(name, " split: ", s.status().message()));
    }
    if (!s->skipped.empty()) {
      out << "| " << name << " | skipped: " << s->skipped << " |" << std::string(tile ? 15 : 8, '|')
          << "\n";
      continue;
    }
    const bool rel = options.loss != learned::Loss::kMseLog;
    const bool abs = options.loss == learned::Loss::kMseLog || options.loss == learned::Loss::kBoth;
    const bool an = s->has_analytical;
    if (tile) {
      out << absl::StrFormat(
          "| %s | %d | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
          name, s->folds, s->train_kernels, s->test_kernels, s->test_rows,
          rel ? Percent(s->relative.ape_mean) : "-", rel ? Percent(s->relative.ape_median) : "-",
          rel ? absl::StrFormat("%.2f", s->relative.kendall_tau) : "-",
          abs ? Percent(s->absolute.ape_mean) : "-", abs ? Percent(s->mape) : "-",
          Percent(s->default_pick.ape_mean), an ? Percent(s->analytical.ape_mean) : "-",
          an ? absl::StrFormat("%.2f", s->analytical.kendall_tau) : "-",
          rel ? Percent(s->relative.ape_top5_mean) : "-",
          an ? Percent(s->analytical.ape_top5_mean) : "-",
          s->guarded ? Percent(s->guarded->ape_mean) : "-");
      auto mean_median = [](const learned::RankMetrics& r) {
        return absl::StrCat(Percent(r.program_ape_mean), " (", Percent(r.program_ape_median), ")");
      };
      program_table.push_back(absl::StrFormat(
          "| %s | %d | %s | %s | %s | %s |\n", name, s->default_pick.programs,
          rel ? mean_median(s->relative) : "-", s->guarded ? mean_median(*s->guarded) : "-",
          mean_median(s->default_pick), an ? mean_median(s->analytical) : "-"));
    } else {
      const bool point = s->spread_fit.has_value();
      out << absl::StrFormat(
          "| %s | %d | %d | %d | %s | %s | %s | %s | %s | %s |\n", name, s->folds, s->train_kernels,
          s->test_kernels, Percent(s->mape), Percent(s->ape_median),
          point ? Percent(s->point_mape) : "-", point ? Percent(s->point_ape_median) : "-",
          an ? Percent(s->analytical_mape) : "-", an ? Percent(s->analytical_ape_median) : "-");
      for (size_t b = 0; b < s->bands.size(); ++b) {
        band_table.push_back(absl::StrFormat(
            "| %s | %s | %d | %s | %s | %s | %s |\n", name, BandLabel(s->bands[b]),
            s->bands[b].rows, Percent(s->bands[b].mape),
            point ? Percent(s->point_bands[b].mape) : "-",
            point ? Percent(s->point_bands[b].error_share) : Percent(s->bands[b].error_share),
            an ? Percent(s->analytical_bands[b].mape) : "-"));
      }
    }
    json m = {{"split", name},
              {"folds", s->folds},
              {"train_kernels", s->train_kernels},
              {"test_kernels", s->test_kernels},
              {"mape", s->mape},
              {"ape_median", s->ape_median}};
    if (s->spread_fit) {
      spread_fits.push_back(absl::StrFormat("%s: %.4g + %.4g * spread^2", name,
                                            s->spread_fit->floor, s->spread_fit->scale));
      m["point_mape"] = s->point_mape;
      m["point_ape_median"] = s->point_ape_median;
      m["spread_floor"] = s->spread_fit->floor;
      m["spread_scale"] = s->spread_fit->scale;
    }
    if (tile) {
      m["relative_ape_mean"] = s->relative.ape_mean;
      m["relative_ape_median"] = s->relative.ape_median;
      m["kendall_tau"] = s->relative.kendall_tau;
      m["absolute_ape_mean"] = s->absolute.ape_mean;
      m["default_ape_mean"] = s->default_pick.ape_mean;
      m["relative_ape_top5_mean"] = s->relative.ape_top5_mean;
      m["test_programs"] = s->default_pick.programs;
      m["relative_program_ape_mean"] = s->relative.program_ape_mean;
      m["relative_program_ape_median"] = s->relative.program_ape_median;
      m["default_program_ape_mean"] = s->default_pick.program_ape_mean;
      m["default_program_ape_median"] = s->default_pick.program_ape_median;
      if (s->guarded) {
        m["guarded_ape_mean"] = s->guarded->ape_mean;
        m["guarded_program_ape_mean"] = s->guarded->program_ape_mean;
        m["guarded_program_ape_median"] = s->guarded->program_ape_median;
        m["pick_margin"] = cmd.pick_margin;
      }
      if (an) {
        m["analytical_ape_mean"] = s->analytical.ape_mean;
        m["analytical_kendall_tau"] = s->analytical.kendall_tau;
        m["analytical_ape_top5_mean"] = s->analytical.ape_top5_mean;
        m["analytical_program_ape_mean"] = s->analytical.program_ape_mean;
        m["analytical_program_ape_median"] = s->analytical.program_ape_median;
      }
    }
    if (an) {
      m["analytical_mape"] = s->analytical_mape;
      m["analytical_ape_median"] = s->analytical_ape_median;
    }
    metrics.push_back(std::move(m));
  }
  if (!band_table.empty()) {
    out << "\n| split | measured runtime | test kernels | MAPE (learned) | MAPE (relative-error "
           "point) | share of the learned error (same) | MAPE (analytical) |\n"
           "|---|---|---:|---:|---:|---:|---:|\n";
    for (const std::string& row : band_table) out << row;
  }
  if (!program_table.empty()) {
    out << "\n| split | test programs | program APE mean (median): relative head | guarded pick "
           "| default config | analytical |\n|---|---:|---:|---:|---:|---:|\n";
    for (const std::string& row : program_table) out << row;
  }
  if (tile) {
    out << "\nAPE: per kernel, the measured time of the configuration picked over the best "
           "measured one, minus 1, averaged over kernels; \"default config\" picks the "
           "compiler's defaults, \"analytical\" the fastest by "
        << (target == "cpu" ? "the configuration-aware CPU roofline "
                              "(optimizers/cost_model_training/baselines.h)"
                            : "the analytical tile roofline (costmodels/analytical/tile_cost.h)")
        << ". \"guarded pick\": the relative head's pick where the absolute head predicts it at "
           "least "
        << Percent(cmd.pick_margin)
        << " faster than the default configuration, else the default. Program APE (the "
           "paper's per-program figure): per test program, the time its kernels' picks lose "
           "against their best configurations, summed, over the best times summed; mean and "
           "median over programs.\n";
  } else {
    out << "\nMAPE: mean |predicted - measured| / measured runtime over the test kernels (the "
           "paper's fusion metric); \"analytical\" is the "
        << (target == "cpu" ? "CPU roofline from the kernels' FLOPs and bytes"
                            : "roofline of the kernels' FLOPs and bytes on the spec")
        << ".\nThe relative-error point is exp(mean - variance) of the predicted log runtime, "
           "which minimises the expected MAPE, its variance floor + scale * (the ensemble "
           "members' spread)^2 fitted on the other folds' kernels; the stored model carries the "
           "fit over every fold (held-out programs when that split ran). Fits over every fold: "
        << absl::StrJoin(spread_fits, "; ") << ".\n";
  }
  out << "Each split is a cross-validation over folds of the real kernels (random kernels) or "
         "programs (held-out programs): every test kernel is predicted by a model trained "
         "without it (and, held-out, without its program).\n";
  return metrics;
}

}  // namespace

// The stored model's runtime error on every measurement of `test` (another store's kernels timed
// alone), next to the analytical model's: over all its kernels, and over those `train` does not
// hold (a kernel the training store holds trained the model, timed alone or inside a module).
// With `predictions`, each test row goes there too (split "test store").
absl::Status TestOnStore(const learned::LearnedModel& model, const Data& train, const Data& test,
                         const std::string& test_db, std::ostream& out, std::ostream* predictions) {
  const std::set<std::string> trained(train.kernels.begin(), train.kernels.end());
  std::vector<const features::KernelGraph*> graphs;
  for (const Row& row : test.rows) graphs.push_back(&row.graph);
  std::vector<double> log_seconds, relative;
  for (const learned::Head head : {learned::Head::kAbsolute, learned::Head::kRelative}) {
    if (!model.HasHead(head)) continue;
    absl::StatusOr<std::vector<double>> p = model.Predict(graphs, head);
    if (!p.ok()) return p.status();
    (head == learned::Head::kAbsolute ? log_seconds : relative) = *std::move(p);
  }
  if (predictions != nullptr) {
    std::vector<size_t> rows(test.rows.size());
    std::iota(rows.begin(), rows.end(), 0);
    WritePredictions(test, "test store", rows, log_seconds, relative, {}, {}, *predictions);
    if (!predictions->flush()) return absl::InternalError("writing --predictions failed");
  }
  out << "\nTested on " << test_db << " (the model trained on all of the training store):\n";
  // Each table: all the test kernels, then those the training data does not hold.
  struct Subset {
    std::string label;
    std::vector<size_t> rows;
    std::set<int32_t> kernels;
    std::set<std::string> programs;
    bool has_analytical = true;
  };
  std::vector<Subset> subsets(2);
  subsets[0].label = "all (timed alone)";
  subsets[1].label = "not in the training store";
  for (size_t r = 0; r < test.rows.size(); ++r) {
    const Row& row = test.rows[r];
    const size_t k = static_cast<size_t>(row.kernel);
    for (Subset& subset : subsets) {
      if (&subset == &subsets[1] && trained.contains(test.kernels[k])) continue;
      subset.rows.push_back(r);
      subset.kernels.insert(row.kernel);
      subset.programs.insert(test.programs[k]);
      subset.has_analytical = subset.has_analytical && row.analytical.has_value();
    }
  }
  auto figure = [](bool has, double v) {
    return has ? absl::StrFormat("%.1f%%", 100 * v) : std::string("-");
  };
  if (!log_seconds.empty()) {
    out << "\n| test kernels | kernels | programs | rows | MAPE (learned) | APE median (learned) | "
           "MAPE (analytical) |\n|---|---:|---:|---:|---:|---:|---:|\n";
    for (const Subset& subset : subsets) {
      std::vector<double> truth, learned_s, analytical_s;
      for (size_t r : subset.rows) {
        truth.push_back(test.rows[r].seconds);
        learned_s.push_back(std::exp(log_seconds[r]));
        analytical_s.push_back(test.rows[r].analytical.value_or(0));
      }
      out << absl::StrFormat(
          "| %s | %d | %d | %d | %s | %s | %s |\n", subset.label, subset.kernels.size(),
          subset.programs.size(), truth.size(),
          figure(!truth.empty(), learned::Mape(truth, learned_s)),
          figure(!truth.empty(), learned::MedianApe(truth, learned_s)),
          figure(!truth.empty() && subset.has_analytical, learned::Mape(truth, analytical_s)));
    }
  }
  if (!relative.empty()) {
    // The tile figures: the first-ranked configuration of each kernel against its best.
    out << "\n| test kernels | kernels | programs | APE mean (learned) | top-5 APE mean (learned) "
           "| "
           "program APE mean (learned) | APE mean (default config) | APE mean (analytical) |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const Subset& subset : subsets) {
      std::vector<int64_t> group, program;
      std::map<std::string, int64_t> program_ids;
      std::vector<double> truth, scores, default_score, analytical;
      for (size_t r : subset.rows) {
        const Row& row = test.rows[r];
        group.push_back(row.kernel);
        program.push_back(
            program_ids.emplace(test.programs[static_cast<size_t>(row.kernel)], program_ids.size())
                .first->second);
        truth.push_back(row.seconds);
        scores.push_back(relative[r]);
        default_score.push_back(row.is_default ? 0.0 : 1.0);
        analytical.push_back(row.analytical.value_or(0));
      }
      const bool any = !truth.empty();
      const learned::RankMetrics learned_m =
          learned::EvaluateRanking(group, truth, scores, program);
      const learned::RankMetrics defaults = learned::EvaluateRanking(group, truth, default_score);
      const learned::RankMetrics baseline = learned::EvaluateRanking(group, truth, analytical);
      out << absl::StrFormat(
          "| %s | %d | %d | %s | %s | %s | %s | %s |\n", subset.label, subset.kernels.size(),
          subset.programs.size(), figure(any, learned_m.ape_mean),
          figure(any, learned_m.ape_top5_mean), figure(any, learned_m.program_ape_mean),
          figure(any, defaults.ape_mean), figure(any && subset.has_analytical, baseline.ape_mean));
    }
  }
  return absl::OkStatus();
}

namespace {

// A model's error on `rows` of `data` by the task's metric. Tile: the share of each kernel's
// configuration pairs it orders wrongly, (1 - Kendall's tau) / 2, averaged over kernels (relative
// head where trained, as the daemon ranks). The top-5 APE model-topk lives by says little where a
// kernel has 8 measured configurations (its top 5 nearly always holds the best: a 2-epoch model
// scored 0.0% on 58 held-out kernels), and the top-1 APE swings with one bad pick. Fusion: the
// time-weighted APE of its absolute head (plans are ranked by their kernels' summed times; MAPE,
// which a few tiny kernels far off swing, made the gate reject one retraining in three of the
// same recipe on real cpu data). `kernels` counts the kernels scored: for tile, those with two
// configurations or more.
struct GateScore {
  double error = 0;
  int64_t kernels = 0;
};
absl::StatusOr<GateScore> GateError(const learned::LearnedModel& model, const Data& data,
                                    const std::vector<size_t>& rows, bool tile) {
  std::vector<const features::KernelGraph*> graphs;
  std::vector<int64_t> group;
  std::vector<double> truth;
  for (size_t r : rows) {
    graphs.push_back(&data.rows[r].graph);
    group.push_back(data.rows[r].kernel);
    truth.push_back(data.rows[r].seconds);
  }
  const learned::Head head = tile && model.HasHead(learned::Head::kRelative)
                                 ? learned::Head::kRelative
                                 : learned::Head::kAbsolute;
  absl::StatusOr<std::vector<double>> predicted = model.Predict(graphs, head);
  if (!predicted.ok()) return predicted.status();
  if (tile) {
    const learned::RankMetrics m = learned::EvaluateRanking(group, truth, *predicted);
    return GateScore{(1 - m.kendall_tau) / 2, m.groups};
  }
  std::vector<double> seconds;
  for (double v : *predicted) seconds.push_back(std::exp(v));
  return GateScore{learned::TimeWeightedApe(truth, seconds),
                   static_cast<int64_t>(std::set<int64_t>(group.begin(), group.end()).size())};
}

// --gate: trains a candidate without the kernels logged since the newest stored version of
// `name` (a share of them, optimizers/cost_model_training/gate.h) and scores it and that version
// there. Returns what the checkpoint's metadata records: "passed" false when the candidate loses,
// "skipped" (and passed) when there is nothing to compare.
absl::StatusOr<json> RunGate(storage::Store& store, const Data& data, const TrainingOptions& cmd,
                             const learned::ModelOptions& options, const std::string& name,
                             std::ostream& out) {
  const bool tile = cmd.task == "tile";
  json gate = {{"margin", cmd.gate_margin}, {"share", cmd.gate_share}, {"passed", true}};
  auto skip = [&](const std::string& why) {
    gate["skipped"] = why;
    out << "gate: skipped, " << why << "\n";
    return gate;
  };
  absl::StatusOr<std::optional<storage::ModelRecord>> incumbent = store.LatestModel(name);
  if (!incumbent.ok()) return incumbent.status();
  if (!incumbent->has_value()) return skip(absl::StrCat("no stored ", name, " to compare with"));
  const storage::ModelRecord& record = **incumbent;
  gate["incumbent_version"] = record.version;
  std::vector<GateKernel> kernels;
  for (size_t k = 0; k < data.kernels.size(); ++k) {
    kernels.push_back({data.programs[k], data.first_logged_ms[k], !data.synthetic[k]});
  }
  const std::vector<bool> holdout =
      GateHoldout(kernels, record.created_ms, cmd.gate_share, cmd.seed);
  std::vector<size_t> train, test;
  std::set<int32_t> test_kernels;
  std::set<std::string> test_programs;
  for (size_t r = 0; r < data.rows.size(); ++r) {
    const int32_t k = data.rows[r].kernel;
    if (holdout[static_cast<size_t>(k)]) {
      test.push_back(r);
      test_kernels.insert(k);
      test_programs.insert(data.programs[static_cast<size_t>(k)]);
    } else {
      train.push_back(r);
    }
  }
  if (test.empty()) {
    return skip(absl::StrCat("no kernel of a real program logged since version ", record.version));
  }
  if (train.empty()) return skip("holding out the new kernels leaves nothing to train on");
  gate["holdout_kernels"] = test_kernels.size();
  gate["holdout_programs"] = test_programs.size();
  gate["holdout_rows"] = test.size();
  // A version this build cannot load or feed cannot serve either: the candidate replaces it.
  absl::StatusOr<std::shared_ptr<const learned::LearnedModel>> old =
      opt::guided::LoadCostModel(record);
  if (!old.ok()) return skip(std::string(old.status().message()));
  absl::StatusOr<GateScore> old_score = GateError(**old, data, test, tile);
  if (!old_score.ok()) {
    return skip(
        absl::StrCat("version ", record.version,
                     " cannot score this build's kernel graphs: ", old_score.status().message()));
  }
  // A handful of kernels decides by chance: with two, one kernel's ordering is half the error.
  if (old_score->kernels < cmd.gate_min_kernels) {
    return skip(absl::StrCat(old_score->kernels, " of the ", test_kernels.size(),
                             " held-out kernels can be scored", tile ? " (two configurations)" : "",
                             ", fewer than --gate-min-kernels ", cmd.gate_min_kernels));
  }
  absl::StatusOr<std::unique_ptr<learned::LearnedModel>> candidate =
      learned::LearnedModel::Create(options);
  if (!candidate.ok()) return candidate.status();
  if (absl::StatusOr<learned::TrainReport> r = (*candidate)->Train(Samples(data, train, cmd));
      !r.ok()) {
    return r.status();
  }
  absl::StatusOr<GateScore> new_score = GateError(**candidate, data, test, tile);
  if (!new_score.ok()) return new_score.status();
  const double new_error = new_score->error, old_error = old_score->error;
  const bool passed = GatePasses(new_error, old_error, cmd.gate_margin);
  const char* metric = tile ? "tile pairs misordered" : "fusion time-weighted APE";
  gate["metric"] = metric;
  gate["scored_kernels"] = old_score->kernels;
  gate["candidate"] = new_error;
  gate["incumbent"] = old_error;
  gate["passed"] = passed;
  out << absl::StrFormat(
      "gate: %d kernels of %d programs logged since version %d held out (%d rows); %s: "
      "retrained %s, version %d %s: %s\n",
      test_kernels.size(), test_programs.size(), record.version, test.size(), metric,
      Percent(new_error), record.version, Percent(old_error),
      passed ? "passed"
             : absl::StrFormat("rejected (at most %s allowed: --gate-margin %g, plus %s)",
                               Percent(GateBound(old_error, cmd.gate_margin)), cmd.gate_margin,
                               Percent(kGateNoiseFloor)));
  return gate;
}

}  // namespace

// The flags of `cmd` that shape the stored model (opt::guided::kTrainingRecipeFlags), with the
// loss resolved: the checkpoint's metadata keeps them, and the daemon retrains with them.
std::vector<std::string> TrainingRecipe(const TrainingOptions& cmd, const std::string& loss) {
  std::vector<std::string> recipe;
  auto add = [&recipe](const char* flag, std::string value) {
    recipe.push_back(flag);
    recipe.push_back(std::move(value));
  };
  add("--loss", loss);
  add("--epochs", absl::StrCat(cmd.epochs));
  add("--hidden", absl::StrCat(cmd.hidden));
  add("--layers", absl::StrCat(cmd.layers));
  add("--readout", cmd.readout);
  add("--absolute-skip", cmd.absolute_skip);
  add("--absolute-head", cmd.absolute_head);
  add("--transformer-layers", absl::StrCat(cmd.transformer_layers));
  add("--mape-weight", absl::StrCat(cmd.mape_weight));
  add("--dropout", absl::StrCat(cmd.dropout));
  add("--weight-decay", absl::StrCat(cmd.weight_decay));
  add("--real-weight", absl::StrCat(cmd.real_weight));
  add("--ensemble", absl::StrCat(cmd.ensemble));
  add("--min-pair-ratio", absl::StrCat(cmd.min_pair_ratio));
  add("--listwise-temperature", absl::StrCat(cmd.listwise_temperature));
  add("--pair-weights", cmd.pair_weights);
  add("--kernel-weights", cmd.kernel_weights);
  add("--min-seconds", absl::StrCat(cmd.min_seconds));
  add("--seed", absl::StrCat(cmd.seed));
  // 0 reads every column: a retraining then reads the features added since.
  if (cmd.node_features > 0) add("--node-features", absl::StrCat(cmd.node_features));
  if (cmd.kernel_features > 0) add("--kernel-features", absl::StrCat(cmd.kernel_features));
  if (cmd.no_in_module) {
    recipe.push_back("--no-in-module");
  } else {
    add("--in-module-min-seconds", absl::StrCat(cmd.in_module_min_seconds));
  }
  return recipe;
}

absl::StatusOr<TrainingOutcome> TrainCostModel(const TrainingOptions& cmd, std::ostream& out,
                                               std::ostream& err) {
  const bool tile = cmd.task == "tile";
  if (!tile && cmd.task != "fusion") {
    return absl::InvalidArgumentError(
        absl::StrCat("--task ", cmd.task,
                     ": train-cost-model trains tile (ranking a kernel's configurations) or fusion "
                     "(kernel runtimes)"));
  }
  if (!(cmd.holdout > 0 && cmd.holdout < 1)) {
    return absl::InvalidArgumentError(absl::StrCat("--holdout must be in (0, 1)"));
  }
  if (!(cmd.pick_margin >= 0) || !std::isfinite(cmd.pick_margin)) {
    return absl::InvalidArgumentError(absl::StrCat("--pick-margin must be a finite number >= 0"));
  }
  if (cmd.kernel_weights != "equal" && cmd.kernel_weights != "program-share") {
    return absl::InvalidArgumentError(
        absl::StrCat("--kernel-weights ", cmd.kernel_weights, ": equal or program-share"));
  }
  if (cmd.pair_weights != "gap" && cmd.pair_weights != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("--pair-weights ", cmd.pair_weights, ": gap or none"));
  }
  if (cmd.absolute_skip != "linear" && cmd.absolute_skip != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("--absolute-skip ", cmd.absolute_skip, ": linear or none"));
  }
  // Not the defaults for fusion, though they predict kernel times better: models trained with
  // them rank whole fusion plans worse (docs/cost_models.md, bench/results_fusion_time_to_best.md).
  const std::string& absolute_head = cmd.absolute_head;
  const double mape_weight = cmd.mape_weight;
  if (absolute_head != "pooled" && absolute_head != "node-sum") {
    return absl::InvalidArgumentError(
        absl::StrCat("--absolute-head ", cmd.absolute_head, ": pooled or node-sum"));
  }
  if (cmd.transformer_layers > 0 && cmd.hidden % learned::ModelOptions{}.attention_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hidden ", cmd.hidden, ": with --transformer-layers it must be a multiple ",
                     "of the ", learned::ModelOptions{}.attention_heads, " attention heads"));
  }
  if (cmd.readout != "mean-max-sum" && cmd.readout != "mean-max") {
    return absl::InvalidArgumentError(
        absl::StrCat("--readout ", cmd.readout, ": mean-max-sum or mean-max"));
  }
  // Without the cross-validations, only a test store has anything to report.
  if (cmd.no_eval && cmd.test_db.empty() &&
      (!cmd.predictions.empty() || (cmd.no_store && !cmd.gate))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--no-eval trains and stores only: it takes neither --no-store nor "
                     "--predictions (unless --test-db, or --gate without --predictions)"));
  }
  if (cmd.splits != "both" && cmd.splits != "random" && cmd.splits != "programs") {
    return absl::InvalidArgumentError(
        absl::StrCat("--splits ", cmd.splits, ": both, random or programs"));
  }
  if (!(cmd.gate_share > 0 && cmd.gate_share <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("--gate-share must be in (0, 1]"));
  }
  if (cmd.gate_min_kernels < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--gate-min-kernels must be >= 1"));
  }
  if (!(cmd.gate_margin > -1) || !std::isfinite(cmd.gate_margin)) {
    return absl::InvalidArgumentError(absl::StrCat("--gate-margin must be a finite number > -1"));
  }
  if (!(cmd.min_seconds >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("--min-seconds must be >= 0"));
  }
  if (!(cmd.in_module_min_seconds >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("--in-module-min-seconds must be >= 0"));
  }
  // fusion logs one configuration per kernel: only the absolute head has anything to learn.
  const std::string loss_name = !cmd.loss.empty() ? cmd.loss : tile ? "both" : "mse-log";
  absl::StatusOr<learned::Loss> loss = learned::ParseLoss(loss_name);
  if (!loss.ok()) {
    return absl::InternalError(absl::StrCat("--loss: ", loss.status().message()));
  }
  if (!tile && *loss != learned::Loss::kMseLog) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--loss ", loss_name,
        ": the fusion task has one measurement per kernel, so rank losses have no pairs; use "
        "mse-log"));
  }
  // The CLI never sets rank_hinge, so `both` keeps its logistic term.
  if (cmd.listwise_temperature > 0 &&
      !learned::HasLogisticRankTerm(*loss, learned::ModelOptions{}.rank_hinge)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listwise-temperature replaces a logistic rank term; --loss ", loss_name,
                     " has none (use both or rank-logistic)"));
  }
  std::unique_ptr<std::ofstream> predictions;
  if (!cmd.predictions.empty()) {
    predictions = std::make_unique<std::ofstream>(cmd.predictions);
    if (!*predictions) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write --predictions ", cmd.predictions));
    }
    *predictions << "split,kernel,program,configuration,measured_s,learned_s,relative_score,"
                    "analytical_s,default,learned_log_sd,learned_point_s\n";
  }
  // As collect logs it: tpu-sim means its default spec.
  const std::string target = cmd.target;
  absl::StatusOr<std::unique_ptr<storage::Store>> store =
      storage::Store::Open(cmd.db, storage::StoreOptions{.must_exist = true});
  if (absl::IsNotFound(store.status())) {
    return absl::NotFoundError(
        absl::StrCat(store.status().message(), " (mltune collect --db makes one)"));
  }
  if (!store.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot open the store ", cmd.db, ": ", store.status().message()));
  }
  absl::StatusOr<Data> data = ReadData(**store, cmd.task, target, cmd.min_seconds,
                                       cmd.no_in_module ? -1.0 : cmd.in_module_min_seconds, err);
  if (!data.ok()) {
    return absl::InternalError(absl::StrCat("reading ", cmd.db, ": ", data.status().message()));
  }
  if (data->rows.empty() && data->too_fast > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("all ", data->too_fast, " kernels of ", LogTask(cmd.task), " on ", target,
                     " ran faster than --min-seconds ", cmd.min_seconds));
  }
  if (data->rows.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        cmd.db, " holds no ", LogTask(cmd.task), " measurements for target ", target,
        " with their kernel graphs (run mltune collect --target ", cmd.target, " --task ", cmd.task,
        " --db ", cmd.db, " FILES first",
        (cmd.task == "fusion" && target == "cpu" && !cmd.no_in_module
             ? ", or let mltuned search fusion with this store: it logs each plan's kernel times"
             : ""),
        ")"));
  }
  out << absl::StrFormat("%d measurements of %d kernels from %d programs (%d unreadable skipped)",
                         data->rows.size(), data->kernels.size(),
                         std::set<std::string>(data->programs.begin(), data->programs.end()).size(),
                         data->skipped)
      << (data->too_fast > 0 ? absl::StrFormat("; %d kernels faster than --min-seconds %g left out",
                                               data->too_fast, cmd.min_seconds)
                             : "")
      << "\n";
  if (const int64_t synthetic = std::count(data->synthetic.begin(), data->synthetic.end(), true);
      synthetic > 0) {
    std::set<std::string> synthetic_programs;
    for (size_t k = 0; k < data->kernels.size(); ++k) {
      if (data->synthetic[k]) synthetic_programs.insert(data->programs[k]);
    }
    out << absl::StrFormat(
        "%d of the kernels come from %d synthetic programs (mltune synthesize): they always "
        "train, test kernels come from the other programs\n",
        synthetic, synthetic_programs.size());
  }
  if (const int64_t in_module = std::count(data->in_module.begin(), data->in_module.end(), true);
      in_module > 0 || data->in_module_too_fast > 0) {
    out << absl::StrFormat(
        "%d of the kernels were timed only inside the daemon's fusion runs (%s): they train, "
        "tests are of kernels timed alone",
        in_module, opt::fusion::kFusionKernelInModuleTask);
    if (data->in_module_too_fast > 0) {
      out << absl::StrFormat("; %d more under --in-module-min-seconds %g left out",
                             data->in_module_too_fast, cmd.in_module_min_seconds);
    }
    out << "\n";
  }
  learned::ModelOptions options;
  options.vocabulary_size = features::OpcodeVocabularySize();
  options.hidden_dim = cmd.hidden;
  options.sage_layers = cmd.layers;
  options.sum_readout = cmd.readout == "mean-max-sum";
  options.linear_skip = cmd.absolute_skip == "linear";
  options.node_time_sum = absolute_head == "node-sum";
  options.transformer_layers = cmd.transformer_layers;
  options.relative_error_weight = mape_weight;
  options.dropout = cmd.dropout;
  options.weight_decay = cmd.weight_decay;
  options.weight_pairs_by_gap = cmd.pair_weights == "gap";
  options.min_pair_ratio = cmd.min_pair_ratio;
  options.listwise_temperature = cmd.listwise_temperature;
  if (cmd.node_features > 0) options.node_features = cmd.node_features;
  if (cmd.kernel_features > 0) options.kernel_features = cmd.kernel_features;
  options.ensemble = cmd.ensemble;
  options.epochs = cmd.epochs;
  options.seed = cmd.seed;
  options.loss = *loss;

  // A test store is read before the cross-validations and training, so a bad one fails at once.
  std::optional<Data> test_data;
  if (!cmd.test_db.empty()) {
    absl::StatusOr<std::unique_ptr<storage::Store>> test_store =
        storage::Store::Open(cmd.test_db, storage::StoreOptions{.must_exist = true});
    if (!test_store.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--test-db: ", test_store.status().message()));
    }
    absl::StatusOr<Data> read = ReadData(**test_store, cmd.task, target, cmd.min_seconds,
                                         /*in_module_min_seconds=*/-1, err);
    if (!read.ok()) {
      return absl::InternalError(
          absl::StrCat("reading --test-db ", cmd.test_db, ": ", read.status().message()));
    }
    if (read->rows.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--test-db ", cmd.test_db, " holds no ", LogTask(cmd.task),
                       " measurements for target ", target, " with their kernel graphs"));
    }
    test_data = *std::move(read);
  }
  json metrics = json::array();
  if (!cmd.no_eval) {
    absl::StatusOr<json> evaluated =
        EvaluateSplits(*data, cmd, options, target, predictions.get(), out);
    if (!evaluated.ok()) {
      return absl::InternalError(absl::StrCat(evaluated.status().message()));
    }
    metrics = *std::move(evaluated);
  }

  if (predictions != nullptr) {
    predictions->flush();
    if (!*predictions) {
      return absl::InvalidArgumentError(
          absl::StrCat("writing --predictions ", cmd.predictions, " failed"));
    }
    out << "per-kernel predictions of the cross-validations' test kernels"
        << (test_data.has_value() ? " (and of the test store's, after training)" : "")
        << " written to " << cmd.predictions << "\n";
  }
  const std::string name = opt::guided::CostModelName(cmd.task, target);
  json gate;  // null without --gate
  if (cmd.gate) {
    absl::StatusOr<json> verdict = RunGate(**store, *data, cmd, options, name, out);
    if (!verdict.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--gate: ", verdict.status().message()));
    }
    gate = *std::move(verdict);
    if (!gate["passed"].get<bool>()) {
      out << name << " not stored: the retrained model lost to the stored one\n";
      TrainingOutcome rejected;
      rejected.model = name;
      rejected.gate_rejected = true;
      return rejected;
    }
  }
  TrainingOutcome outcome;
  outcome.model = name;
  if (cmd.no_store && !test_data.has_value()) return outcome;
  // The runtime spread model the relative-error point uses, fitted where an unseen program's
  // kernels were predicted (the held-out split), else on random kernels.
  for (const char* split : {"held-out programs", "random kernels"}) {
    auto m = std::find_if(metrics.begin(), metrics.end(), [&](const json& j) {
      return j.value("split", "") == split && j.contains("spread_floor");
    });
    if (m == metrics.end()) continue;
    options.spread_floor = (*m)["spread_floor"].get<double>();
    options.spread_scale = (*m)["spread_scale"].get<double>();
    break;
  }
  // The stored model learns from every measurement, the gate's held-out kernels too: the gate
  // judged the recipe and the data, not these weights.
  std::vector<size_t> all(data->rows.size());
  std::iota(all.begin(), all.end(), 0);
  absl::StatusOr<std::unique_ptr<learned::LearnedModel>> model =
      learned::LearnedModel::Create(options);
  if (!model.ok()) {
    return absl::InternalError(absl::StrCat(model.status().message()));
  }
  absl::StatusOr<learned::TrainReport> trained = (*model)->Train(Samples(*data, all, cmd));
  if (!trained.ok()) {
    return absl::InternalError(absl::StrCat("training: ", trained.status().message()));
  }
  for (const learned::EpochReport& e : trained->epochs) {
    outcome.curve.push_back({.epoch = e.epoch,
                             .loss = e.loss,
                             .mse = e.mse_loss,
                             .rank = e.rank_loss,
                             .seconds = e.seconds});
  }
  if (test_data.has_value()) {
    if (absl::Status s =
            TestOnStore(**model, *data, *test_data, cmd.test_db, out, predictions.get());
        !s.ok()) {
      return absl::InternalError(absl::StrCat("testing on ", cmd.test_db, ": ", s.message()));
    }
  }
  if (cmd.no_store) return outcome;
  json meta = {{"task", cmd.task},
               {"target", target},
               {"measurements", data->rows.size()},
               {"kernels", data->kernels.size()},
               {"loss", std::string(learned::LossName(options.loss))},
               {"absolute_head", absolute_head},
               {"transformer_layers", cmd.transformer_layers},
               {"mape_weight", mape_weight},
               {"dropout", cmd.dropout},
               {"weight_decay", cmd.weight_decay},
               {"listwise_temperature", cmd.listwise_temperature},
               {"real_weight", cmd.real_weight},
               {"node_features", options.node_features},
               {"kernel_features", options.kernel_features},
               {"kernel_weights", cmd.kernel_weights},
               {"epochs", options.epochs},
               {"min_seconds", cmd.min_seconds},
               {"recipe", TrainingRecipe(cmd, loss_name)},
               {"metrics", metrics}};
  if (!gate.is_null()) meta["gate"] = gate;
  const std::string checkpoint = (*model)->Save();
  absl::StatusOr<int64_t> version = (*store)->PutModelNextVersion(name, checkpoint, meta.dump());
  if (!version.ok()) {
    return absl::InternalError(
        absl::StrCat("cannot store the model in ", cmd.db, ": ", version.status().message()));
  }
  out << absl::StrFormat("stored %s version %d (%d bytes) in %s\n", name, *version,
                         checkpoint.size(), cmd.db);
  outcome.version = *version;
  return outcome;
}

}  // namespace mltune::opt::cost_model_training
