// The GPU worker beside the peers users would pick on the device: the operator suite
// (bench/op_suite.h, the CPU suite's ops) and the zoo's inference models, each compiled by the GPU
// backend with its default parameters, checked against the reference evaluator, and timed in the
// runner child (CUDA events, L2 flushed before each sample); PyTorch eager (cuBLAS/cuDNN),
// torch.compile and JAX on the same shapes through bench/peers/gpu_peers.py in the same run.
//
//   build/release/bench/gpu_ops [--ops a,b] [--zoo-models a,b] [--batches 1,8] [--no-zoo]
//                               [--peers torch,inductor,jax] [--python python3] [--seconds 0.2]
//                               [--json F] [--root DIR] [--peers-json F]
//   build/release/bench/gpu_ops --report ROWS.json [--peers-json PEERS.json]   (no GPU needed)
//
// Cases are compiled on every core, timed one at a time, then checked on every core (the batch-8
// models are timed, not checked: the evaluator takes minutes on them).
//
// Prints markdown: per op and per model, mltune's median ms and each peer's, the ratios to
// PyTorch eager and to torch.compile with their geometric means, and the check's verdict;
// matmul rows as a share of cuBLAS (PyTorch eager's matmul). Needs a GPU (scripts/gpu_check);
// without one it says why and exits 1.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/gpu/device.h"
#include "backends/gpu/gpu_program.h"
#include "bench/op_suite.h"
#include "ir/hlo_files.h"
#include "ir/hlo_parser.h"
#include "nlohmann/json.hpp"

namespace {

using namespace mltune;
namespace cpu = backends::cpu;
namespace gpu = backends::gpu;
namespace fs = std::filesystem;
using nlohmann::json;

struct Row {
  std::string name, shape, check;
  double ms = -1;
  std::string error;
  std::map<std::string, double> peers;  // peer -> ms
};

// One case: compiled and checked on the CPU's threads, then timed alone on the device.
struct Case {
  Row row;
  std::unique_ptr<ir::Module> module;
  bool check = true;
  std::optional<gpu::GpuModuleProgram> program;
};

// Compiles the case into its program; `row` gets the outcome (the caller publishes it).
void Prepare(Case* c, const gpu::DeviceDescriptor& device, Row* out) {
  Row& row = *out;
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized =
      cpu::RunCpuPipeline(*c->module, /*nhwc_convolutions=*/false);
  if (!optimized.ok()) {
    row.error = std::string(optimized.status().message());
    return;
  }
  absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(**optimized);
  if (!lowered.ok()) {
    row.error = std::string(lowered.status().message());
    return;
  }
  gpu::NvrtcOptions nvrtc;
  nvrtc.arch = device.Arch();
  absl::StatusOr<gpu::GpuModuleProgram> program = gpu::CompileGpuModule(*lowered, {}, nvrtc);
  if (!program.ok()) {
    row.error = std::string(program.status().message());
    return;
  }
  c->program = *std::move(program);
  row.check = c->check ? "unchecked (time limit)" : "not checked";
}

void Check(Case* c, const gpu::GpuMeasureOptions& options, Row* row) {
  if (!c->program.has_value() || !c->check) return;
  int64_t ill = 0;
  const absl::Status check =
      gpu::CheckGpuAgainstEvaluator(*c->module, *c->program, 0, options, nullptr, &ill);
  row->check = check.ok() ? (ill > 0 ? absl::StrCat("match (", ill, " within spread)") : "match")
                          : absl::StrCat("MISMATCH: ", check.message().substr(0, 120));
}

void Time(Case* c, const gpu::GpuMeasureOptions& options) {
  if (!c->program.has_value()) return;
  absl::StatusOr<gpu::GpuTiming> t = gpu::MeasureGpu(*c->program, 1, options);
  if (!t.ok()) {
    c->row.error = std::string(t.status().message());
    return;
  }
  c->row.ms = t->median_s * 1e3;
  // Launched one by one (host-driven control flow, or a capture that failed): said, still timed.
  if (t->graph != "on") c->row.check = "graph " + t->graph;
}

std::string Cell(double ms) { return ms < 0 ? "-" : absl::StrFormat("%.4g", ms); }

double Geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

void PrintTable(const std::string& title, const std::vector<Row>& rows,
                const std::vector<std::string>& peers) {
  std::cout << "\n## " << title << "\n\n| case | shape | mltune |";
  for (const std::string& p : peers) std::cout << " " << p << " |";
  std::cout << " vs torch | vs inductor | check |\n|---|---|---:|";
  for (size_t i = 0; i < peers.size(); ++i) std::cout << "---:|";
  std::cout << "---:|---:|---|\n";
  std::vector<double> vs_torch, vs_inductor, vs_strict;
  bool strict = false;  // some row has torch-f32 (eager with TF32 off: gpu_peers.py)
  for (const Row& r : rows) {
    auto it = r.peers.find("torch-f32");
    if (it == r.peers.end())
      it = r.peers.find("torch");
    else
      strict = true;
    if (r.ms > 0 && it != r.peers.end() && it->second > 0) vs_strict.push_back(it->second / r.ms);
    std::cout << "| " << r.name << " | " << r.shape << " | " << Cell(r.ms) << " |";
    for (const std::string& p : peers) {
      auto it = r.peers.find(p);
      std::cout << " " << Cell(it == r.peers.end() ? -1 : it->second) << " |";
    }
    auto ratio = [&](const std::string& p, std::vector<double>* all) {
      auto it = r.peers.find(p);
      if (r.ms <= 0 || it == r.peers.end() || it->second <= 0) return std::string("-");
      all->push_back(it->second / r.ms);
      return absl::StrFormat("%.2fx", it->second / r.ms);
    };
    std::cout << " " << ratio("torch", &vs_torch) << " | " << ratio("inductor", &vs_inductor)
              << " | " << (r.error.empty() ? r.check : "error: " + r.error.substr(0, 100))
              << " |\n";
  }
  std::cout << "\nGeomean speed-up (above 1: mltune faster): vs PyTorch eager "
            << absl::StrFormat("%.2fx", Geomean(vs_torch)) << " over " << vs_torch.size()
            << ", vs torch.compile " << absl::StrFormat("%.2fx", Geomean(vs_inductor)) << " over "
            << vs_inductor.size() << ".\n";
  if (strict) {
    std::cout << "Against PyTorch eager with TF32 off (torch-f32, where measured: its f32 "
                 "convolutions as strict as mltune's): "
              << absl::StrFormat("%.2fx", Geomean(vs_strict)) << " over " << vs_strict.size()
              << ".\n";
  }
}

void WriteRows(const std::string& path, const std::string& device, const std::vector<Row>& op_rows,
               const std::vector<Row>& model_rows) {
  json all = json::array();
  for (const auto& [kind, rows] : {std::pair{"op", &op_rows}, std::pair{"model", &model_rows}}) {
    for (const Row& r : *rows) {
      all.push_back({{"kind", kind},
                     {"case", r.name},
                     {"shape", r.shape},
                     {"ms", r.ms},
                     {"check", r.check},
                     {"error", r.error},
                     {"peers", r.peers}});
    }
  }
  std::ofstream(path) << json{{"device", device}, {"rows", all}}.dump(1);
}

// Fills the rows' peer columns from gpu_peers.py's output (a partial one, from a run cut short,
// included); prints the peers' failures and versions.
void MergePeers(const std::string& path, std::vector<Row>* op_rows, std::vector<Row>* model_rows) {
  std::ifstream in(path);
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    std::cerr << "gpu_ops: no peer results in " << path << "\n";
    return;
  }
  for (const auto& [table, rows] : {std::pair{"ops", op_rows}, std::pair{"models", model_rows}}) {
    if (!j.contains(table)) continue;
    for (Row& r : *rows) {
      if (!j[table].contains(r.name)) continue;
      for (const auto& [p, ms] : j[table][r.name].items()) r.peers[p] = ms.get<double>();
    }
  }
  if (j.contains("errors") && !j["errors"].empty()) {
    std::cout << "\nPeer failures: " << j["errors"].dump() << "\n";
  }
  if (j.contains("versions")) std::cout << "Peer versions: " << j["versions"].dump() << "\n";
}

void PrintTables(const std::vector<Row>& op_rows, const std::vector<Row>& model_rows,
                 const std::vector<std::string>& peers) {
  PrintTable("Operator suite on the GPU (ms, median)", op_rows, peers);
  // GEMMs against cuBLAS (PyTorch eager's matmul).
  std::cout << "\nMatmul as a share of cuBLAS (PyTorch eager):";
  for (const Row& r : op_rows) {
    auto it = r.peers.find("torch");
    if (r.name.rfind("matmul", 0) == 0 && r.ms > 0 && it != r.peers.end()) {
      std::cout << " " << r.name << " " << absl::StrFormat("%.0f%%", 100 * it->second / r.ms);
    }
  }
  std::cout << "\n";
  if (!model_rows.empty()) {
    PrintTable("Zoo inference models on the GPU (ms, median)", model_rows, peers);
  }
}

// --report: the tables of an earlier run's rows (gpu_ops --json) and its peers, with no device.
int Report(const std::string& rows_path, const std::string& peers_path,
           const std::string& peers_text) {
  std::ifstream in(rows_path);
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("rows")) {
    std::cerr << "gpu_ops: " << rows_path << " is not a gpu_ops --json file\n";
    return 1;
  }
  std::vector<Row> op_rows, model_rows;
  for (const json& e : j["rows"]) {
    Row r;
    r.name = e.value("case", "");
    r.shape = e.value("shape", "");
    r.ms = e.value("ms", -1.0);
    r.check = e.value("check", "");
    r.error = e.value("error", "");
    if (e.contains("peers")) {
      for (const auto& [p, ms] : e["peers"].items()) r.peers[p] = ms.get<double>();
    }
    (e.value("kind", "op") == "model" ? model_rows : op_rows).push_back(std::move(r));
  }
  std::cout << "Device: " << j.value("device", "?") << "\n";
  if (!peers_path.empty()) MergePeers(peers_path, &op_rows, &model_rows);
  PrintTables(op_rows, model_rows, absl::StrSplit(peers_text, ',', absl::SkipEmpty()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The GPU worker beside PyTorch eager, torch.compile and JAX on the device"};
  std::string ops_filter, zoo_filter, batches_text = "1,8", peers_text = "torch,inductor,jax";
  std::string python = "python3", json_path, root = MLTUNE_SOURCE_DIR, peers_json, report,
              peer_specs;
  double seconds = 0.2;
  bool no_zoo = false;
  app.add_option("--ops", ops_filter, "Ops or group prefixes (default: all)");
  app.add_option("--zoo-models", zoo_filter, "Zoo models (default: all with infer modules)");
  app.add_option("--batches", batches_text, "Zoo batch sizes");
  app.add_flag("--no-zoo", no_zoo, "The operator suite only");
  app.add_option("--peers", peers_text, "Peers of bench/peers/gpu_peers.py (empty: none)");
  app.add_option("--python", python, "The interpreter that has torch and jax");
  app.add_option("--seconds", seconds, "Timed seconds per case and peer");
  app.add_option("--json", json_path, "Also write the rows as JSON here");
  app.add_option("--root", root, "The source tree (models/hlo, bench/peers)");
  app.add_option("--peer-specs", peer_specs, "Write the ops' specs for gpu_peers.py here");
  app.add_option("--peers-json", peers_json,
                 "Take the peers' times from this gpu_peers.py output instead of running them");
  app.add_option("--report", report,
                 "Print the tables of an earlier run's --json (with --peers-json); no GPU needed");
  CLI11_PARSE(app, argc, argv);
  if (!report.empty()) return Report(report, peers_json, peers_text);

  absl::StatusOr<gpu::DeviceDescriptor> device = gpu::ProbeDevice(0);
  if (!device.ok()) {
    std::cerr << "gpu_ops: no GPU: " << device.status().message() << "\n";
    return 1;
  }
  std::cout << "<!-- " << absl::StrJoin(argv, argv + argc, " ") << " -->\n";
  std::cout << "Device: " << device->Key() << "\n";

  const std::vector<std::string> filters = absl::StrSplit(ops_filter, ',', absl::SkipEmpty());
  std::vector<bench::OpCase> ops;
  for (bench::OpCase& op : bench::AllOps()) {
    bool keep = filters.empty();
    for (const std::string& f : filters) keep |= op.name.rfind(f, 0) == 0;
    if (keep) ops.push_back(std::move(op));
  }
  if (!peer_specs.empty()) {
    json specs = json::array();
    for (const bench::OpCase& op : ops) specs.push_back(op.torch);
    std::ofstream(peer_specs) << specs.dump();
  }
  std::vector<Case> op_cases, model_cases;
  for (const bench::OpCase& op : ops) {
    Case c;
    c.row.name = op.name;
    c.row.shape = op.shape;
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(op.hlo);
    if (m.ok()) {
      c.module = *std::move(m);
    } else {
      c.row.error = std::string(m.status().message());
    }
    op_cases.push_back(std::move(c));
  }
  std::vector<std::string> models;
  std::vector<int64_t> batches;
  for (absl::string_view b : absl::StrSplit(batches_text, ',', absl::SkipEmpty())) {
    batches.push_back(std::stoll(std::string(b)));
  }
  const fs::path hlo_dir = fs::path(root) / "models" / "hlo";
  if (!no_zoo) {
    const std::vector<std::string> wanted = absl::StrSplit(zoo_filter, ',', absl::SkipEmpty());
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(hlo_dir)) {
      const std::string f = e.path().filename().string();
      const size_t at = f.find(".infer.b1.before.hlo");
      if (at != std::string::npos) found.push_back(f.substr(0, at));
    }
    std::sort(found.begin(), found.end());
    for (const std::string& m : found) {
      if (wanted.empty() || std::find(wanted.begin(), wanted.end(), m) != wanted.end()) {
        models.push_back(m);
      }
    }
  }
  for (const std::string& m : models) {
    for (int64_t b : batches) {
      const fs::path file = hlo_dir / absl::StrCat(m, ".infer.b", b, ".before.hlo");
      if (!fs::exists(file)) continue;
      Case c;
      c.row.name = absl::StrCat(m, "/b", b);
      c.row.shape = absl::StrCat("batch ", b);
      // The evaluator is slow on large batches: the batch-1 module is the one checked.
      c.check = b == 1;
      absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::LoadVerifiedHlo(file.string());
      if (module.ok()) {
        c.module = *std::move(module);
      } else {
        c.row.error = std::string(module.status().message());
      }
      model_cases.push_back(std::move(c));
    }
  }
  // Compiling uses every core; then each case is timed alone; then checked on every core (the
  // evaluator is the slow part), so that a run cut short by a time limit has its timings.
  gpu::GpuMeasureOptions options;
  options.max_seconds = seconds;
  std::vector<Case*> all;
  for (Case& c : op_cases) all.push_back(&c);
  for (Case& c : model_cases) all.push_back(&c);
  std::vector<Row> op_rows, model_rows;
  std::mutex mu;
  // The rows are written after every case, so that a run stopped by a time limit keeps what it
  // has measured.
  auto snapshot = [&] {
    op_rows.clear();
    model_rows.clear();
    for (Case& c : op_cases) op_rows.push_back(c.row);
    for (Case& c : model_cases) model_rows.push_back(c.row);
    if (!json_path.empty()) WriteRows(json_path, device->Key(), op_rows, model_rows);
  };
  auto on_every_core = [&](const char* what, const std::function<void(Case*, Row*)>& step) {
    std::atomic<size_t> next{0};
    std::vector<std::thread> workers;
    const unsigned threads = std::max(1u, std::min(std::thread::hardware_concurrency(), 16u));
    for (unsigned w = 0; w < threads; ++w) {
      workers.emplace_back([&] {
        for (size_t i = next++; i < all.size(); i = next++) {
          Row row = all[i]->row;
          if (all[i]->module != nullptr) step(all[i], &row);
          std::lock_guard<std::mutex> lock(mu);
          all[i]->row = std::move(row);
          std::cerr << "[" << what << "] " << all[i]->row.name << ": " << all[i]->row.check
                    << all[i]->row.error << "\n";
          snapshot();
        }
      });
    }
    for (std::thread& t : workers) t.join();
  };
  on_every_core("compiled", [&](Case* c, Row* row) { Prepare(c, *device, row); });
  for (Case* c : all) {
    Time(c, options);
    std::cerr << "[timed] " << c->row.name << ": " << Cell(c->row.ms) << " ms\n";
    snapshot();
  }
  on_every_core("checked", [&](Case* c, Row* row) { Check(c, options, row); });

  std::vector<std::string> peers = absl::StrSplit(peers_text, ',', absl::SkipEmpty());
  if (peers_json.empty() && !peers.empty()) {
    json specs = json::array();
    for (const bench::OpCase& op : ops) specs.push_back(op.torch);
    const fs::path in = fs::temp_directory_path() / "mltune-gpu-ops-specs.json";
    peers_json = (fs::temp_directory_path() / "mltune-gpu-ops-peers.json").string();
    std::ofstream(in) << specs.dump();
    const std::string command = absl::StrCat(
        python, " ", (fs::path(root) / "bench" / "peers" / "gpu_peers.py").string(), " --peers ",
        peers_text, " --models ", absl::StrJoin(models, ","), " --batches ", batches_text,
        " --min-seconds ", seconds, " < ", in.string(), " > ", peers_json);
    std::cerr << "[peers] " << command << "\n";
    if (std::system(command.c_str()) != 0) {
      std::cerr << "gpu_ops: the peers failed (see above); their columns stay empty\n";
    }
  }
  if (!peers_json.empty()) MergePeers(peers_json, &op_rows, &model_rows);
  PrintTables(op_rows, model_rows, peers);
  if (!json_path.empty()) WriteRows(json_path, device->Key(), op_rows, model_rows);
  return 0;
}
