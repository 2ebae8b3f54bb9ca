// What one element of each elementwise op costs in the CPU backend's generated code, next to the
// figure the learned cost model's features assume (costmodels::features::ElementCostNs, node slot
// 40 and kernel slot 42): a check that the table still describes the backend.
//
//   build/release/bench/element_costs [--elements 65536] [--ops atan2,exp]
//
// Each op runs alone as a module over `elements` f32 values on the inputs `collect` measures
// kernels with (ir::MakeRandomArguments: uniform in [-1, 1)), timed by the backend's runner child
// on one thread. The time per element includes a load and a store, about what `add` costs.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_backend.h"
#include "bench/cpu_bench_util.h"
#include "costmodels/features/kernel_graph.h"
#include "ir/opcode.h"

namespace {

using namespace mltune;

struct Op {
  const char* name;  // HLO opcode
  int arity;
};

constexpr Op kOps[] = {
    {"add", 2},
    {"multiply", 2},
    {"maximum", 2},
    {"floor", 1},
    {"divide", 2},
    {"sqrt", 1},
    {"rsqrt", 1},
    {"exponential", 1},
    {"logistic", 1},
    {"tanh", 1},
    {"log", 1},
    {"sine", 1},
    {"cosine", 1},
    {"power", 2},
    {"log-plus-one", 1},
    {"remainder", 2},
    {"exponential-minus-one", 1},
    {"cbrt", 1},
    {"atan2", 2},
    {"erf", 1},
    {"tan", 1},
};

std::string ModuleText(const Op& op, int64_t elements) {
  const std::string shape = absl::StrCat("f32[", elements, "]");
  std::vector<std::string> params, operands;
  for (int i = 0; i < op.arity; ++i) {
    params.push_back(absl::StrCat("  p", i, " = ", shape, " parameter(", i, ")\n"));
    operands.push_back(absl::StrCat("p", i));
  }
  return absl::StrCat("HloModule element_cost\n\nENTRY e {\n", absl::StrJoin(params, ""),
                      "  ROOT o = ", shape, " ", op.name, "(", absl::StrJoin(operands, ", "),
                      ")\n}\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Each elementwise op's time per element in the CPU backend's code, against the "
      "cost model features' table"};
  int64_t elements = 65536;
  std::string only;
  app.add_option("--elements", elements, "Elements per op")
      ->default_val(65536)
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 26));
  app.add_option("--ops", only, "Comma-separated HLO opcodes (default: all in the table)");
  CLI11_PARSE(app, argc, argv);
  std::vector<std::string> wanted;
  if (!only.empty()) wanted = absl::StrSplit(only, ',');

  backends::cpu::MeasureOptions measure;
  measure.max_seconds = 0.5;
  std::cout << absl::StrFormat("| op | measured ns / element | features' table | ratio |\n");
  std::cout << "|---|---:|---:|---:|\n";
  int failures = 0;
  for (const Op& op : kOps) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), op.name) == wanted.end()) {
      continue;
    }
    const std::optional<ir::Opcode> opcode = ir::ParseOpcode(op.name);
    absl::StatusOr<backends::cpu::Timing> timing = [&]() -> absl::StatusOr<backends::cpu::Timing> {
      if (!opcode.has_value()) return absl::InvalidArgumentError("not an opcode");
      absl::StatusOr<std::unique_ptr<ir::Module>> parsed =
          bench::ParseAndVerify(ModuleText(op, elements), op.name);
      if (!parsed.ok()) return parsed.status();
      absl::StatusOr<std::unique_ptr<ir::Module>> module = bench::PrepareForCpu(**parsed);
      if (!module.ok()) return module.status();
      return backends::cpu::MeasureModule(**module, {}, nullptr, measure);
    }();
    if (!timing.ok()) {
      std::cerr << op.name << ": " << timing.status().message() << "\n";
      ++failures;
      continue;
    }
    const double measured = timing->median_s / static_cast<double>(elements) * 1e9;
    const double table = costmodels::features::ElementCostNs(*opcode, ir::PrimitiveType::kF32);
    std::cout << absl::StrFormat("| %s | %.2f | %.2f | %.2f |\n", op.name, measured, table,
                                 measured / table);
  }
  return failures == 0 ? 0 : 1;
}
