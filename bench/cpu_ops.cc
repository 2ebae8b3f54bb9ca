// A PerfDojo-like operator suite on the CPU backend: each op is built as HLO text here, run
// through XLA's default cpu pipeline (as the daemon does), compiled with the compiler's default
// kernel parameters (untuned) and with parameters tuned by CpuTileProblem and a search strategy
// (tuned), and timed in the runner child. Peers in the same run: PyTorch eager on the same shapes
// (bench/peers/torch_ops.py, Debian's python3-torch, same thread count) and, for matmul, oneDNN's
// sgemm called directly and the measured FP32 peak (bench/peers/onednn_peer.h); for the ResNet-50
// convolutions, oneDNN's sgemm on the GEMM their im2col form amounts to.
//
//   build/release/bench/cpu_ops [--threads 1] [--seconds 0.3] [--budget 24] [--ops a,b]
//                               [--rounds 3] [--strategy annealing] [--json] [--no-torch]
//                               [--print-hlo]
//
// Timing is done in rounds after all tuning: each round times every op untuned and tuned, oneDNN
// on the matmul and conv GEMMs and one PyTorch run over all ops; every cell keeps its best round
// (this machine is shared, and load from other processes should hit a round, not one contender).
//
// --ops takes op names or group prefixes ("matmul" = every matmul_N, "conv" = every ResNet-50
// layer). Prints markdown tables: per op untuned/tuned/PyTorch milliseconds and speed-ups with
// their geometric means, matmul against oneDNN and the peak, and what the tuning did.
#include <algorithm>
#include <cmath>
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
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_backend.h"
#include "bench/cpu_bench_util.h"
#include "bench/op_suite.h"
#include "bench/peers/onednn_peer.h"
#include "ir/hlo_printer.h"
#include "nlohmann/json.hpp"

namespace {

using namespace mltune;
namespace cpu = backends::cpu;
using bench::AllOps;
using bench::OpCase;
using nlohmann::json;

// A GEMM kernel's impl parameter value, as the tables show it (backends/cpu/lowering.cc).
std::string ImplName(int64_t impl) {
  switch (impl) {
    case 0:
      return "0 (generated)";
    case 1:
      return "1 (oneDNN sgemm)";
    case 2:
      return "2 (oneDNN conv)";
    case 3:
      return "3 (oneDNN conv, blocked)";
    case 4:
      return "4 (depthwise)";
    case 5:
      return "5 (oneDNN matmul)";
    default:
      return "-";
  }
}

struct Row {
  OpCase op;
  std::string error;  // non-empty: the op did not compile or run
  std::string stage;  // where it failed
  double untuned_s = -1, tuned_s = -1;
  bench::TuneOutcome tune;
  std::vector<std::string> kernels;  // "kind" per kernel
  std::string changes;               // tuned parameters that differ from the defaults
  std::string pick;                  // the module-level choice among the finalists
  bool tuned_is_default = false;     // tuning kept every default: tuned and untuned are the same
  int64_t gemm_impl = -1;            // the tuned GEMM kernel's impl (matmul and conv rows)
  double torch_alloc_s = -1, torch_out_s = -1;
  double onednn_s = -1;
  std::unique_ptr<ir::Module> module;  // after the pipeline
  std::unique_ptr<cpu::CompiledModule> untuned, tuned;
};

// The smaller of a kept minimum and a new value (a negative value means none yet).
void KeepMin(double& kept, double value) {
  if (value > 0 && (kept <= 0 || value < kept)) kept = value;
}

std::string Changes(const cpu::LoweredModule& lowered,
                    const std::vector<cpu::KernelConfig>& configs) {
  std::vector<std::string> parts;
  for (const cpu::Kernel& k : lowered.kernels) {
    const cpu::KernelConfig def = cpu::DefaultConfig(k);
    const cpu::KernelConfig& got = configs[static_cast<size_t>(k.id)];
    std::vector<std::string> changed;
    for (size_t p = 0; p < k.params.size(); ++p) {
      if (got[p] != def[p]) changed.push_back(absl::StrCat(k.params[p].name, "=", got[p]));
    }
    if (!changed.empty()) {
      parts.push_back(absl::StrCat(cpu::KernelKindName(k.kind), " ", k.name, ": ",
                                   absl::StrJoin(changed, ",")));
    }
  }
  return parts.empty() ? "defaults" : absl::StrJoin(parts, "; ");
}

void Fail(Row& row, const std::string& stage, const absl::Status& s) {
  row.stage = stage;
  row.error = std::string(s.message());
  std::cerr << "  " << row.op.name << ": " << stage << " failed: " << s.message() << "\n";
}

// Prepares, tunes and compiles one op (untuned and tuned); the timing is done later, in rounds.
void TuneOp(Row& row, const bench::TuneOptions& tune, bool print_hlo) {
  absl::StatusOr<std::unique_ptr<ir::Module>> parsed =
      bench::ParseAndVerify(row.op.hlo, row.op.name);
  if (!parsed.ok()) {
    // The HLO is generated here: a parse or verifier error is a bug in this file.
    std::cerr << "error: " << row.op.name << ": " << parsed.status().message() << "\n"
              << row.op.hlo;
    std::exit(1);
  }
  absl::StatusOr<std::unique_ptr<ir::Module>> module = bench::PrepareForCpu(**parsed);
  if (!module.ok()) return Fail(row, "pipeline/CheckSupported", module.status());
  row.module = *std::move(module);
  if (print_hlo) std::cerr << ir::PrintModule(*row.module);
  absl::StatusOr<cpu::CompiledModule> untuned = cpu::CompileModule(*row.module);
  if (!untuned.ok()) return Fail(row, "untuned compile", untuned.status());
  row.untuned = std::make_unique<cpu::CompiledModule>(*std::move(untuned));
  const cpu::LoweredModule& lowered = row.untuned->lowered;
  for (const cpu::Kernel& k : lowered.kernels) row.kernels.push_back(cpu::KernelKindName(k.kind));
  absl::StatusOr<bench::TuneOutcome> tuned = bench::TuneKernels(lowered, tune);
  if (!tuned.ok()) return Fail(row, "tuning", tuned.status());
  row.tune = *tuned;
  row.changes = Changes(lowered, tuned->configs);
  std::vector<std::string> timed;
  for (const auto& [name, secs] : tuned->finalists) {
    timed.push_back(absl::StrCat(name, " ", bench::Ms(secs)));
  }
  row.pick = timed.empty() ? absl::StrCat(tuned->chosen, " (the only finalist)")
                           : absl::StrCat(tuned->chosen, " (", absl::StrJoin(timed, ", "), ")");
  if (tuned->searched_configs != tuned->configs) {
    row.pick += absl::StrCat("; the search's best: ", Changes(lowered, tuned->searched_configs));
  }
  row.tuned_is_default = true;
  for (const cpu::Kernel& k : lowered.kernels) {
    row.tuned_is_default &= tuned->configs[static_cast<size_t>(k.id)] == cpu::DefaultConfig(k);
  }
  for (const cpu::Kernel& k : lowered.kernels) {
    if (k.kind == cpu::KernelKind::kDot || k.kind == cpu::KernelKind::kConvolution) {
      row.gemm_impl = bench::ParamValue(k, tuned->configs[static_cast<size_t>(k.id)], "impl");
    }
  }
  absl::StatusOr<cpu::CompiledModule> t = cpu::CompileModule(*row.module, tuned->configs);
  if (!t.ok()) return Fail(row, "tuned compile", t.status());
  row.tuned = std::make_unique<cpu::CompiledModule>(*std::move(t));
}

// One timing round of one op: untuned, then tuned, each a full Measure; keeps the minima.
void MeasureOp(Row& row, const cpu::MeasureOptions& measure, uint64_t seed) {
  if (!row.error.empty() || row.tuned == nullptr) return;
  absl::StatusOr<cpu::Timing> u =
      cpu::Measure(row.untuned->object, row.untuned->program, seed, measure);
  if (!u.ok()) return Fail(row, "untuned measure", u.status());
  absl::StatusOr<cpu::Timing> t =
      cpu::Measure(row.tuned->object, row.tuned->program, seed, measure);
  if (!t.ok()) return Fail(row, "tuned measure", t.status());
  KeepMin(row.untuned_s, u->median_s);
  KeepMin(row.tuned_s, t->median_s);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"CPU operator suite: tuned mltune kernels vs PyTorch eager and oneDNN"};
  int threads = 1;
  double seconds = 0.3;
  double tune_seconds = 0.05;
  int64_t budget = 24;
  std::string strategy = "annealing";
  uint64_t seed = 0;
  std::vector<std::string> only;
  bool as_json = false;
  bool no_torch = false;
  int rounds = 3;
  bool print_hlo = false;
  std::string python = "/usr/bin/python3";
  std::string torch_script =
      (std::filesystem::path(MLTUNE_SOURCE_DIR) / "bench/peers/torch_ops.py").string();
  app.add_option("--threads", threads, "Threads for mltune's kernels and PyTorch (OMP)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", seconds,
                 "Cap on the timed seconds of each final measurement (mltune, PyTorch, oneDNN)");
  app.add_option("--rounds", rounds,
                 "Timing rounds over every contender; each cell reports its best round")
      ->check(CLI::PositiveNumber);
  app.add_flag("--print-hlo", print_hlo, "Print each op's module after the cpu pipeline (stderr)");
  app.add_option("--tune-seconds", tune_seconds, "Cap per kernel measurement during tuning");
  app.add_option("--budget", budget, "Tuning steps (whole-configuration evaluations) per op");
  app.add_option("--strategy", strategy, "Search strategy (opt::StrategyRegistry)");
  app.add_option("--seed", seed, "Search and input seed");
  app.add_option("--ops", only, "Ops or groups to run (e.g. mul,matmul,conv)")->delimiter(',');
  app.add_flag("--json", as_json, "Print JSON instead of markdown tables");
  app.add_flag("--no-torch", no_torch, "Skip the PyTorch peer");
  app.add_option("--python", python, "Interpreter that imports torch");
  app.add_option("--torch-script", torch_script, "bench/peers/torch_ops.py");
  CLI11_PARSE(app, argc, argv);

  std::vector<OpCase> all = AllOps();
  std::vector<Row> rows;
  for (const std::string& want : only) {
    const bool known = std::any_of(all.begin(), all.end(), [&](const OpCase& op) {
      return op.name == want || op.name.rfind(want + "_", 0) == 0;
    });
    if (!known) {
      std::vector<std::string> names;
      for (const OpCase& op : all) names.push_back(op.name);
      std::cerr << "error: unknown op '" << want << "' (known: " << absl::StrJoin(names, ", ")
                << "; or a prefix such as matmul, conv)\n";
      return 2;
    }
  }
  for (const OpCase& op : all) {
    const bool selected =
        only.empty() || std::any_of(only.begin(), only.end(), [&](const std::string& w) {
          return op.name == w || op.name.rfind(w + "_", 0) == 0;
        });
    if (!selected) continue;
    rows.emplace_back();
    rows.back().op = op;
  }

  cpu::MeasureOptions measure;
  measure.threads = threads;
  measure.max_seconds = seconds;
  const bench::TuneOptions tune =
      bench::MakeTuneOptions(threads, seconds, tune_seconds, budget, strategy, seed);

  std::cerr << "mltune: " << rows.size() << " ops, " << threads << " thread(s), budget " << budget
            << " steps (" << strategy << "), kernel cache " << cpu::DefaultKernelCacheDir() << "\n";
  for (Row& row : rows) {
    std::cerr << "[" << row.op.name << "] " << row.op.shape << "\n";
    TuneOp(row, tune, print_hlo);
    if (row.error.empty()) {
      std::cerr << absl::StrFormat("  %d steps, %d kernel configs, %.1f s: %s\n", row.tune.steps,
                                   row.tune.measurements, row.tune.seconds, row.changes);
    }
  }

  // Timing rounds: in each, every op untuned and tuned, oneDNN on the matmuls, PyTorch on every
  // op; each cell keeps its best round, so a burst of load from other processes on this shared
  // machine hits one round, not one contender. Nothing else of ours runs meanwhile.
  const bool any_matmul =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.op.matmul_n > 0; });
  const bool any_gemm =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.op.gemm_m > 0; });
  double peak = 0;
  if (any_gemm) {
    peak = bench::MeasurePeakGflops(1.0);
    std::cerr << absl::StrFormat("measured single-thread FP32 peak: %.1f GFLOP/s\n", peak);
    if (!bench::OneDnnAvailable()) {
      std::cerr << "oneDNN is not linked into this build: no oneDNN column\n";
    }
  }
  bench::TorchPeerResult torch;
  if (no_torch) torch.error = "skipped (--no-torch)";
  json specs = json::array();
  for (const Row& row : rows) specs.push_back(row.op.torch);
  for (int round = 0; round < rounds; ++round) {
    std::cerr << "timing round " << round + 1 << "/" << rounds << ": mltune";
    for (Row& row : rows) MeasureOp(row, measure, seed);
    if (any_gemm && bench::OneDnnAvailable()) {
      std::cerr << ", oneDNN";
      for (Row& row : rows) {
        if (row.op.gemm_m == 0) continue;
        KeepMin(row.onednn_s, bench::OneDnnSgemmSeconds(row.op.gemm_m, row.op.gemm_n, row.op.gemm_k,
                                                        std::max(seconds, 0.2)));
      }
    }
    if (!no_torch && (round == 0 || torch.ok)) {
      std::cerr << ", PyTorch";
      torch = bench::RunTorchPeer(python, torch_script, threads, seconds, specs);
      if (torch.ok) {
        for (Row& row : rows) {
          if (!torch.results.contains(row.op.name)) continue;
          const json& r = torch.results[row.op.name];
          KeepMin(row.torch_alloc_s, r.value("alloc_s", -1.0));
          if (r.contains("out_s") && r["out_s"].is_number()) {
            KeepMin(row.torch_out_s, r["out_s"].get<double>());
          }
        }
      }
    }
    std::cerr << "\n";
  }
  if (torch.ok) {
    std::cerr << torch.blas_line << "\n";
  } else {
    std::cerr << "PyTorch peer unavailable: " << torch.error << "\n";
  }

  // Ratios and geometric means.
  std::vector<double> vs_alloc, vs_best, tuned_vs_untuned;
  for (const Row& r : rows) {
    if (r.tuned_s <= 0) continue;
    if (r.untuned_s > 0) tuned_vs_untuned.push_back(r.untuned_s / r.tuned_s);
    if (r.torch_alloc_s > 0) {
      vs_alloc.push_back(r.torch_alloc_s / r.tuned_s);
      const double best =
          r.torch_out_s > 0 ? std::min(r.torch_alloc_s, r.torch_out_s) : r.torch_alloc_s;
      vs_best.push_back(best / r.tuned_s);
    }
  }
  const double peak_all = peak * threads;

  if (as_json) {
    json out;
    out["threads"] = threads;
    out["budget"] = budget;
    out["strategy"] = strategy;
    out["peak_gflops_per_thread"] = peak;
    out["torch"] = torch.ok ? json(torch.blas_line) : json(nullptr);
    if (!torch.ok) out["torch_error"] = torch.error;
    json list = json::array();
    for (const Row& r : rows) {
      json j{{"op", r.op.name}, {"shape", r.op.shape}};
      if (!r.error.empty()) {
        j["error"] = r.error;
        j["stage"] = r.stage;
      }
      auto num = [](double v) { return v > 0 ? json(v) : json(nullptr); };
      j["untuned_s"] = num(r.untuned_s);
      j["tuned_s"] = num(r.tuned_s);
      j["torch_alloc_s"] = num(r.torch_alloc_s);
      j["torch_out_s"] = num(r.torch_out_s);
      j["tune_steps"] = r.tune.steps;
      j["tune_measurements"] = r.tune.measurements;
      j["tune_seconds"] = r.tune.seconds;
      j["tuned_changes"] = r.changes;
      j["module_pick"] = r.pick;
      j["kernels"] = r.kernels;
      if (r.gemm_impl >= 0) j["gemm_impl"] = r.gemm_impl;
      if (r.op.flops > 0 && r.tuned_s > 0) j["tuned_gflops"] = r.op.flops / r.tuned_s * 1e-9;
      if (r.onednn_s > 0) j["onednn_s"] = r.onednn_s;
      list.push_back(j);
    }
    out["ops"] = list;
    out["geomean_vs_torch_alloc"] = bench::GeoMean(vs_alloc);
    out["geomean_vs_torch_best"] = bench::GeoMean(vs_best);
    out["geomean_tuned_vs_untuned"] = bench::GeoMean(tuned_vs_untuned);
    std::cout << out.dump(1) << "\n";
    return 0;
  }

  std::cout << "## mltune CPU operator suite (" << threads << " thread" << (threads > 1 ? "s" : "")
            << ", f32, tuning budget " << budget << " steps of " << strategy << " per op)\n\n";
  std::cout
      << "Each op runs through XLA's default cpu pipeline first. untuned: the compiler's "
         "default kernel parameters; tuned: CpuTileProblem searched by "
      << strategy
      << " (seeded with the defaults and with GEMMs and convolutions on oneDNN, kernels timed "
         "alone), then the finalists (defaults, the search's best, the oneDNN seeds) timed "
         "as whole modules and the fastest kept. Timings: best of "
      << rounds
      << " rounds, each round timing every contender once (mltune median per Measure, capped "
      << "at " << seconds << " s; PyTorch median per bench/peers/torch_ops.py run).\n\n";
  if (torch.ok) {
    std::cout << "PyTorch peer: " << torch.blas_line << "\n\n";
  } else {
    std::cout << "PyTorch peer: not available: " << torch.error << "\n\n";
  }
  std::cout
      << "| op | shape | kernels | mltune untuned ms | mltune tuned ms | torch ms | torch out= ms "
         "| tuned vs untuned | vs torch | vs torch out= |\n"
         "|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Row& r : rows) {
    std::map<std::string, int> kinds;
    for (const std::string& k : r.kernels) ++kinds[k];
    std::vector<std::string> kt;
    for (const auto& [k, n] : kinds) kt.push_back(n > 1 ? absl::StrCat(n, " ", k) : k);
    if (!r.error.empty()) {
      std::cout << "| " << r.op.name << " | " << r.op.shape << " | " << absl::StrJoin(kt, ", ")
                << " | FAILED (" << r.stage << ") | | " << bench::Ms(r.torch_alloc_s) << " | "
                << bench::Ms(r.torch_out_s) << " | | | |\n";
      continue;
    }
    std::cout << "| " << r.op.name << " | " << r.op.shape << " | " << absl::StrJoin(kt, ", ")
              << " | " << bench::Ms(r.untuned_s) << " | " << bench::Ms(r.tuned_s)
              << (r.tuned_is_default ? " (=)" : "") << " | " << bench::Ms(r.torch_alloc_s) << " | "
              << bench::Ms(r.torch_out_s) << " | " << bench::Ratio(r.untuned_s / r.tuned_s) << " | "
              << bench::Ratio(r.torch_alloc_s / r.tuned_s) << " | "
              << bench::Ratio(r.torch_out_s > 0 ? r.torch_out_s / r.tuned_s : -1) << " |\n";
  }
  std::cout << "\n(=): tuning kept the compiler's defaults, so tuned and untuned are the same "
               "code; their difference is this machine's timing noise.\n\n";
  std::cout << absl::StrFormat("- geomean tuned vs untuned: %s over %d ops\n",
                               bench::Ratio(bench::GeoMean(tuned_vs_untuned)),
                               tuned_vs_untuned.size());
  if (!vs_alloc.empty()) {
    std::cout << absl::StrFormat(
        "- geomean speed-up over PyTorch eager (allocating, as users run it): %s over %d ops "
        "(target >= 1.5x)\n",
        bench::Ratio(bench::GeoMean(vs_alloc)), vs_alloc.size());
    std::cout << absl::StrFormat(
        "- geomean speed-up over PyTorch's faster variant (min of allocating and out=): %s\n",
        bench::Ratio(bench::GeoMean(vs_best)));
  }

  if (any_matmul) {
    std::cout << "\n### matmul vs oneDNN (dnnl_sgemm called directly, one thread) and the "
                 "measured peak\n\n"
              << absl::StrFormat("Measured FP32 peak: %.1f GFLOP/s per thread", peak)
              << (threads > 1 ? absl::StrFormat(" (x%d threads = %.1f)", threads, peak_all) : "")
              << ".\n\n"
              << "| n | tuned impl | mltune ms | mltune GFLOP/s | % peak | oneDNN ms | oneDNN "
                 "GFLOP/s | mltune / oneDNN speed | within 20% | torch GFLOP/s |\n"
              << "|---:|---|---:|---:|---:|---:|---:|---:|---|---:|\n";
    for (const Row& r : rows) {
      if (r.op.matmul_n == 0) continue;
      const double g = r.tuned_s > 0 ? r.op.flops / r.tuned_s * 1e-9 : -1;
      const double og = r.onednn_s > 0 ? r.op.flops / r.onednn_s * 1e-9 : -1;
      const double tg = r.torch_alloc_s > 0 ? r.op.flops / r.torch_alloc_s * 1e-9 : -1;
      const double rel = (r.tuned_s > 0 && r.onednn_s > 0) ? r.onednn_s / r.tuned_s : -1;
      std::cout << "| " << r.op.matmul_n << " | " << ImplName(r.gemm_impl) << " | "
                << bench::Ms(r.tuned_s) << " | " << (g > 0 ? absl::StrFormat("%.1f", g) : "-")
                << " | "
                << (g > 0 && peak_all > 0 ? absl::StrFormat("%.0f%%", 100 * g / peak_all) : "-")
                << " | " << bench::Ms(r.onednn_s) << " | "
                << (og > 0 ? absl::StrFormat("%.1f", og) : "-") << " | "
                << (rel > 0 ? absl::StrFormat("%.2f", rel) : "-") << " | "
                << (rel > 0 ? (rel >= 1 / 1.2 ? "yes" : "no") : "-") << " | "
                << (tg > 0 ? absl::StrFormat("%.1f", tg) : "-") << " |\n";
    }
    if (threads > 1) {
      std::cout << "\noneDNN is timed on one thread whatever --threads says; compare it at "
                   "--threads 1.\n";
    }
  }

  const bool any_conv = std::any_of(
      rows.begin(), rows.end(), [](const Row& r) { return r.op.gemm_m > 0 && r.op.matmul_n == 0; });
  if (any_conv) {
    std::cout << "\n### ResNet-50 conv2d layers (batch 1): GFLOP/s, and the im2col GEMM alone on "
                 "oneDNN\n\n"
              << "The GEMM column times dnnl_sgemm on the GEMM an im2col convolution amounts to "
                 "(M = output channels, N = output pixels, K = input channels x kernel area), "
                 "without the im2col and layout work; the difference bounds that work's cost.\n\n"
              << "| layer | GEMM MxNxK | tuned impl | mltune ms | mltune GFLOP/s | % peak | oneDNN "
                 "GEMM alone ms | mltune - GEMM ms | torch ms | torch GFLOP/s |\n"
              << "|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const Row& r : rows) {
      if (r.op.gemm_m == 0 || r.op.matmul_n != 0) continue;
      const double g = r.tuned_s > 0 ? r.op.flops / r.tuned_s * 1e-9 : -1;
      const double tg = r.torch_alloc_s > 0 ? r.op.flops / r.torch_alloc_s * 1e-9 : -1;
      std::cout << "| " << r.op.name << " " << r.op.shape << " | " << r.op.gemm_m << "x"
                << r.op.gemm_n << "x" << r.op.gemm_k << " | " << ImplName(r.gemm_impl) << " | "
                << bench::Ms(r.tuned_s) << " | " << (g > 0 ? absl::StrFormat("%.1f", g) : "-")
                << " | "
                << (g > 0 && peak_all > 0 ? absl::StrFormat("%.0f%%", 100 * g / peak_all) : "-")
                << " | " << bench::Ms(r.onednn_s) << " | "
                << (r.tuned_s > 0 && r.onednn_s > 0
                        ? absl::StrFormat("%.3f", (r.tuned_s - r.onednn_s) * 1e3)
                        : "-")
                << " | " << bench::Ms(r.torch_alloc_s) << " | "
                << (tg > 0 ? absl::StrFormat("%.1f", tg) : "-") << " |\n";
    }
  }

  std::cout << "\n### tuning\n\n"
            << "| op | steps | kernel configs measured | tuning s | kernels alone: default ms -> "
               "tuned ms | whole-module pick (finalists' ms) | tuned parameters (vs defaults) |\n"
            << "|---|---:|---:|---:|---|---|---|\n";
  for (const Row& r : rows) {
    if (!r.error.empty() && r.tune.steps == 0) continue;
    std::cout << "| " << r.op.name << " | " << r.tune.steps << " | " << r.tune.measurements << " | "
              << absl::StrFormat("%.1f", r.tune.seconds) << " | "
              << bench::Ms(r.tune.default_kernel_seconds) << " -> "
              << bench::Ms(r.tune.tuned_kernel_seconds) << " | " << r.pick << " | " << r.changes
              << " |\n";
  }

  std::cout << "\n### kernels (each timed alone during tuning: defaults -> the search's best)\n\n"
            << "| op | kernel | kind | default ms | searched ms |\n|---|---|---|---:|---:|\n";
  for (const Row& r : rows) {
    if (r.untuned == nullptr) continue;
    for (const cpu::Kernel& k : r.untuned->lowered.kernels) {
      const size_t i = static_cast<size_t>(k.id);
      if (i >= r.tune.kernel_default_seconds.size()) continue;
      std::cout << "| " << r.op.name << " | " << k.name << " | " << cpu::KernelKindName(k.kind)
                << " | " << bench::Ms(r.tune.kernel_default_seconds[i]) << " | "
                << bench::Ms(r.tune.kernel_searched_seconds[i]) << " |\n";
    }
  }

  bool failed = false;
  for (const Row& r : rows) {
    if (r.error.empty()) continue;
    if (!failed) std::cout << "\n### failures\n\n";
    failed = true;
    std::cout << "- " << r.op.name << " (" << r.stage << "): " << r.error << "\n";
  }
  return failed ? 1 : 0;
}
