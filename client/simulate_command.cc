// `mltune simulate`: the simulated workers' view of one module, offline. The target's spec kind
// picks the simulator (tpu: backends/tpu_sim, mcm: backends/mcm_sim, gpu-cluster:
// backends/cluster_sim); each runs with the compiler's default decisions (default fusion and
// tiles, the balanced partition, the m-ETF placement) next to a simple reference (unfused, all on
// one chip, all on one device), which is what the daemon's tasks search from.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/mcm_sim/mcm_sim.h"
#include "backends/spec/target_spec.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "client/cli_commands.h"
#include "client/load.h"
#include "client/sim_targets.h"
#include "costmodels/analytical/analytical.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "nlohmann/json.hpp"

namespace mltune::client {
namespace {

using json = nlohmann::ordered_json;

// Three significant figures without an exponent.
std::string Sig3(double v) {
  const double a = std::fabs(v);
  if (a >= 100) return absl::StrFormat("%.0f", v);
  if (a >= 10) return absl::StrFormat("%.1f", v);
  return absl::StrFormat("%.2f", v);
}

std::string Seconds(double s) {
  if (s == 0) return "0 s";
  if (!std::isfinite(s)) return "inf";
  const double a = std::fabs(s);
  if (a < 1e-6) return Sig3(s * 1e9) + " ns";
  if (a < 1e-3) return Sig3(s * 1e6) + " µs";
  if (a < 1) return Sig3(s * 1e3) + " ms";
  return Sig3(s) + " s";
}

std::string Bytes(double b) {
  const double a = std::fabs(b);
  if (a < 1024) return absl::StrFormat("%.0f B", b);
  if (a < 1024.0 * 1024) return Sig3(b / 1024) + " KiB";
  if (a < 1024.0 * 1024 * 1024) return Sig3(b / (1024.0 * 1024)) + " MiB";
  return Sig3(b / (1024.0 * 1024 * 1024)) + " GiB";
}

std::string Percent(double fraction) {
  if (fraction > 0 && fraction < 0.001) return "<0.1%";
  return absl::StrFormat("%.1f%%", 100 * fraction);
}

std::string Cut(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

// A table whose columns are as wide as their widest cell; the first `left` columns are
// left-aligned, the others (numbers) right-aligned.
void PrintTable(const std::vector<std::vector<std::string>>& rows, size_t left, std::ostream& out) {
  if (rows.empty()) return;
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      // Columns are measured in characters; "µ" is two bytes of UTF-8 and one column.
      size_t n = 0;
      for (unsigned char ch : row[c]) n += (ch & 0xC0) != 0x80;
      width[c] = std::max(width[c], n);
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      size_t n = 0;
      for (unsigned char ch : row[c]) n += (ch & 0xC0) != 0x80;
      const std::string pad(width[c] - n, ' ');
      if (c > 0) line += "  ";
      line += c < left ? row[c] + (c + 1 < row.size() ? pad : "") : pad + row[c];
    }
    out << line << "\n";
  }
}

void PrintLine(std::ostream& out, const std::string& label, const std::string& value) {
  out << absl::StrFormat("  %-34s %s\n", label, value);
}

std::string KernelKind(const costmodels::KernelSummary& k) {
  if (k.opaque) return "opaque";
  if (k.matmul) {
    return absl::StrCat("matmul ", k.mm.batch > 1 ? absl::StrCat(k.mm.batch, "*") : "", k.mm.m, "x",
                        k.mm.n, "x", k.mm.k);
  }
  return absl::StrCat("vector ", k.rows, "x", k.cols);
}

// ---- tpu ----

int SimulateTpu(const SimulateCommand& cmd, const ir::Module& module,
                const backends::TargetSpec& spec, const costmodels::OpGraph& graph, json& j,
                std::ostream& out, std::ostream& err) {
  absl::StatusOr<backends::tpu::TpuSimulator> sim = backends::tpu::TpuSimulator::Create(spec);
  if (!sim.ok()) {
    err << "error: " << sim.status().message() << "\n";
    return 1;
  }
  const std::vector<costmodels::KernelSummary> kernels =
      costmodels::SummarizeKernels(graph, costmodels::PlanFusion(graph));
  std::vector<backends::tpu::TileConfig> tiles;
  tiles.reserve(kernels.size());
  for (const costmodels::KernelSummary& k : kernels) tiles.push_back(sim->DefaultTile(k));
  const backends::tpu::TpuResult fused = sim->Simulate(kernels, tiles);
  const std::vector<costmodels::KernelSummary> unfused_kernels =
      costmodels::SummarizeKernels(graph, costmodels::Unfused(graph));
  const backends::tpu::TpuResult unfused = sim->Simulate(unfused_kernels);
  const double roofline = costmodels::ModuleRooflineSeconds(module, spec);

  std::vector<size_t> order(kernels.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return fused.kernels[a].seconds > fused.kernels[b].seconds;
  });
  const size_t shown =
      cmd.top <= 0 ? order.size() : std::min(order.size(), static_cast<size_t>(cmd.top));

  if (cmd.json) {
    j["kernels"] = kernels.size();
    j["default"] = {{"valid", fused.valid}, {"seconds", fused.seconds}};
    if (!fused.valid) j["default"]["error"] = fused.error;
    j["unfused"] = {{"kernels", unfused_kernels.size()},
                    {"valid", unfused.valid},
                    {"seconds", unfused.seconds}};
    if (!unfused.valid) j["unfused"]["error"] = unfused.error;
    j["roofline_seconds"] = roofline;
    json top = json::array();
    for (size_t r = 0; r < shown; ++r) {
      const size_t i = order[r];
      const costmodels::KernelSummary& k = kernels[i];
      const backends::tpu::KernelTiming& t = fused.kernels[i];
      json row = {{"kernel", k.name},
                  {"ops", k.ops},
                  {"kind", KernelKind(k)},
                  {"tile", k.opaque ? "" : backends::tpu::TileName(tiles[i])},
                  {"steps", t.steps},
                  {"hbm_bytes", t.hbm_bytes},
                  {"vmem_bytes", t.vmem_bytes},
                  {"compute_seconds", t.compute_s},
                  {"dma_seconds", t.dma_s},
                  {"seconds", t.seconds},
                  {"share", fused.seconds > 0 ? t.seconds / fused.seconds : 0.0}};
      if (!t.valid) row["error"] = t.error;
      top.push_back(std::move(row));
    }
    j["top_kernels"] = std::move(top);
    out << j.dump(2) << "\n";
    return 0;
  }

  auto total = [](const backends::tpu::TpuResult& r) {
    return r.valid ? Seconds(r.seconds) : "invalid: " + r.error;
  };
  PrintLine(out, "ops", absl::StrCat(graph.size()));
  PrintLine(out, "kernels (default fusion)", absl::StrCat(kernels.size()));
  PrintLine(out, "total, default fusion and tiles", total(fused));
  std::string unfused_text = total(unfused);
  if (fused.valid && unfused.valid && fused.seconds > 0) {
    absl::StrAppendFormat(&unfused_text, "  (%.2fx the fused time)",
                          unfused.seconds / fused.seconds);
  }
  PrintLine(out, absl::StrCat("total, unfused (", unfused_kernels.size(), " kernels)"),
            unfused_text);
  PrintLine(out, "roofline sum (reference)", Seconds(roofline));
  if (shown == 0) return 0;
  out << absl::StrFormat("top %d of %d kernels by simulated time:\n", shown, kernels.size());
  std::vector<std::vector<std::string>> rows = {
      {"KERNEL", "KIND", "TILE", "OPS", "STEPS", "HBM", "VMEM", "COMPUTE", "DMA", "TIME", "SHARE"}};
  for (size_t r = 0; r < shown; ++r) {
    const size_t i = order[r];
    const costmodels::KernelSummary& k = kernels[i];
    const backends::tpu::KernelTiming& t = fused.kernels[i];
    rows.push_back(
        {Cut(k.name, 40), KernelKind(k), k.opaque ? "-" : backends::tpu::TileName(tiles[i]),
         absl::StrCat(k.ops), absl::StrCat(t.steps), Bytes(t.hbm_bytes), Bytes(t.vmem_bytes),
         Seconds(t.compute_s), Seconds(t.dma_s), t.valid ? Seconds(t.seconds) : "invalid",
         fused.seconds > 0 ? Percent(t.seconds / fused.seconds) : "-"});
  }
  PrintTable(rows, 3, out);
  return 0;
}

// ---- mcm ----

json McmJson(const backends::mcm::McmResult& r) {
  json j = {{"valid", r.valid}};
  if (!r.valid) {
    j["constraint"] = backends::mcm::ConstraintName(r.violated);
    j["error"] = r.error;
    return j;
  }
  j["chips_used"] = r.chips_used;
  j["throughput_per_s"] = r.throughput;
  j["stage_seconds"] = r.stage_seconds;
  j["bottleneck_chip"] = r.bottleneck_chip;
  j["transfer_bytes"] = r.transfer_bytes;
  return j;
}

int SimulateMcm(const SimulateCommand& cmd, const backends::TargetSpec& spec,
                const costmodels::OpGraph& graph, json& j, std::ostream& out, std::ostream& err) {
  absl::StatusOr<backends::mcm::McmSimulator> sim = backends::mcm::McmSimulator::Create(spec);
  if (!sim.ok()) {
    err << "error: " << sim.status().message() << "\n";
    return 1;
  }
  const backends::mcm::McmResult balanced = sim->Simulate(graph, sim->BalancedPartition(graph));
  const backends::mcm::McmResult one_chip =
      sim->Simulate(graph, std::vector<int32_t>(static_cast<size_t>(graph.size()), 0));
  const backends::MemoryLevel* sram = spec.Memory("sram");
  if (sram == nullptr && !spec.memory.empty()) sram = &spec.memory.front();
  const double capacity = sram != nullptr ? static_cast<double>(sram->bytes) : 0;
  std::vector<int32_t> used;  // chips holding ops
  for (size_t c = 0; c < balanced.chips.size(); ++c) {
    if (balanced.chips[c].ops > 0) used.push_back(static_cast<int32_t>(c));
  }

  if (cmd.json) {
    j["chips"] = sim->chips();
    j["sram_bytes_per_chip"] = capacity;
    j["balanced"] = McmJson(balanced);
    json chips = json::array();
    for (int32_t c : used) {
      const backends::mcm::ChipLoad& l = balanced.chips[static_cast<size_t>(c)];
      chips.push_back({{"chip", c},
                       {"ops", l.ops},
                       {"compute_seconds", l.compute_s},
                       {"transfer_seconds", l.transfer_s},
                       {"sram_bytes", l.sram_bytes},
                       {"sram_fraction", capacity > 0 ? l.sram_bytes / capacity : 0.0}});
    }
    j["balanced"]["per_chip"] = std::move(chips);
    j["one_chip"] = McmJson(one_chip);
    out << j.dump(2) << "\n";
    return 0;
  }

  PrintLine(out, "ops", absl::StrCat(graph.size()));
  if (!balanced.valid) {
    PrintLine(out, "balanced partition", "invalid: " + balanced.error);
  } else {
    PrintLine(out, "chips used (balanced partition)",
              absl::StrCat(balanced.chips_used, " of ", sim->chips()));
    PrintLine(out, "throughput", absl::StrCat(Sig3(balanced.throughput), " inferences/s"));
    PrintLine(out, "stage time",
              absl::StrCat(Seconds(balanced.stage_seconds),
                           balanced.bottleneck_chip >= 0
                               ? absl::StrCat(" (bottleneck chip ", balanced.bottleneck_chip, ")")
                               : ""));
    PrintLine(out, "transfer bytes", Bytes(balanced.transfer_bytes));
    std::vector<std::vector<std::string>> rows = {
        {"CHIP", "OPS", "COMPUTE", "TRANSFER", "STAGE", "SRAM", "SRAM%"}};
    for (int32_t c : used) {
      const backends::mcm::ChipLoad& l = balanced.chips[static_cast<size_t>(c)];
      rows.push_back({absl::StrCat(c, c == balanced.bottleneck_chip ? "*" : ""),
                      absl::StrCat(l.ops), Seconds(l.compute_s), Seconds(l.transfer_s),
                      Seconds(l.compute_s + l.transfer_s), Bytes(l.sram_bytes),
                      capacity > 0 ? Percent(l.sram_bytes / capacity) : "-"});
    }
    if (!used.empty()) {
      out << absl::StrFormat("per chip (* bottleneck; SRAM of %s each):\n", Bytes(capacity));
      PrintTable(rows, 1, out);
    }
  }
  if (one_chip.valid) {
    std::string text = absl::StrCat("stage ", Seconds(one_chip.stage_seconds), ", ",
                                    Sig3(one_chip.throughput), " inferences/s");
    if (balanced.valid && one_chip.throughput > 0) {
      absl::StrAppendFormat(&text, " (balanced: %.2fx)", balanced.throughput / one_chip.throughput);
    }
    out << "all ops on one chip: " << text << "\n";
  } else {
    out << "all ops on one chip: invalid: " << one_chip.error << "\n";
  }
  return 0;
}

// ---- gpu-cluster ----

int SimulateCluster(const SimulateCommand& cmd, const backends::TargetSpec& spec,
                    const costmodels::OpGraph& graph, json& j, std::ostream& out,
                    std::ostream& err) {
  absl::StatusOr<backends::cluster::ClusterSimulator> sim =
      backends::cluster::ClusterSimulator::Create(spec);
  if (!sim.ok()) {
    err << "error: " << sim.status().message() << "\n";
    return 1;
  }
  const std::vector<int32_t> placement = sim->EarliestFinishPlacement(graph);
  const backends::cluster::ClusterResult metf = sim->Simulate(graph, placement);
  const backends::cluster::ClusterResult one =
      sim->Simulate(graph, std::vector<int32_t>(static_cast<size_t>(graph.size()), 0));
  const double speedup =
      metf.valid && one.valid && metf.makespan_s > 0 ? one.makespan_s / metf.makespan_s : 0.0;
  const size_t devices = static_cast<size_t>(sim->devices());
  std::vector<int64_t> placed(devices, 0);
  for (int32_t d : placement) {
    if (d >= 0 && static_cast<size_t>(d) < devices) ++placed[static_cast<size_t>(d)];
  }
  const double capacity = spec.memory.empty() ? 0 : static_cast<double>(spec.memory[0].bytes);
  auto at = [](const std::vector<double>& v, size_t i) { return i < v.size() ? v[i] : 0.0; };

  if (cmd.json) {
    j["devices"] = devices;
    j["memory_bytes_per_device"] = capacity;
    json m = {{"valid", metf.valid}};
    if (!metf.valid) m["error"] = metf.error;
    m["makespan_seconds"] = metf.makespan_s;
    m["transfers"] = metf.transfers;
    m["transfer_bytes"] = metf.transfer_bytes;
    json per = json::array();
    for (size_t d = 0; d < devices; ++d) {
      per.push_back(
          {{"device", d},
           {"ops", placed[d]},
           {"busy_seconds", at(metf.busy_s, d)},
           {"utilization", metf.makespan_s > 0 ? at(metf.busy_s, d) / metf.makespan_s : 0.0},
           {"peak_memory_bytes", at(metf.peak_memory_bytes, d)}});
    }
    m["per_device"] = std::move(per);
    j["metf"] = std::move(m);
    json o = {{"valid", one.valid}};
    if (!one.valid) o["error"] = one.error;
    o["makespan_seconds"] = one.makespan_s;
    o["peak_memory_bytes"] = at(one.peak_memory_bytes, 0);
    j["one_device"] = std::move(o);
    j["speedup"] = speedup;
    out << j.dump(2) << "\n";
    return 0;
  }

  auto makespan = [](const backends::cluster::ClusterResult& r) {
    return r.valid ? Seconds(r.makespan_s) : "invalid: " + r.error;
  };
  PrintLine(out, "ops", absl::StrCat(graph.size()));
  PrintLine(out, "makespan, m-ETF placement", makespan(metf));
  PrintLine(out, "makespan, all on device 0", makespan(one));
  if (speedup > 0) PrintLine(out, "speedup", absl::StrFormat("%.2fx", speedup));
  std::string link = spec.links.empty() ? "" : " over " + spec.links.front().name;
  PrintLine(out, "transfers", absl::StrCat(metf.transfers, ", ", Bytes(metf.transfer_bytes), link));
  std::vector<std::vector<std::string>> rows = {
      {"DEVICE", "OPS", "BUSY", "UTILISATION", "PEAK MEMORY", "MEMORY%"}};
  for (size_t d = 0; d < devices; ++d) {
    rows.push_back({absl::StrCat(d), absl::StrCat(placed[d]), Seconds(at(metf.busy_s, d)),
                    metf.makespan_s > 0 ? Percent(at(metf.busy_s, d) / metf.makespan_s) : "-",
                    Bytes(at(metf.peak_memory_bytes, d)),
                    capacity > 0 ? Percent(at(metf.peak_memory_bytes, d) / capacity) : "-"});
  }
  out << absl::StrFormat("per device, m-ETF placement (memory %s each):\n", Bytes(capacity));
  PrintTable(rows, 1, out);
  return 0;
}

}  // namespace

int RunSimulate(const SimulateCommand& cmd, std::ostream& out, std::ostream& err) {
  backends::TargetRegistry& registry = backends::TargetRegistry::Global();
  if (!cmd.specs_dir.empty()) {
    if (absl::Status s = registry.AddDirectory(cmd.specs_dir); !s.ok()) {
      err << "error: --specs-dir: " << s.message() << "\n";
      return 1;
    }
  }
  if (cmd.top < 0) {
    err << "error: --top must be >= 0 (0: every kernel)\n";
    return 1;
  }
  const std::string target = ResolveAlias(cmd.target);
  const backends::TargetSpec* spec = registry.Find(target);
  if (spec == nullptr) {
    err << "error: unknown target '" << cmd.target << "' (" << KnownTargets() << ")\n";
    return 1;
  }
  const char* worker = WorkerOfKind(spec->kind);
  if (worker == nullptr) {
    err << "error: target '" << spec->name << "' is of kind '" << spec->kind
        << "', which no simulator runs (tpu, mcm, gpu-cluster)\n";
    return 1;
  }

  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<ir::Module> module = LoadVerified(cmd.file, err);
  if (module == nullptr) return 1;
  const costmodels::OpGraph graph = costmodels::BuildOpGraph(*module);

  json j;
  j["module"] = module->name();
  j["target"] = spec->name;
  j["kind"] = spec->kind;
  j["simulator"] = worker;
  j["ops"] = graph.size();
  if (!cmd.json) {
    out << absl::StrFormat("module %s on %s, simulated by %s\n  %s\n", module->name(), spec->name,
                           worker, spec->description);
  }
  int code = 1;
  if (spec->kind == "tpu") {
    code = SimulateTpu(cmd, *module, *spec, graph, j, out, err);
  } else if (spec->kind == "mcm") {
    code = SimulateMcm(cmd, *spec, graph, j, out, err);
  } else {
    code = SimulateCluster(cmd, *spec, graph, j, out, err);
  }
  if (code == 0 && !cmd.json) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    out << absl::StrFormat("(parsed and simulated in %.1f ms)\n", ms);
  }
  return code;
}

}  // namespace mltune::client
