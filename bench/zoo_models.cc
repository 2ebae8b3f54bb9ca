#include "bench/zoo_models.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_backend.h"
#include "bench/cpu_bench_util.h"
#include "nlohmann/json.hpp"

namespace mltune::bench {
namespace {

namespace fs = std::filesystem;
namespace cpu = backends::cpu;
using nlohmann::json;

struct MltuneResult {
  std::string model;
  int64_t batch = 0;
  int64_t kernels = 0;
  std::string variant;        // "infer.b1", "train.b2", ...
  double seconds = -1;        // median of the untuned (default kernels) module
  double tuned_seconds = -1;  // median of the tuned module (never a finalist slower than default)
  double tune_wall_seconds = 0;
  int64_t tune_measurements = 0;
  std::string tuned_pick;  // which finalist TuneKernels chose
  std::string check;       // "match", "MISMATCH", "error" or "" when not checked
  std::string error;       // why it did not run (CheckSupported's reason, compile or measure error)
};

MltuneResult RunOne(const std::string& model, int64_t batch, const std::string& file,
                    const ZooBenchOptions& options, bool tune) {
  MltuneResult r;
  r.model = model;
  r.batch = batch;
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ReadForCpu(file);
  if (!module.ok()) {
    r.error = OneLine(std::string(module.status().message()));
    return r;
  }
  absl::StatusOr<cpu::CompiledModule> compiled = cpu::CompileModule(**module);
  if (!compiled.ok()) {
    r.error = absl::StrCat("compile: ", OneLine(std::string(compiled.status().message())));
    return r;
  }
  r.kernels = static_cast<int64_t>(compiled->lowered.kernels.size());
  cpu::MeasureOptions measure;
  measure.threads = options.threads;
  measure.max_seconds = options.seconds;
  // A whole model call takes up to seconds here: three timed calls at least, and room for them.
  measure.min_reps = 3;
  measure.timeout_seconds = 1200;
  if (options.check) {
    absl::Status s = cpu::CheckAgainstEvaluator(**module, *compiled, 0, measure, {});
    r.check = s.ok() ? "match" : (s.code() == absl::StatusCode::kDataLoss ? "MISMATCH" : "error");
  }
  absl::StatusOr<cpu::Timing> t = cpu::Measure(compiled->object, compiled->program, 0, measure);
  if (!t.ok()) {
    r.error = absl::StrCat("measure: ", OneLine(std::string(t.status().message())));
    return r;
  }
  r.seconds = t->median_s;
  if (tune && options.tune_budget > 0) {
    const TuneOptions tune_options = MakeTuneOptions(
        options.threads, std::min(options.seconds, 0.5), 0.02, options.tune_budget, "annealing", 0);
    absl::StatusOr<TuneOutcome> tuned = TuneKernels(compiled->lowered, tune_options);
    if (!tuned.ok()) {
      r.error = absl::StrCat("tuning: ", OneLine(std::string(tuned.status().message())));
      return r;
    }
    r.tune_wall_seconds = tuned->seconds;
    r.tune_measurements = tuned->measurements;
    r.tuned_pick = tuned->chosen;
    absl::StatusOr<cpu::CompiledModule> tc = cpu::CompileModule(**module, tuned->configs);
    if (!tc.ok()) {
      r.error = absl::StrCat("tuned compile: ", OneLine(std::string(tc.status().message())));
      return r;
    }
    absl::StatusOr<cpu::Timing> tt = cpu::Measure(tc->object, tc->program, 0, measure);
    if (!tt.ok()) {
      r.error = absl::StrCat("tuned measure: ", OneLine(std::string(tt.status().message())));
      return r;
    }
    // As the daemon returns it: the defaults when the tuned module measures slower.
    r.tuned_seconds = std::min(tt->median_s, r.seconds);
    if (tt->median_s > r.seconds) r.tuned_pick = "defaults (tuned measured slower)";
  }
  return r;
}

// Runs bench/peers/models.py once for every model and batch; its --json report, or an error.
json RunPeers(const ZooBenchOptions& options, const std::vector<std::string>& models,
              std::string* error) {
  std::error_code ec;
  if (options.python.empty() || !fs::exists(options.python, ec)) {
    *error = absl::StrCat("no peers interpreter at '", options.python,
                          "' (scripts/setup --peers makes build/peers-venv)");
    return nullptr;
  }
  const fs::path out =
      fs::temp_directory_path() / absl::StrCat("mltune-zoo-peers-", getpid(), ".json");
  std::vector<std::string> batches;
  for (int64_t b : options.batches) batches.push_back(absl::StrCat(b));
  std::string command =
      absl::StrCat("'", options.python, "' '", options.peers_script, "' --models ",
                   absl::StrJoin(models, ","), " --batches ", absl::StrJoin(batches, ","),
                   " --min-seconds ", options.seconds, " --threads ", options.threads,
                   " --json '", out.string(), "'");
  if (!options.peers.empty())
    absl::StrAppend(&command, " --peers ", absl::StrJoin(options.peers, ","));
  if (options.concurrent_peers) {
    absl::StrAppend(&command, " --cpu ", std::max(1L, sysconf(_SC_NPROCESSORS_ONLN) - 1));
  }
  std::cerr << "peers: " << command << "\n";
  const int status = std::system(absl::StrCat(command, " 1>&2").c_str());
  std::ifstream in(out);
  if (status != 0 || !in) {
    *error = absl::StrCat("bench/peers/models.py failed (status ", status, ")");
    return nullptr;
  }
  json report = json::parse(in, nullptr, /*allow_exceptions=*/false);
  fs::remove(out, ec);
  if (report.is_discarded()) *error = "bench/peers/models.py wrote no valid JSON";
  return report;
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ZooRoles(const std::string& zoo) {
  const fs::path path = fs::path(zoo) / "manifest.json";
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("no zoo manifest at ", path.string(), " (scripts/zoo writes it)"));
  }
  const json manifest = json::parse(in, nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("models")) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": not a zoo manifest"));
  }
  std::map<std::string, std::string> roles;
  for (const auto& [name, entry] : manifest["models"].items()) {
    roles[name] = entry.value("role", "");
  }
  return roles;
}

absl::StatusOr<std::vector<std::string>> ZooModelsOfRole(const std::string& zoo,
                                                         const std::string& role) {
  absl::StatusOr<std::map<std::string, std::string>> roles = ZooRoles(zoo);
  if (!roles.ok()) return roles.status();
  std::vector<std::string> models;
  for (const auto& [name, r] : *roles) {
    if (role.empty() || role == "all" || r == role) models.push_back(name);
  }
  if (models.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no model of role '", role, "' in ", zoo, "/manifest.json"));
  }
  return models;
}

int RunZooModels(const ZooBenchOptions& options) {
  const fs::path manifest_path = fs::path(options.zoo) / "manifest.json";
  std::ifstream in(manifest_path);
  if (!in) {
    std::cerr << "no zoo manifest at " << manifest_path << " (scripts/zoo writes it)\n";
    return 1;
  }
  const json manifest = json::parse(in, nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("models")) {
    std::cerr << manifest_path << ": not a zoo manifest\n";
    return 1;
  }
  std::vector<std::string> models = options.models;
  if (models.empty()) {
    absl::StatusOr<std::vector<std::string>> of_role = ZooModelsOfRole(options.zoo, options.role);
    if (!of_role.ok()) {
      std::cerr << of_role.status().message() << "\n";
      return 1;
    }
    models = *std::move(of_role);
  }
  std::string peers_error;
  std::future<json> peers_future;
  if (options.concurrent_peers) {
    // The peers pin themselves to the last CPU; mltune (and the runner children, which inherit
    // it) stays on the first.
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    sched_setaffinity(0, sizeof(set), &set);
    peers_future =
        std::async(std::launch::async, [&] { return RunPeers(options, models, &peers_error); });
  }
  std::vector<MltuneResult> ours;
  for (const std::string& model : models) {
    if (!manifest["models"].contains(model)) {
      std::cerr << "no model '" << model << "' in " << manifest_path << "\n";
      return 1;
    }
    const json& variants = manifest["models"][model]["variants"];
    std::vector<std::pair<std::string, int64_t>> wanted;
    for (int64_t batch : options.batches)
      wanted.emplace_back(absl::StrCat("infer.b", batch), batch);
    if (options.train) {
      for (const auto& [name, entry] : variants.items()) {
        if (name.rfind("train.b", 0) == 0) wanted.emplace_back(name, std::stoll(name.substr(7)));
      }
    }
    for (const auto& [variant, batch] : wanted) {
      if (!variants.contains(variant)) {
        MltuneResult missing;
        missing.model = model;
        missing.batch = batch;
        missing.variant = variant;
        missing.error = absl::StrCat("the zoo has no ", variant);
        ours.push_back(missing);
        continue;
      }
      const std::string file =
          (fs::path(options.zoo) / variants[variant]["before_xla"].get<std::string>()).string();
      std::cerr << "[mltune " << model << " " << variant << "]\n";
      const bool train = variant.rfind("train", 0) == 0;
      ours.push_back(RunOne(model, batch, file, options, !train || options.tune_train));
      ours.back().variant = variant;
      const MltuneResult& r = ours.back();
      std::cerr << "  "
                << (r.error.empty()
                        ? absl::StrCat(Ms(r.seconds), " ms, tuned ", Ms(r.tuned_seconds), " ms")
                        : r.error)
                << "\n";
    }
  }
  const json peers =
      options.concurrent_peers ? peers_future.get() : RunPeers(options, models, &peers_error);
  if (!peers_error.empty()) std::cerr << "peers unavailable: " << peers_error << "\n";

  // (model, batch, peer) -> median seconds, or the peer's error.
  std::vector<std::string> peer_names;
  std::map<std::tuple<std::string, int64_t, std::string>, json> cells;
  if (peers.is_object()) {
    for (const json& p : peers.value("settings", json::object()).value("peers", json::array())) {
      peer_names.push_back(p);
    }
    for (const json& r : peers.value("results", json::array())) {
      cells[{r.value("model", ""), r.value("batch", int64_t{0}), r.value("peer", "")}] = r;
    }
  }
  if (options.as_json) {
    json out{{"threads", options.threads}, {"peers", peers}};
    json list = json::array();
    for (const MltuneResult& r : ours) {
      json j{
          {"model", r.model}, {"variant", r.variant}, {"batch", r.batch}, {"kernels", r.kernels}};
      if (r.seconds > 0) j["seconds"] = r.seconds;
      if (r.tuned_seconds > 0) {
        j["tuned_seconds"] = r.tuned_seconds;
        j["tune_wall_seconds"] = r.tune_wall_seconds;
        j["tune_measurements"] = r.tune_measurements;
        j["tuned_pick"] = r.tuned_pick;
      }
      if (!r.check.empty()) j["check"] = r.check;
      if (!r.error.empty()) j["error"] = r.error;
      list.push_back(j);
    }
    out["mltune"] = list;
    std::cout << out.dump(1) << "\n";
    return 0;
  }

  std::cout << "## Zoo models, " << options.threads << " thread" << (options.threads > 1 ? "s" : "")
            << ": mltune's CPU backend (default kernels, and tuned: " << options.tune_budget
            << " steps of annealing per model) beside the peers, milliseconds (median)\n\n";
  if (peers.is_object() && peers.contains("machine")) {
    const json& m = peers["machine"];
    std::cout << "Machine: " << m.value("cpu", "?") << "; one thread's peak (torch 1024^3 f32 "
              << "matmul) " << absl::StrFormat("%.0f", m.value("peak_gflops_1thread", 0.0))
              << " GFLOP/s. Versions: " << peers.value("versions", json::object()).dump() << "\n\n";
  }
  std::cout << "| model | step | batch | mltune | mltune tuned | tuning |";
  for (const std::string& p : peer_names) std::cout << " " << p << " |";
  std::cout << " tuned vs best peer | tuned vs xla |\n|---|---|---:|---:|---:|---:|";
  for (size_t i = 0; i < peer_names.size(); ++i) std::cout << "---:|";
  std::cout << "---:|---:|\n";
  std::vector<std::string> notes;
  std::vector<double> vs_best, vs_xla;
  for (const MltuneResult& r : ours) {
    const bool infer = r.variant.rfind("infer", 0) == 0;
    const double mine = r.tuned_seconds > 0 ? r.tuned_seconds : r.seconds;
    std::cout << "| " << r.model << " | " << (infer ? "infer" : "train") << " | " << r.batch
              << " | " << (r.seconds > 0 ? Ms(r.seconds) : "n/a") << " | "
              << (r.tuned_seconds > 0 ? Ms(r.tuned_seconds) : "-") << " | "
              << (r.tuned_seconds > 0 ? absl::StrFormat("%.0f s, %d measured", r.tune_wall_seconds,
                                                        r.tune_measurements)
                                      : "-")
              << " |";
    double best = -1, xla = -1;
    for (const std::string& p : peer_names) {
      auto it = infer ? cells.find({r.model, r.batch, p}) : cells.end();
      const bool ok = it != cells.end() && it->second.value("status", "") == "ok";
      const double ms = ok ? it->second.value("median_ms", -1.0) : -1;
      if (ms > 0) {
        std::cout << " " << absl::StrFormat("%.3g", ms) << " |";
        if (best < 0 || ms < best) best = ms;
        if (p == "xla") xla = ms;
      } else {
        std::cout << " " << (it == cells.end() ? "-" : it->second.value("status", "failed"))
                  << " |";
        if (it != cells.end() && it->second.contains("error")) {
          notes.push_back(absl::StrCat(r.model, " b", r.batch, ", ", p, ": ",
                                       OneLine(it->second.value("error", ""))));
        }
      }
    }
    const double rb = mine > 0 && best > 0 ? best / (mine * 1e3) : -1;
    const double rx = mine > 0 && xla > 0 ? xla / (mine * 1e3) : -1;
    if (rb > 0) vs_best.push_back(rb);
    if (rx > 0) vs_xla.push_back(rx);
    std::cout << " " << Ratio(rb) << " | " << Ratio(rx) << " |\n";
    if (!r.error.empty())
      notes.push_back(absl::StrCat(r.model, " ", r.variant, ", mltune: ", r.error));
  }
  std::cout << "\nGeomean of mltune tuned against the fastest peer: " << Ratio(GeoMean(vs_best))
            << " over " << vs_best.size() << " cases; against XLA: " << Ratio(GeoMean(vs_xla))
            << " (above 1x: mltune faster). Peers run inference only; training steps are "
               "mltune's alone.\n";
  if (!peers_error.empty()) std::cout << "\nPeers not run: " << peers_error << "\n";
  if (!notes.empty()) {
    std::cout << "\nWhy a cell is empty:\n\n";
    for (const std::string& n : notes) std::cout << "- " << n << "\n";
  }
  return 0;
}

}  // namespace mltune::bench
