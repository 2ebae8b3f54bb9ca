#include "bench/cpu_bench_util.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ir/hlo_files.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "optimizers/core/search.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace mltune::bench {

namespace cpu = backends::cpu;

absl::StatusOr<std::unique_ptr<ir::Module>> ParseAndVerify(std::string_view text,
                                                           const std::string& name) {
  ir::ParseOptions options;
  options.filename = name;
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(text, options);
  if (!module.ok()) return module.status();
  if (absl::Status s = ir::VerifyModule(**module); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": verifier: ", s.message()));
  }
  return module;
}

absl::StatusOr<std::unique_ptr<ir::Module>> PrepareForCpu(const ir::Module& module) {
  return cpu::RunCpuPipeline(module);
}

absl::StatusOr<std::unique_ptr<ir::Module>> ReadForCpu(const std::string& file) {
  absl::StatusOr<std::unique_ptr<ir::Module>> parsed = ir::LoadVerifiedHlo(file);
  if (!parsed.ok()) return parsed.status();
  return PrepareForCpu(**parsed);
}

int64_t ParamValue(const cpu::Kernel& kernel, const cpu::KernelConfig& config,
                   std::string_view name) {
  for (size_t p = 0; p < kernel.params.size() && p < config.size(); ++p) {
    if (kernel.params[p].name == name) return config[p];
  }
  return -1;
}

absl::StatusOr<TuneOutcome> TuneKernels(const cpu::LoweredModule& lowered,
                                        const TuneOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const cpu::CompilerOptions compiler;
  opt::tiling::CpuTileProblem problem(
      lowered, [&](int32_t k, const cpu::KernelConfig& config) -> absl::StatusOr<double> {
        absl::StatusOr<cpu::Timing> t =
            cpu::MeasureKernel(lowered, k, config, compiler, options.kernel_measure, options.seed);
        if (!t.ok()) return t.status();
        return t->median_s;
      });
  TuneOutcome outcome;
  const opt::Candidate defaults = problem.DefaultCandidate();
  outcome.default_kernel_seconds = problem.Evaluate(defaults);
  if (!std::isfinite(outcome.default_kernel_seconds)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the default kernels did not run: ", problem.last_error()));
  }
  // The GEMM kernels on oneDNN, everything else at its default: the library is then compared
  // with the generated GEMM within the first steps of any budget. Three seeds: every GEMM kernel
  // on dnnl_sgemm (impl 1), and the convolutions on oneDNN's convolution primitive, with the
  // buffers' layouts (impl 2) or oneDNN's own (impl 3), where a kernel offers it (other GEMM
  // kernels stay on dnnl_sgemm).
  auto library_seed = [&](int64_t conv_impl, bool* has) {
    opt::Candidate seed = defaults;
    *has = false;
    const std::vector<opt::tiling::CpuTileProblem::Slot>& positions = problem.positions();
    for (size_t position = 0; position < positions.size(); ++position) {
      const cpu::KernelParam& p = lowered.kernels[static_cast<size_t>(positions[position].kernel)]
                                      .params[positions[position].param];
      if (p.name != "impl") continue;
      const auto& c = p.choices;
      auto conv = std::find(c.begin(), c.end(), conv_impl);
      auto gemm = std::find(c.begin(), c.end(), int64_t{1});
      if (conv != c.end()) {
        seed[position] = static_cast<opt::Action>(conv - c.begin());
        *has = true;
      } else if (gemm != c.end()) {
        seed[position] = static_cast<opt::Action>(gemm - c.begin());
        *has |= conv_impl == 1;
      }
    }
    return seed;
  };
  std::vector<std::pair<std::string, opt::Candidate>> library_seeds;
  for (const auto& [impl, name] : std::vector<std::pair<int64_t, std::string>>{
           {1, "oneDNN seed"}, {2, "oneDNN conv seed"}, {3, "oneDNN blocked conv seed"}}) {
    bool has = false;
    opt::Candidate seed = library_seed(impl, &has);
    if (!has) continue;
    if (absl::Status s = problem.AddSeed(seed); !s.ok()) return s;
    library_seeds.emplace_back(name, std::move(seed));
  }
  opt::Candidate best = defaults;
  if (problem.space().max_length > 0 && options.budget > 0) {
    absl::StatusOr<std::unique_ptr<opt::Strategy>> strategy =
        opt::StrategyRegistry::Global().Create(options.strategy);
    if (!strategy.ok()) return strategy.status();
    absl::StatusOr<opt::Result> result =
        (*strategy)->Search(problem, opt::Budget(options.budget, 0), options.seed);
    if (!result.ok()) return result.status();
    if (std::isfinite(result->best_score)) best = result->best;
    outcome.steps = result->steps;
  }
  outcome.configs = problem.Decode(best);
  outcome.searched_configs = outcome.configs;
  {
    const std::vector<cpu::KernelConfig> default_configs = problem.Decode(defaults);
    for (size_t k = 0; k < outcome.configs.size(); ++k) {
      const int32_t id = static_cast<int32_t>(k);
      outcome.kernel_default_seconds.push_back(problem.KernelSeconds(id, default_configs[k]));
      outcome.kernel_searched_seconds.push_back(problem.KernelSeconds(id, outcome.configs[k]));
    }
  }
  outcome.tuned_kernel_seconds = problem.Evaluate(best);  // cached: no new measurement
  outcome.measurements = problem.measurements();
  outcome.last_error = problem.last_error();
  struct Finalist {
    std::string name;
    opt::Candidate candidate;
    std::unique_ptr<cpu::CompiledModule> compiled;
    double seconds = std::numeric_limits<double>::infinity();
  };
  std::vector<Finalist> finalists;
  auto add = [&](const std::string& name, const opt::Candidate& c) {
    for (const Finalist& f : finalists) {
      if (f.candidate == c) return;
    }
    finalists.push_back({name, c, nullptr});
  };
  // When the search found nothing better than the defaults, they are its best: name them so.
  add("defaults", defaults);
  add("search", best);
  for (const auto& [name, seed] : library_seeds) add(name, seed);
  outcome.chosen = best == defaults ? "defaults" : "search";
  if (options.validate_rounds > 0 && finalists.size() > 1 && lowered.module != nullptr) {
    for (Finalist& f : finalists) {
      absl::StatusOr<cpu::CompiledModule> c =
          cpu::CompileModule(*lowered.module, problem.Decode(f.candidate));
      if (!c.ok()) {
        outcome.last_error = std::string(c.status().message());
        continue;
      }
      f.compiled = std::make_unique<cpu::CompiledModule>(*std::move(c));
    }
    for (int round = 0; round < options.validate_rounds; ++round) {
      for (Finalist& f : finalists) {
        if (f.compiled == nullptr) continue;
        absl::StatusOr<cpu::Timing> t = cpu::Measure(f.compiled->object, f.compiled->program,
                                                     options.seed, options.module_measure);
        if (t.ok()) {
          f.seconds = std::min(f.seconds, t->median_s);
        } else {
          outcome.last_error = std::string(t.status().message());
        }
      }
    }
    const Finalist* winner = &finalists.front();
    for (const Finalist& f : finalists) {
      if (f.name == "search") winner = &f;  // ties go to the search's answer
    }
    for (const Finalist& f : finalists) {
      outcome.finalists.emplace_back(f.name, f.seconds);
      if (f.seconds < winner->seconds) winner = &f;
    }
    if (!std::isfinite(winner->seconds)) {
      return absl::FailedPreconditionError(
          absl::StrCat("no finalist ran as a whole module: ", outcome.last_error));
    }
    outcome.chosen = winner->name;
    outcome.configs = problem.Decode(winner->candidate);
    outcome.tuned_kernel_seconds = problem.Evaluate(winner->candidate);
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

namespace {

std::string ReadWhole(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ShellQuote(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "'\\''"}}), "'");
}

}  // namespace

TorchPeerResult RunTorchPeer(const std::string& python, const std::string& script, int threads,
                             double min_seconds, const nlohmann::json& specs) {
  TorchPeerResult r;
  std::error_code ec;
  if (!std::filesystem::exists(python, ec)) {
    r.error = absl::StrCat(python, " not found (Debian's python3 with python3-torch is the peer)");
    return r;
  }
  if (!std::filesystem::exists(script, ec)) {
    r.error = absl::StrCat("the peer script ", script, " is missing");
    return r;
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("mltune-torch-peer-", getpid());
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path in = dir / "specs.json", out = dir / "out.json",
                              err = dir / "stderr.txt";
  {
    std::ofstream f(in);
    f << specs.dump();
  }
  const std::string command = absl::StrCat(
      ShellQuote(python), " ", ShellQuote(script), " --threads ", threads, " --min-seconds ",
      absl::StrFormat("%g", min_seconds), " < ", ShellQuote(in.string()), " > ",
      ShellQuote(out.string()), " 2> ", ShellQuote(err.string()));
  const int status = std::system(command.c_str());
  const std::string stderr_text = std::string(absl::StripAsciiWhitespace(ReadWhole(err)));
  const std::string stdout_text = ReadWhole(out);
  std::filesystem::remove_all(dir, ec);
  if (status != 0) {
    r.error = absl::StrCat("torch_ops.py failed (status ", status,
                           "): ", stderr_text.empty() ? "no message" : stderr_text);
    if (stderr_text.find("No module named 'torch'") != std::string::npos) {
      r.error = absl::StrCat(
          python, " cannot import torch (install Debian's python3-torch): ", stderr_text);
    }
    return r;
  }
  // The script's own report (torch version, threads, BLAS) is the stderr line it prefixes.
  for (absl::string_view line : absl::StrSplit(stderr_text, '\n')) {
    if (absl::StartsWith(line, "torch_ops.py:")) r.blas_line = std::string(line);
  }
  try {
    r.results = nlohmann::json::parse(stdout_text);
  } catch (const nlohmann::json::exception& e) {
    r.error = absl::StrCat("torch_ops.py printed no JSON: ", e.what());
    return r;
  }
  r.ok = true;
  return r;
}

std::string OneLine(const std::string& text, size_t limit) {
  std::string s = text.substr(0, text.find('\n'));
  if (s.size() > limit) s = s.substr(0, limit) + "...";
  return s;
}

int64_t CacheBytes(int level, int64_t fallback) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index, "/");
    std::ifstream lv(dir + "level"), type(dir + "type"), size(dir + "size");
    int l = 0;
    std::string t, sz;
    if (!(lv >> l) || !(type >> t) || !(size >> sz)) break;
    if (l != level || t == "Instruction" || sz.empty()) continue;
    int64_t n = 0;
    const char unit = sz.back();
    if (!absl::SimpleAtoi(sz.substr(0, sz.size() - 1), &n)) continue;
    return unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n;
  }
  return fallback;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

double GeoMean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double log_sum = 0;
  for (double v : values) log_sum += std::log(v);
  return std::exp(log_sum / static_cast<double>(values.size()));
}

std::string Ms(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return "-";
  const double ms = seconds * 1e3;
  if (ms >= 100) return absl::StrFormat("%.1f", ms);
  if (ms >= 10) return absl::StrFormat("%.2f", ms);
  if (ms >= 1) return absl::StrFormat("%.3f", ms);
  return absl::StrFormat("%.4f", ms);
}

std::string Ratio(double value) {
  if (!(value > 0) || !std::isfinite(value)) return "-";
  return absl::StrFormat("%.2fx", value);
}

TuneOptions MakeTuneOptions(int threads, double seconds, double tune_seconds, int64_t budget,
                            const std::string& strategy, uint64_t seed) {
  TuneOptions tune;
  tune.budget = budget;
  tune.strategy = strategy;
  tune.seed = seed;
  tune.kernel_measure.threads = threads;
  tune.kernel_measure.max_seconds = tune_seconds;
  tune.kernel_measure.min_reps = 5;
  tune.module_measure.threads = threads;
  tune.module_measure.max_seconds = std::min(seconds, 0.1);
  return tune;
}

}  // namespace mltune::bench
