#include "daemon/graph_upload.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <atomic>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace mltune::daemon {

Sha256Hex::Sha256Hex() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }

Sha256Hex::~Sha256Hex() { EVP_MD_CTX_free(ctx_); }

void Sha256Hex::Update(std::string_view data) { EVP_DigestUpdate(ctx_, data.data(), data.size()); }

std::string Sha256Hex::Finish() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx_, digest, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  return hex;
}

std::string GraphHash(std::string_view data) {
  Sha256Hex hash;
  hash.Update(data);
  return hash.Finish();
}

absl::Status CheckGraphHash(const std::string& sha256) {
  bool hex = sha256.size() == 64;
  for (char c : sha256) hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (hex) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("'", sha256.substr(0, 80), "' is not a SHA-256 (64 lowercase hex digits)"));
}

namespace {

std::string MiB(int64_t bytes) {
  return absl::StrCat(bytes, " bytes (", (bytes + (1 << 19)) >> 20, " MiB)");
}

}  // namespace

GraphUpload::GraphUpload(std::string sha256, int64_t size, std::filesystem::path spool)
    : sha256_(std::move(sha256)), size_(size), spool_(std::move(spool)) {}

GraphUpload::~GraphUpload() {
  out_.close();
  std::error_code ec;
  std::filesystem::remove(spool_, ec);
}

absl::StatusOr<std::unique_ptr<GraphUpload>> GraphUpload::Begin(
    const std::string& sha256, int64_t size, int64_t max_bytes,
    const std::filesystem::path& spool_dir) {
  const std::string lower = absl::AsciiStrToLower(sha256);
  if (absl::Status s = CheckGraphHash(lower); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("UploadGraph: the first chunk must name the graph's sha256: ", s.message()));
  }
  if (size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "UploadGraph: the first chunk must give the graph's size in bytes (> 0), got ", size));
  }
  if (size > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("UploadGraph: the graph is ", MiB(size),
                                                   "; this daemon accepts at most ", MiB(max_bytes),
                                                   " (--max-graph-bytes)"));
  }
  std::error_code ec;
  std::filesystem::create_directories(spool_dir, ec);
  // Unique per upload: two clients may send the same graph at once.
  static std::atomic<int64_t> counter{0};
  std::filesystem::path spool =
      spool_dir / absl::StrCat(lower.substr(0, 16), "-", getpid(), "-", counter++, ".part");
  auto upload = std::unique_ptr<GraphUpload>(new GraphUpload(lower, size, spool));
  upload->out_.open(spool, std::ios::binary | std::ios::trunc);
  if (!upload->out_) {
    return absl::UnavailableError(
        absl::StrCat("UploadGraph: cannot write the upload's spool file ", spool.string()));
  }
  return upload;
}

absl::Status GraphUpload::Add(const std::string& sha256, int64_t size, int64_t offset,
                              std::string_view data) {
  if (!sha256.empty() && absl::AsciiStrToLower(sha256) != sha256_) {
    return absl::InvalidArgumentError(absl::StrCat("UploadGraph: a chunk names graph ", sha256,
                                                   ", the first chunk ", sha256_,
                                                   ": one stream uploads one graph"));
  }
  if (size != 0 && size != size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("UploadGraph: a chunk gives the size ", size, ", the first chunk ", size_));
  }
  if (offset != received_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "UploadGraph: a chunk starts at offset ", offset, " but ", received_,
        " bytes came before it: chunks must be sent in order, without gaps or repeats"));
  }
  if (static_cast<int64_t>(data.size()) > size_ - received_) {
    return absl::InvalidArgumentError(absl::StrCat("UploadGraph: the chunk at offset ", offset,
                                                   " runs past the declared size of ", size_,
                                                   " bytes"));
  }
  hash_.Update(data);
  out_.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out_) {
    return absl::UnavailableError(absl::StrCat("UploadGraph: cannot write the upload's spool file ",
                                               spool_.string(), " (disk full?)"));
  }
  received_ += static_cast<int64_t>(data.size());
  return absl::OkStatus();
}

absl::StatusOr<bool> GraphUpload::Finish(storage::Store& store) {
  if (received_ != size_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "UploadGraph: the upload was truncated: ", received_, " of ", size_,
        " bytes came before the stream ended; nothing was stored, send the graph again"));
  }
  const std::string got = hash_.Finish();
  if (got != sha256_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "UploadGraph: the bytes received hash to ", got, ", not the declared ", sha256_,
        ": the upload was corrupted (or the hash is not of this file); nothing was stored"));
  }
  out_.close();
  if (!out_) {
    return absl::UnavailableError(
        absl::StrCat("UploadGraph: cannot write the upload's spool file ", spool_.string()));
  }
  std::ifstream in(spool_, std::ios::binary);
  std::string piece;
  return store.PutGraph(sha256_, [&]() -> absl::StatusOr<std::string> {
    piece.resize(static_cast<size_t>(storage::kGraphPieceBytes));
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    piece.resize(static_cast<size_t>(in.gcount()));
    if (in.bad()) {
      return absl::UnavailableError(
          absl::StrCat("UploadGraph: cannot read back the spool file ", spool_.string()));
    }
    return piece;
  });
}

}  // namespace mltune::daemon
