// Internal to mltune_daemon: a graph received in chunks (CompileService.UploadGraph), checked
// against the hash and size its first chunk declares, spooled to a file under the daemon's data
// folder (an upload holds one chunk in memory, not the model) and stored once verified. Errors
// are InvalidArgument and say what was wrong with the stream; nothing is stored after one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "storage/store.h"

struct evp_md_ctx_st;

namespace mltune::daemon {

// Lowercase hex SHA-256, fed piece by piece.
class Sha256Hex {
 public:
  Sha256Hex();
  ~Sha256Hex();
  Sha256Hex(const Sha256Hex&) = delete;
  Sha256Hex& operator=(const Sha256Hex&) = delete;
  void Update(std::string_view data);
  std::string Finish();

 private:
  evp_md_ctx_st* ctx_;
};

// The lowercase hex SHA-256 of `data`: the key a graph is stored under.
std::string GraphHash(std::string_view data);
// InvalidArgument unless `sha256` is 64 lowercase hex digits.
absl::Status CheckGraphHash(const std::string& sha256);

class GraphUpload {
 public:
  // Checks the declared hash (64 hex digits; upper case is taken as lower) and size (1 byte up to
  // `max_bytes`, the daemon's --max-graph-bytes), then opens a spool file in `spool_dir`.
  static absl::StatusOr<std::unique_ptr<GraphUpload>> Begin(const std::string& sha256, int64_t size,
                                                            int64_t max_bytes,
                                                            const std::filesystem::path& spool_dir);
  ~GraphUpload();  // removes the spool file
  GraphUpload(const GraphUpload&) = delete;
  GraphUpload& operator=(const GraphUpload&) = delete;

  // One chunk. Its sha256 and size may be empty and 0, or must repeat the first chunk's; its
  // offset must be the number of bytes received so far, and its data must not run past the size.
  absl::Status Add(const std::string& sha256, int64_t size, int64_t offset, std::string_view data);
  // The stream ended: every declared byte must have come, and they must hash to the declared
  // SHA-256. Then stores them in `store`: true when stored now, false when another upload of the
  // same graph stored it first.
  absl::StatusOr<bool> Finish(storage::Store& store);

  const std::string& sha256() const { return sha256_; }
  int64_t size() const { return size_; }
  int64_t received() const { return received_; }

 private:
  GraphUpload(std::string sha256, int64_t size, std::filesystem::path spool);

  std::string sha256_;
  int64_t size_;
  int64_t received_ = 0;
  std::filesystem::path spool_;
  std::ofstream out_;
  Sha256Hex hash_;
};

}  // namespace mltune::daemon
