#include "daemon/graph_input.h"

#include "absl/strings/str_cat.h"
#include "ir/fingerprint.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"

namespace mltune::daemon {

absl::StatusOr<LoadedGraph> LoadGraph(std::string_view data, GraphFormat format,
                                      const std::string& name, const GraphLimits& limits) {
  const std::string display = name.empty() ? "<graph>" : name;
  if (format == GraphFormat::kOnnx) {
    return absl::UnimplementedError(
        absl::StrCat(display,
                     ": ONNX input is not supported yet; send XLA HLO text "
                     "(GRAPH_FORMAT_HLO_TEXT)"));
  }
  if (data.empty())
    return absl::InvalidArgumentError(absl::StrCat(display, ": the graph is empty"));
  if (static_cast<int64_t>(data.size()) > limits.max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(display, ": the graph is ", data.size(),
                                                   " bytes; this daemon accepts at most ",
                                                   limits.max_bytes, " (--max-graph-bytes)"));
  }
  ir::ParseOptions options;
  options.filename = display;
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(data, options);
  if (!module.ok()) return absl::InvalidArgumentError(module.status().message());
  const int64_t instructions = (*module)->instruction_count();
  if (instructions > limits.max_instructions) {
    return absl::InvalidArgumentError(absl::StrCat(
        display, ": the graph has ", instructions, " instructions; this daemon accepts at most ",
        limits.max_instructions, " (--max-instructions)"));
  }
  if (absl::Status verified = ir::VerifyModule(**module); !verified.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(display, ": the graph does not verify: ", verified.message()));
  }
  LoadedGraph loaded;
  loaded.fingerprint = ir::Fingerprint(**module);
  loaded.module = std::shared_ptr<const ir::Module>(*std::move(module));
  return loaded;
}

}  // namespace mltune::daemon
