#include "client/graph_source.h"

#include <openssl/evp.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"

namespace mltune::client {
namespace {

constexpr size_t kHeadBytes = 64;

absl::Status Unreadable(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", why));
}

}  // namespace

GraphSource GraphSource::FromBytes(std::string_view bytes) {
  GraphSource source;
  source.bytes_ = bytes;
  source.size_ = static_cast<int64_t>(bytes.size());
  source.head_ = std::string(bytes.substr(0, kHeadBytes));
  return source;
}

absl::StatusOr<GraphSource> GraphSource::FromFile(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Unreadable(path, ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return Unreadable(path, "cannot open it");
  GraphSource source;
  source.path_ = path;
  source.size_ = static_cast<int64_t>(size);
  source.head_.resize(std::min<size_t>(kHeadBytes, size));
  in.read(source.head_.data(), static_cast<std::streamsize>(source.head_.size()));
  if (!in) return Unreadable(path, "cannot read its first bytes");
  return source;
}

absl::Status GraphSource::ForEachPiece(
    int64_t piece_bytes, const std::function<bool(std::string_view, int64_t)>& fn) const {
  if (path_.empty()) {
    for (int64_t offset = 0; offset < size_; offset += piece_bytes) {
      if (!fn(bytes_.substr(offset, piece_bytes), offset)) break;
    }
    return absl::OkStatus();
  }
  std::ifstream in(path_, std::ios::binary);
  if (!in) return Unreadable(path_, "cannot open it");
  std::string piece;
  for (int64_t offset = 0; offset < size_; offset += piece_bytes) {
    piece.resize(static_cast<size_t>(std::min(piece_bytes, size_ - offset)));
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    if (!in) return Unreadable(path_, absl::StrCat("it ended early, at byte ", offset));
    if (!fn(piece, offset)) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> GraphSource::Sha256() const {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  absl::Status read = ForEachPiece(int64_t{4} << 20, [&](std::string_view piece, int64_t) {
    EVP_DigestUpdate(ctx.get(), piece.data(), piece.size());
    return true;
  });
  if (!read.ok()) return read;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  return hex;
}

absl::StatusOr<std::string> GraphSource::ReadAll() const {
  if (path_.empty()) return std::string(bytes_);
  std::string all;
  all.reserve(static_cast<size_t>(size_));
  absl::Status read = ForEachPiece(int64_t{4} << 20, [&](std::string_view piece, int64_t) {
    all.append(piece);
    return true;
  });
  if (!read.ok()) return read;
  return all;
}

}  // namespace mltune::client
