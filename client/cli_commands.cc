#include "client/cli_commands.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <ostream>

#include "absl/strings/str_format.h"
#include "client/load.h"
#include "ir/evaluator/evaluator.h"
#include "ir/ir.h"
#include "nlohmann/json.hpp"

namespace mltune::client {
namespace {

using Clock = std::chrono::steady_clock;

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct LeafSummary {
  std::string path;  // tuple index path, e.g. "{1,0}"
  std::string shape;
  int64_t elements = 0;
  double min = 0, max = 0, mean = 0;
  int64_t non_finite = 0;
  std::string first;  // first few values
};

void Summarize(const ir::Literal& l, const std::string& path, std::vector<LeafSummary>& out) {
  if (l.shape().IsTuple()) {
    for (size_t i = 0; i < l.elements().size(); ++i) {
      Summarize(l.elements()[i], path.empty() ? std::to_string(i) : path + "," + std::to_string(i),
                out);
    }
    return;
  }
  LeafSummary s;
  s.path = "{" + path + "}";
  s.shape = l.shape().ToString(false);
  s.elements = l.element_count();
  if (!l.shape().IsArray() || s.elements == 0) {
    out.push_back(s);
    return;
  }
  double sum = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  int64_t finite = 0;
  for (int64_t i = 0; i < s.elements; ++i) {
    const double v = l.GetAsDouble(i);
    if (!std::isfinite(v)) {
      ++s.non_finite;
      continue;
    }
    ++finite;
    sum += v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  if (finite == 0) s.min = s.max = std::numeric_limits<double>::quiet_NaN();
  s.mean = finite ? sum / static_cast<double>(finite) : std::numeric_limits<double>::quiet_NaN();
  // The first values as the literal prints them, cut to a readable width.
  std::string text = l.ToString();
  if (text.size() > 72) text = text.substr(0, 69) + "...";
  s.first = text;
  out.push_back(s);
}

}  // namespace

int RunParse(const ParseCommand& cmd, std::ostream& out, std::ostream& err) {
  const auto start = Clock::now();
  std::unique_ptr<ir::Module> module = LoadVerified(cmd.file, err);
  if (module == nullptr) return 1;
  const double ms = MillisSince(start);

  std::map<std::string, int64_t> histogram;
  for (ir::Computation* c : module->computations()) {
    for (ir::Instruction* i : c->instructions())
      ++histogram[std::string(ir::OpcodeName(i->opcode()))];
  }
  std::vector<std::pair<std::string, int64_t>> sorted(histogram.begin(), histogram.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });

  if (cmd.json) {
    nlohmann::ordered_json j;
    j["module"] = module->name();
    j["entry"] = module->entry()->name();
    j["verified"] = true;
    j["instruction_count"] = module->instruction_count();
    j["fingerprint"] = ir::Fingerprint(*module);
    nlohmann::ordered_json comps = nlohmann::ordered_json::array();
    for (ir::Computation* c : module->computations()) {
      comps.push_back({{"name", c->name()},
                       {"instructions", c->instruction_count()},
                       {"parameters", c->parameter_count()},
                       {"entry", c->is_entry()}});
    }
    j["computations"] = comps;
    nlohmann::ordered_json hist = nlohmann::ordered_json::object();
    for (const auto& [op, n] : sorted) hist[op] = n;
    j["opcodes"] = hist;
    out << j.dump(2) << "\n";
    return 0;
  }
  out << absl::StrFormat("module %s: verified, %d computations, %d instructions (%.1f ms)\n",
                         module->name(), module->computation_count(), module->instruction_count(),
                         ms);
  out << "computations:\n";
  for (ir::Computation* c : module->computations()) {
    out << absl::StrFormat("  %-40s %6d instructions, %2d parameters%s\n", c->name(),
                           c->instruction_count(), c->parameter_count(),
                           c->is_entry() ? "  (ENTRY)" : "");
  }
  out << "opcodes:\n";
  for (const auto& [op, n] : sorted) out << absl::StrFormat("  %-28s %6d\n", op, n);
  return 0;
}

int RunPrint(const PrintCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<ir::Module> module = LoadVerified(cmd.file, err);
  if (module == nullptr) return 1;
  ir::PrintOptions options;
  options.print_metadata = cmd.metadata;
  options.print_operand_shapes = cmd.operand_shapes;
  out << ir::PrintModule(*module, options);
  return 0;
}

int RunEval(const EvalCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<ir::Module> module = LoadVerified(cmd.file, err);
  if (module == nullptr) return 1;
  absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(*module, cmd.seed);
  if (!args.ok()) {
    err << "error: " << cmd.file << ": " << args.status().message() << "\n";
    return 1;
  }
  const auto start = Clock::now();
  absl::StatusOr<ir::Literal> result = ir::Evaluate(*module, *args);
  const double ms = MillisSince(start);
  if (!result.ok()) {
    err << "error: " << cmd.file << ": cannot evaluate: " << result.status().message() << "\n";
    return 1;
  }
  std::vector<LeafSummary> leaves;
  Summarize(*result, "", leaves);
  const std::string digest = ir::LiteralDigest(*result);
  if (cmd.json) {
    nlohmann::ordered_json j;
    j["module"] = module->name();
    j["seed"] = cmd.seed;
    j["parameters"] = args->size();
    j["eval_ms"] = ms;
    j["digest"] = digest;
    nlohmann::ordered_json outs = nlohmann::ordered_json::array();
    for (const LeafSummary& s : leaves) {
      outs.push_back({{"index", s.path},
                      {"shape", s.shape},
                      {"elements", s.elements},
                      {"min", s.min},
                      {"max", s.max},
                      {"mean", s.mean},
                      {"non_finite", s.non_finite}});
    }
    j["outputs"] = outs;
    out << j.dump(2) << "\n";
    return 0;
  }
  out << absl::StrFormat("module %s: evaluated on %d random arguments (seed %d) in %.1f ms\n",
                         module->name(), args->size(), cmd.seed, ms);
  out << absl::StrFormat("%-8s %-24s %10s %12s %12s %12s %s\n", "output", "shape", "elements",
                         "min", "max", "mean", "values");
  for (const LeafSummary& s : leaves) {
    out << absl::StrFormat("%-8s %-24s %10d %12.6g %12.6g %12.6g %s\n", s.path, s.shape, s.elements,
                           s.min, s.max, s.mean, s.first);
    if (s.non_finite > 0) out << absl::StrFormat("         (%d non-finite values)\n", s.non_finite);
  }
  out << "digest " << digest << "\n";
  return 0;
}

int RunFingerprint(const FingerprintCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<ir::Module> module = LoadVerified(cmd.file, err);
  if (module == nullptr) return 1;
  out << ir::Fingerprint(*module) << "  " << cmd.file << "\n";
  return 0;
}

}  // namespace mltune::client
