// End-to-end latency of whole modules on the CPU backend: every module of the shared HLO corpus
// that the backend runs, and a 3-layer MLP that also exists in PyTorch.
//
//   build/release/bench/cpu_models [--corpus DIR] [--threads 1] [--budget 8] [--seconds 0.2]
//                                  [--rounds 3] [--json] [--no-torch] [--coverage]
//   build/release/bench/cpu_models --zoo [--zoo-models a,b] [--zoo-batches 1,8] [--seconds 2]
//                                  [--check] [--zoo-tune-budget N] [--zoo-train]
//                                  (bench/zoo_models.h)
//
// For each corpus module: XLA's default cpu pipeline (as the daemon runs it), then
// backends::cpu::CheckSupported (rejected modules are counted and their reasons listed), the
// default compile checked against the reference evaluator on seeded random inputs, the module
// timed with the compiler's default kernel parameters (untuned) and with parameters tuned by
// CpuTileProblem (tuned, a small budget), and the tuned compile checked against the evaluator too.
// The MLP (batch 64, 784-512-512-10, ReLU) goes the same way and is also timed in PyTorch eager
// (bench/peers/torch_ops.py, kind "mlp") at the same thread count.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_backend.h"
#include "bench/cpu_bench_util.h"
#include "bench/zoo_models.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "nlohmann/json.hpp"

namespace {

namespace fs = std::filesystem;
using namespace mltune;
namespace cpu = backends::cpu;
using nlohmann::json;

std::vector<std::string> CorpusFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    for (const char* ext : {".txt", ".hlo", ".txt.gz", ".hlo.gz"}) {
      const std::string x = ext;
      if (name.size() > x.size() && name.compare(name.size() - x.size(), x.size(), x) == 0) {
        files.push_back(e.path().string());
        break;
      }
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A 3-layer MLP as JAX writes it: dot, bias broadcast, add, ReLU (maximum with zeros).
std::string MlpHlo(int64_t batch, const std::vector<int64_t>& sizes) {
  std::string params, body;
  std::string h = "x";
  params += absl::StrFormat("  x = f32[%d,%d] parameter(0)\n", batch, sizes[0]);
  int p = 1;
  for (size_t l = 0; l + 1 < sizes.size(); ++l) {
    const int64_t in = sizes[l], out = sizes[l + 1];
    params += absl::StrFormat("  w%d = f32[%d,%d] parameter(%d)\n", l, in, out, p++);
    params += absl::StrFormat("  b%d = f32[%d] parameter(%d)\n", l, out, p++);
    body += absl::StrFormat(
        "  d%d = f32[%d,%d] dot(%s, w%d), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n", l,
        batch, out, h, l);
    body +=
        absl::StrFormat("  bb%d = f32[%d,%d] broadcast(b%d), dimensions={1}\n", l, batch, out, l);
    const bool last = l + 2 == sizes.size();
    body += absl::StrFormat("  %sy%d = f32[%d,%d] add(d%d, bb%d)\n", last ? "ROOT " : "", l, batch,
                            out, l, l);
    if (!last) {
      body += absl::StrFormat("  z%d = f32[%d,%d] broadcast(zero), dimensions={}\n", l, batch, out);
      body += absl::StrFormat("  h%d = f32[%d,%d] maximum(y%d, z%d)\n", l, batch, out, l, l);
      h = absl::StrCat("h", l);
    }
  }
  return absl::StrCat("HloModule mlp\nENTRY e {\n", params, "  zero = f32[] constant(0)\n", body,
                      "}\n");
}

struct Row {
  std::string name;
  int64_t ops = 0;  // entry instructions after the pipeline
  int64_t kernels = 0;
  std::string check;        // default compile vs evaluator: "match", "MISMATCH", "error"
  std::string check_error;  // its message
  std::string tuned_check;
  std::string tuned_check_error;
  double untuned_s = -1, tuned_s = -1;
  bench::TuneOutcome tune;
  std::string error;  // compile / measure / tuning failure
  double torch_s = -1;
};

std::string Us(double seconds) {
  if (!(seconds > 0)) return "-";
  const double us = seconds * 1e6;
  if (us >= 100) return absl::StrFormat("%.0f", us);
  if (us >= 1) return absl::StrFormat("%.3g", us);
  return absl::StrFormat("%.3f", us);
}

// The backend's own check, as its tests use it: relative 1e-4 + absolute 1e-5, and elements
// outside that within 8x their rounding spread ("match~spread": ill-conditioned outputs, such as
// large sums cancelling to small ones, where summing in another order moves the result).
std::string Check(const ir::Module& module, const cpu::CompiledModule& compiled, uint64_t seed,
                  const cpu::MeasureOptions& measure, std::string* error) {
  int64_t ill_conditioned = 0;
  absl::Status s =
      cpu::CheckAgainstEvaluator(module, compiled, seed, measure, {}, nullptr, &ill_conditioned);
  if (s.ok() && ill_conditioned == 0) return "match";
  if (s.ok()) {
    *error = absl::StrCat(ill_conditioned,
                          " element(s) outside 1e-4/1e-5, within 8x their rounding spread");
    return "match~spread";
  }
  *error = std::string(s.message());
  return s.code() == absl::StatusCode::kDataLoss ? "MISMATCH" : "error";
}

// Runs one prepared module: default compile and its evaluator check, tuning, tuned compile and its
// check, then `rounds` alternating timings of both (each keeps its best round).
void RunModule(const ir::Module& module, Row& row, const bench::TuneOptions& tune,
               const cpu::MeasureOptions& measure, int rounds, bool coverage_only) {
  row.ops = module.entry()->instruction_count();
  absl::StatusOr<cpu::CompiledModule> compiled = cpu::CompileModule(module);
  if (!compiled.ok()) {
    row.error = absl::StrCat("default compile: ", compiled.status().message());
    return;
  }
  row.kernels = static_cast<int64_t>(compiled->lowered.kernels.size());
  row.check = Check(module, *compiled, tune.seed, measure, &row.check_error);
  if (coverage_only) return;
  absl::StatusOr<bench::TuneOutcome> tuned = bench::TuneKernels(compiled->lowered, tune);
  if (!tuned.ok()) {
    row.error = absl::StrCat("tuning: ", tuned.status().message());
    return;
  }
  row.tune = *tuned;
  absl::StatusOr<cpu::CompiledModule> tc = cpu::CompileModule(module, tuned->configs);
  if (!tc.ok()) {
    row.error = absl::StrCat("tuned compile: ", tc.status().message());
    return;
  }
  row.tuned_check = Check(module, *tc, tune.seed, measure, &row.tuned_check_error);
  for (int round = 0; round < rounds; ++round) {
    absl::StatusOr<cpu::Timing> u =
        cpu::Measure(compiled->object, compiled->program, tune.seed, measure);
    if (!u.ok()) {
      row.error = absl::StrCat("untuned measure: ", u.status().message());
      return;
    }
    absl::StatusOr<cpu::Timing> t = cpu::Measure(tc->object, tc->program, tune.seed, measure);
    if (!t.ok()) {
      row.error = absl::StrCat("tuned measure: ", t.status().message());
      return;
    }
    if (row.untuned_s < 0 || u->median_s < row.untuned_s) row.untuned_s = u->median_s;
    if (row.tuned_s < 0 || t->median_s < row.tuned_s) row.tuned_s = t->median_s;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Whole modules on the CPU backend: corpus modules and an MLP, untuned vs tuned"};
  const char* env = std::getenv("MLTUNE_CORPUS_DIR");
  // The build's corpus (CMake's MLTUNE_CORPUS_DIR, by default ../shared/corpus next to the source
  // tree), unless $MLTUNE_CORPUS_DIR says otherwise, as for the tests.
  std::string corpus = (fs::path(env != nullptr ? env : MLTUNE_CORPUS_DIR) / "hlo").string();
  int threads = 1;
  double seconds = 0.2;
  double tune_seconds = 0.02;
  int64_t budget = 8;
  std::string strategy = "annealing";
  uint64_t seed = 0;
  bool as_json = false;
  bool no_torch = false;
  bool coverage_only = false;
  int rounds = 3;
  std::string python = "/usr/bin/python3";
  std::string torch_script = (fs::path(MLTUNE_SOURCE_DIR) / "bench/peers/torch_ops.py").string();
  app.add_option("--corpus", corpus,
                 "Folder of HLO modules (default: $MLTUNE_CORPUS_DIR/hlo, else the build's "
                 "corpus, ../shared/corpus/hlo next to the source tree)");
  app.add_option("--threads", threads, "Threads (OMP) for mltune and PyTorch")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds, "Cap on the timed seconds of each module measurement");
  app.add_option("--rounds", rounds, "Timing rounds (untuned and tuned alternate; best kept)")
      ->check(CLI::PositiveNumber);
  app.add_option("--tune-seconds", tune_seconds, "Cap per kernel measurement during tuning");
  app.add_option("--budget", budget, "Tuning steps per module");
  app.add_option("--strategy", strategy, "Search strategy (opt::StrategyRegistry)");
  app.add_option("--seed", seed, "Search and input seed");
  app.add_flag("--json", as_json, "Print JSON instead of markdown tables");
  app.add_flag("--no-torch", no_torch, "Skip the PyTorch peer");
  app.add_flag("--coverage", coverage_only,
               "Corpus coverage only: compile each module with the defaults and check it against "
               "the evaluator, no tuning or timing");
  app.add_option("--python", python, "Interpreter that imports torch");
  app.add_option("--torch-script", torch_script, "bench/peers/torch_ops.py");
  bench::ZooBenchOptions zoo;
  zoo.zoo = (fs::path(MLTUNE_SOURCE_DIR) / "models").string();
  zoo.python = (fs::path(MLTUNE_SOURCE_DIR) / "build/peers-venv/bin/python").string();
  zoo.peers_script = (fs::path(MLTUNE_SOURCE_DIR) / "bench/peers/models.py").string();
  bool use_zoo = false;
  app.add_flag("--zoo", use_zoo,
               "The zoo's inference models (models/) beside the peers of bench/peers/models.py, "
               "instead of the corpus");
  app.add_option("--zoo-dir", zoo.zoo, "The zoo (manifest.json, hlo/)");
  app.add_option("--zoo-models", zoo.models, "Zoo models (default: all)")->delimiter(',');
  app.add_option("--zoo-role", zoo.role,
                 "Zoo: only the manifest's models of this role (fit: the defaults were fitted on "
                 "them; report: held out)");
  app.add_option("--zoo-batches", zoo.batches, "Zoo batch sizes")->delimiter(',');
  app.add_option("--zoo-peers", zoo.peers, "Peers (default: all of models.py)")->delimiter(',');
  app.add_option("--peers-python", zoo.python, "The peers venv's interpreter");
  app.add_flag("--check", zoo.check, "Zoo: check each compile against the reference evaluator");
  app.add_option("--zoo-tune-budget", zoo.tune_budget,
                 "Zoo: tuning steps per model (0: default kernels only)");
  app.add_flag("--zoo-train", zoo.train, "Zoo: also the training steps (mltune only)");
  app.add_flag("--zoo-tune-train", zoo.tune_train, "Zoo: tune the training steps too");
  app.add_flag("--zoo-concurrent-peers", zoo.concurrent_peers,
               "Zoo: run the peers on the last CPU while mltune runs on the first");
  CLI11_PARSE(app, argc, argv);
  if (use_zoo) {
    zoo.threads = threads;
    zoo.seconds = seconds;
    zoo.as_json = as_json;
    return bench::RunZooModels(zoo);
  }

  cpu::MeasureOptions measure;
  measure.threads = threads;
  measure.max_seconds = seconds;
  const bench::TuneOptions tune =
      bench::MakeTuneOptions(threads, seconds, tune_seconds, budget, strategy, seed);

  std::vector<Row> rows;
  std::vector<std::pair<std::string, std::string>> skipped;  // (module, reason)
  std::vector<std::pair<std::string, std::string>> broken;   // parse/pipeline errors
  std::error_code ec;
  const bool have_corpus = fs::is_directory(corpus, ec);
  bench::TorchPeerResult torch;
  if (no_torch) torch.error = "skipped (--no-torch)";
  std::vector<std::string> files;
  if (have_corpus) {
    files = CorpusFiles(corpus);
  } else {
    std::cerr << "corpus not found at " << corpus
              << ": skipping the corpus modules (pass --corpus DIR or set MLTUNE_CORPUS_DIR)\n";
  }
  for (const std::string& file : files) {
    const std::string name = fs::relative(file, corpus, ec).string();
    absl::StatusOr<std::unique_ptr<ir::Module>> parsed = ir::ParseHloFile(file);
    if (!parsed.ok()) {
      broken.emplace_back(name, absl::StrCat("parse: ", parsed.status().message()));
      continue;
    }
    absl::StatusOr<std::unique_ptr<ir::Module>> module = bench::PrepareForCpu(**parsed);
    if (!module.ok()) {
      if (module.status().code() == absl::StatusCode::kUnimplemented) {
        skipped.emplace_back(name, std::string(module.status().message()));
      } else {
        broken.emplace_back(name, std::string(module.status().message()));
      }
      continue;
    }
    std::cerr << "[" << name << "]\n";
    Row row;
    row.name = name;
    RunModule(**module, row, tune, measure, rounds, coverage_only);
    std::cerr << "  " << (row.error.empty() ? "" : row.error + "; ") << "check " << row.check
              << ", untuned " << Us(row.untuned_s) << " us, tuned " << Us(row.tuned_s) << " us\n";
    rows.push_back(std::move(row));
  }
  const size_t corpus_rows = rows.size();

  // The MLP, also in PyTorch.
  const int64_t batch = 64;
  const std::vector<int64_t> sizes = {784, 512, 512, 10};
  {
    absl::StatusOr<std::unique_ptr<ir::Module>> parsed =
        bench::ParseAndVerify(MlpHlo(batch, sizes), "mlp");
    if (!parsed.ok()) {
      std::cerr << "error: " << parsed.status().message() << "\n" << MlpHlo(batch, sizes);
      return 1;
    }
    Row row;
    row.name = "mlp 64x784-512-512-10 (generated)";
    absl::StatusOr<std::unique_ptr<ir::Module>> module = bench::PrepareForCpu(**parsed);
    if (!module.ok()) {
      row.error = absl::StrCat("pipeline/CheckSupported: ", module.status().message());
    } else {
      std::cerr << "[mlp]\n";
      RunModule(**module, row, tune, measure, rounds, coverage_only);
    }
    if (!no_torch) {
      json specs =
          json::array({json{{"name", "mlp"}, {"kind", "mlp"}, {"batch", batch}, {"sizes", sizes}}});
      // As many runs as mltune's timing rounds, the best kept, like mltune's.
      for (int round = 0; round < rounds; ++round) {
        torch = bench::RunTorchPeer(python, torch_script, threads, seconds, specs);
        if (!torch.ok) break;
        const double s = torch.results["mlp"].value("alloc_s", -1.0);
        if (s > 0 && (row.torch_s < 0 || s < row.torch_s)) row.torch_s = s;
      }
      if (torch.ok) {
        std::cerr << torch.blas_line << "\n";
      } else {
        std::cerr << "PyTorch peer unavailable: " << torch.error << "\n";
      }
    }
    rows.push_back(std::move(row));
  }

  int matches = 0, loose = 0, mismatches = 0, check_errors = 0, tuned_loose = 0, tuned_bad = 0;
  std::vector<double> speedups;
  for (const Row& r : rows) {
    if (r.check == "match") ++matches;
    if (r.check == "match~spread") ++loose;
    if (r.check == "MISMATCH") ++mismatches;
    if (r.check == "error") ++check_errors;
    if (r.tuned_check == "match~spread") ++tuned_loose;
    if (r.tuned_check == "MISMATCH" || r.tuned_check == "error") ++tuned_bad;
    if (r.untuned_s > 0 && r.tuned_s > 0) speedups.push_back(r.untuned_s / r.tuned_s);
  }

  if (as_json) {
    json out;
    out["corpus"] = have_corpus ? json(corpus) : json(nullptr);
    out["threads"] = threads;
    out["budget"] = budget;
    json list = json::array();
    for (const Row& r : rows) {
      json j{{"module", r.name},
             {"ops", r.ops},
             {"kernels", r.kernels},
             {"check", r.check},
             {"tuned_check", r.tuned_check}};
      if (!r.check_error.empty()) j["check_error"] = r.check_error;
      if (!r.tuned_check_error.empty()) j["tuned_check_error"] = r.tuned_check_error;
      if (!r.error.empty()) j["error"] = r.error;
      if (r.untuned_s > 0) j["untuned_s"] = r.untuned_s;
      if (r.tuned_s > 0) j["tuned_s"] = r.tuned_s;
      if (r.torch_s > 0) j["torch_s"] = r.torch_s;
      j["tune_steps"] = r.tune.steps;
      j["tuned_pick"] = r.tune.chosen;
      list.push_back(j);
    }
    out["modules"] = list;
    json sk = json::array();
    for (const auto& [m, why] : skipped) sk.push_back({{"module", m}, {"reason", why}});
    out["unsupported"] = sk;
    json br = json::array();
    for (const auto& [m, why] : broken) br.push_back({{"module", m}, {"error", why}});
    out["errors"] = br;
    out["geomean_tuned_vs_untuned"] = bench::GeoMean(speedups);
    std::cout << out.dump(1) << "\n";
    return 0;
  }

  std::cout << "## mltune CPU backend on whole modules (" << threads << " thread"
            << (threads > 1 ? "s" : "") << ", tuning budget " << budget << " steps of " << strategy
            << " per module; tuned pick: the fastest whole module among the search's best, the "
               "defaults and the all-oneDNN seed)\n\n";
  if (have_corpus) {
    std::cout << "Corpus " << corpus << ": " << files.size() << " modules, " << corpus_rows
              << " run by the backend, " << skipped.size() << " rejected by CheckSupported"
              << (broken.empty() ? "" : absl::StrCat(", ", broken.size(), " failed earlier"))
              << ".\n\n";
  } else {
    std::cout << "Corpus not found at " << corpus << ": corpus modules skipped.\n\n";
  }
  std::cout << "Timings: best of " << rounds << " rounds (untuned and tuned alternating; PyTorch "
            << rounds << " runs of bench/peers/torch_ops.py). PyTorch peer: "
            << (torch.ok ? torch.blas_line : absl::StrCat("not available: ", torch.error))
            << "\n\n";
  std::cout
      << "| module | ops | kernels | default vs evaluator | tuned vs evaluator | tuned pick | "
         "untuned us | tuned us | tuned vs untuned | PyTorch us | vs PyTorch |\n"
         "|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|\n";
  for (const Row& r : rows) {
    std::cout << "| " << r.name << " | " << r.ops << " | " << r.kernels << " | "
              << (r.check.empty() ? "-" : r.check) << " | "
              << (r.tuned_check.empty() ? "-" : r.tuned_check) << " | "
              << (r.tuned_s > 0 ? r.tune.chosen : "-") << " | " << Us(r.untuned_s) << " | "
              << Us(r.tuned_s) << " | "
              << bench::Ratio(r.tuned_s > 0 ? r.untuned_s / r.tuned_s : -1) << " | "
              << Us(r.torch_s) << " | "
              << bench::Ratio(r.tuned_s > 0 && r.torch_s > 0 ? r.torch_s / r.tuned_s : -1)
              << " |\n";
  }
  std::cout << absl::StrFormat(
      "\n- default compile vs evaluator (seeded inputs in [-1, 1)): %d match, %d match with "
      "ill-conditioned elements within their rounding spread, %d mismatch, %d error (of %d "
      "run)\n",
      matches, loose, mismatches, check_errors, rows.size());
  std::cout << absl::StrFormat(
      "- tuned compile vs evaluator: %d match with ill-conditioned elements within their "
      "rounding spread, %d mismatch or error\n",
      tuned_loose, tuned_bad);
  std::cout << absl::StrFormat("- geomean tuned vs untuned: %s over %d modules\n",
                               bench::Ratio(bench::GeoMean(speedups)), speedups.size());

  bool any_problem = false;
  for (const Row& r : rows) {
    if (r.error.empty() && r.check_error.empty() && r.tuned_check_error.empty()) continue;
    if (!any_problem) std::cout << "\n### failures, mismatches and ill-conditioned elements\n\n";
    any_problem = true;
    if (!r.error.empty()) std::cout << "- " << r.name << ": " << r.error << "\n";
    if (!r.check_error.empty())
      std::cout << "- " << r.name << " (default): " << r.check_error << "\n";
    if (!r.tuned_check_error.empty()) {
      std::cout << "- " << r.name << " (tuned): " << r.tuned_check_error << "\n";
    }
  }
  if (!skipped.empty()) {
    std::map<std::string, int> reasons;
    for (const auto& [m, why] : skipped) {
      // "cpu backend: <opcode> '<name>' (line N): <reason>": grouped by opcode and reason.
      std::string key = why;
      const std::string prefix = "cpu backend: ";
      if (key.rfind(prefix, 0) == 0) key = key.substr(prefix.size());
      const size_t q1 = key.find('\''), q2 = q1 == std::string::npos ? q1 : key.find('\'', q1 + 1);
      const size_t colon = q2 == std::string::npos ? q2 : key.find(": ", q2);
      if (q1 != std::string::npos && colon != std::string::npos) {
        key = absl::StrCat(key.substr(0, q1), "-> ", key.substr(colon + 2));
      }
      ++reasons[bench::OneLine(key, 100)];
    }
    std::cout << "\n### rejected by CheckSupported (" << skipped.size() << " modules)\n\n"
              << "| modules | reason |\n|---:|---|\n";
    std::vector<std::pair<int, std::string>> sorted;
    for (const auto& [why, n] : reasons) sorted.emplace_back(n, why);
    std::sort(sorted.rbegin(), sorted.rend());
    for (const auto& [n, why] : sorted) std::cout << "| " << n << " | " << why << " |\n";
    std::cout << "\n<details><summary>per module</summary>\n\n";
    for (const auto& [m, why] : skipped)
      std::cout << "- " << m << ": " << bench::OneLine(why) << "\n";
    std::cout << "\n</details>\n";
  }
  if (!broken.empty()) {
    std::cout << "\n### failed before the backend (parse or pipeline)\n\n";
    for (const auto& [m, why] : broken)
      std::cout << "- " << m << ": " << bench::OneLine(why) << "\n";
  }
  return 0;
}
