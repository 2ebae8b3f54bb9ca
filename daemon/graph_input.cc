#include "daemon/graph_input.h"

#include "absl/strings/str_cat.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/fingerprint.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"

namespace mltune::daemon {

absl::StatusOr<LoadedGraph> LoadGraph(std::string_view data, GraphFormat format,
                                      const std::string& name, const GraphLimits& limits) {
  const std::string display = name.empty() ? "<graph>" : name;
  if (data.empty())
    return absl::InvalidArgumentError(absl::StrCat(display, ": the graph is empty"));
  if (static_cast<int64_t>(data.size()) > limits.max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(display, ": the graph is ", data.size(),
                                                   " bytes; this daemon accepts at most ",
                                                   limits.max_bytes, " (--max-graph-bytes)"));
  }
  absl::StatusOr<std::unique_ptr<ir::Module>> module;
  // Detected by content too: HLO text is printable, a serialized ModelProto starts with a tag.
  const bool onnx = format == GraphFormat::kOnnx || !ir::onnx::LooksLikeText(data);
  if (onnx) {
    ir::onnx::OnnxImportOptions options;
    options.display_name = display;
    options.max_model_bytes = limits.max_bytes;
    absl::StatusOr<ir::onnx::OnnxImport> imported = ir::onnx::ImportOnnxModel(data, options);
    if (!imported.ok()) return imported.status();
    module = std::move(imported->module);
  } else {
    ir::ParseOptions options;
    options.filename = display;
    module = ir::ParseHloText(data, options);
    if (!module.ok()) return absl::InvalidArgumentError(module.status().message());
  }
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
  loaded.format = onnx ? GraphFormat::kOnnx : GraphFormat::kHloText;
  loaded.fingerprint = ir::Fingerprint(**module);
  loaded.module = std::shared_ptr<const ir::Module>(*std::move(module));
  return loaded;
}

std::string FingerprintCache::Key(const std::string& sha256, GraphFormat format) {
  return absl::StrCat(format == GraphFormat::kOnnx ? "o:" : "h:", sha256);
}

std::optional<std::string> FingerprintCache::Find(const std::string& sha256, GraphFormat declared) {
  if (std::optional<std::string> onnx = FindKey(Key(sha256, GraphFormat::kOnnx))) return onnx;
  if (declared == GraphFormat::kOnnx) return std::nullopt;
  return FindKey(Key(sha256, GraphFormat::kHloText));
}

std::optional<std::string> FingerprintCache::FindKey(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

void FingerprintCache::Insert(const std::string& sha256, GraphFormat format,
                              const std::string& fingerprint) {
  const std::string key = Key(sha256, format);
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(key, fingerprint);
  index_[key] = lru_.begin();
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

}  // namespace mltune::daemon
