#include "bench/zoo_models.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

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
  double seconds = -1;  // median of the untuned (default kernels) module
  std::string check;    // "match", "MISMATCH", "error" or "" when not checked
  std::string error;    // why it did not run (CheckSupported's reason, compile or measure error)
};

MltuneResult RunOne(const std::string& model, int64_t batch, const std::string& file,
                    const ZooBenchOptions& options) {
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
                   " --min-seconds ", options.seconds, " --json '", out.string(), "'");
  if (!options.peers.empty())
    absl::StrAppend(&command, " --peers ", absl::StrJoin(options.peers, ","));
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
    for (const auto& [name, entry] : manifest["models"].items()) models.push_back(name);
  }
  std::vector<MltuneResult> ours;
  for (const std::string& model : models) {
    if (!manifest["models"].contains(model)) {
      std::cerr << "no model '" << model << "' in " << manifest_path << "\n";
      return 1;
    }
    for (int64_t batch : options.batches) {
      const json& variants = manifest["models"][model]["variants"];
      const std::string variant = absl::StrCat("infer.b", batch);
      if (!variants.contains(variant)) {
        MltuneResult missing;
        missing.model = model;
        missing.batch = batch;
        missing.error = absl::StrCat("the zoo has no ", variant);
        ours.push_back(missing);
        continue;
      }
      const std::string file =
          (fs::path(options.zoo) / variants[variant]["before_xla"].get<std::string>()).string();
      std::cerr << "[mltune " << model << " b" << batch << "]\n";
      ours.push_back(RunOne(model, batch, file, options));
      const MltuneResult& r = ours.back();
      std::cerr << "  " << (r.error.empty() ? Ms(r.seconds) + " ms" : r.error) << "\n";
    }
  }
  std::string peers_error;
  const json peers = RunPeers(options, models, &peers_error);
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
      json j{{"model", r.model}, {"batch", r.batch}, {"kernels", r.kernels}};
      if (r.seconds > 0) j["seconds"] = r.seconds;
      if (!r.check.empty()) j["check"] = r.check;
      if (!r.error.empty()) j["error"] = r.error;
      list.push_back(j);
    }
    out["mltune"] = list;
    std::cout << out.dump(1) << "\n";
    return 0;
  }

  std::cout << "## Zoo inference models, " << options.threads << " thread"
            << (options.threads > 1 ? "s" : "") << ": mltune's CPU backend (default kernels, "
            << "untuned) beside the peers, milliseconds (median)\n\n";
  if (peers.is_object() && peers.contains("machine")) {
    const json& m = peers["machine"];
    std::cout << "Machine: " << m.value("cpu", "?") << "; one thread's peak (torch 1024^3 f32 "
              << "matmul) " << absl::StrFormat("%.0f", m.value("peak_gflops_1thread", 0.0))
              << " GFLOP/s. Versions: " << peers.value("versions", json::object()).dump() << "\n\n";
  }
  std::cout << "| model | batch | mltune |";
  for (const std::string& p : peer_names) std::cout << " " << p << " |";
  std::cout << " mltune vs best peer |\n|---|---:|---:|";
  for (size_t i = 0; i < peer_names.size(); ++i) std::cout << "---:|";
  std::cout << "---:|\n";
  std::vector<std::string> notes;
  for (const MltuneResult& r : ours) {
    std::cout << "| " << r.model << " | " << r.batch << " | "
              << (r.seconds > 0 ? Ms(r.seconds) : "n/a") << " |";
    double best = -1;
    for (const std::string& p : peer_names) {
      auto it = cells.find({r.model, r.batch, p});
      const bool ok = it != cells.end() && it->second.value("status", "") == "ok";
      const double ms = ok ? it->second.value("median_ms", -1.0) : -1;
      if (ms > 0) {
        std::cout << " " << absl::StrFormat("%.3g", ms) << " |";
        if (best < 0 || ms < best) best = ms;
      } else {
        std::cout << " " << (it == cells.end() ? "-" : it->second.value("status", "failed"))
                  << " |";
        if (it != cells.end() && it->second.contains("error")) {
          notes.push_back(absl::StrCat(r.model, " b", r.batch, ", ", p, ": ",
                                       OneLine(it->second.value("error", ""))));
        }
      }
    }
    std::cout << " " << Ratio(r.seconds > 0 && best > 0 ? best / (r.seconds * 1e3) : -1) << " |\n";
    if (!r.error.empty())
      notes.push_back(absl::StrCat(r.model, " b", r.batch, ", mltune: ", r.error));
  }
  if (!peers_error.empty()) std::cout << "\nPeers not run: " << peers_error << "\n";
  if (!notes.empty()) {
    std::cout << "\nWhy a cell is empty:\n\n";
    for (const std::string& n : notes) std::cout << "- " << n << "\n";
  }
  return 0;
}

}  // namespace mltune::bench
