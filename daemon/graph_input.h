// Turning a request's graph bytes into a verified module, under the daemon's limits. Errors are
// InvalidArgument with the parser's "NAME:LINE:COLUMN: what was expected", or Unimplemented for a
// format the daemon cannot read yet.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "ir/module.h"

namespace mltune::daemon {

enum class GraphFormat { kHloText, kOnnx };

struct GraphLimits {
  int64_t max_bytes = int64_t{2} << 30;
  int64_t max_instructions = 1'000'000;
};

struct LoadedGraph {
  std::shared_ptr<const ir::Module> module;
  std::string fingerprint;                     // ir::Fingerprint
  GraphFormat format = GraphFormat::kHloText;  // as read: a binary graph is ONNX whatever it said
};

// `name` appears in errors ("" = "<graph>").
absl::StatusOr<LoadedGraph> LoadGraph(std::string_view data, GraphFormat format,
                                      const std::string& name, const GraphLimits& limits);

// Remembers the structural fingerprint of graph bytes already parsed, keyed by the SHA-256 of the
// bytes and their format, so a repeated lookup or cached submit of the same graph skips the parse,
// the verifier and the structural hash (together ~100x the cost of hashing the bytes; a graph
// sent by hash is not even read from the store). Only graphs that loaded successfully under the
// daemon's limits are remembered. Thread-safe; LRU.
class FingerprintCache {
 public:
  explicit FingerprintCache(size_t capacity = 4096) : capacity_(capacity) {}

  // The fingerprint of the graph whose bytes have the (hex) SHA-256 `sha256`, when it loaded
  // before as `declared` says: as ONNX, or (kHloText: read by its content) as either format.
  std::optional<std::string> Find(const std::string& sha256, GraphFormat declared);
  // `format`: what the graph was read as (LoadedGraph::format).
  void Insert(const std::string& sha256, GraphFormat format, const std::string& fingerprint);

 private:
  static std::string Key(const std::string& sha256, GraphFormat format);
  std::optional<std::string> FindKey(const std::string& key);

  using Entry = std::pair<std::string, std::string>;  // key, fingerprint
  size_t capacity_;
  std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace mltune::daemon
