// Internal to mltune_rpc_client: a graph to send, held by the caller or read from a file piece by
// piece (a model file is hashed and uploaded without ever being read whole), with its SHA-256.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mltune::client {

class GraphSource {
 public:
  // `bytes` must outlive the source.
  static GraphSource FromBytes(std::string_view bytes);
  // InvalidArgument naming the file when it cannot be opened.
  static absl::StatusOr<GraphSource> FromFile(const std::string& path);

  int64_t size() const { return size_; }
  // The first bytes (up to 64): enough to tell HLO text from a binary ONNX model.
  const std::string& head() const { return head_; }
  // Lowercase hex SHA-256 of every byte (a pass over a file).
  absl::StatusOr<std::string> Sha256() const;
  // Calls `fn(piece, offset)` on consecutive pieces of at most `piece_bytes`, in order, until the
  // end or until `fn` returns false. InvalidArgument when a file cannot be read (or changed size).
  absl::Status ForEachPiece(int64_t piece_bytes,
                            const std::function<bool(std::string_view, int64_t)>& fn) const;
  // Every byte, in memory (an inline request).
  absl::StatusOr<std::string> ReadAll() const;

 private:
  GraphSource() = default;

  std::string_view bytes_;  // when held in memory
  std::string path_;        // when read from a file
  int64_t size_ = 0;
  std::string head_;
};

}  // namespace mltune::client
