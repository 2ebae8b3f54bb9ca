#include "daemon/access/access_policy.h"

#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace mltune::daemon {
namespace {

constexpr size_t kMinTokenLength = 16;

// Tokens are looked up by their SHA-256, so that the lookup's timing says nothing about how
// much of a guessed token was right.
std::string Digest(absl::string_view token) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(token.data(), token.size(), out, &size, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char*>(out), size);
}

bool TokenCharacter(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
         std::string_view("._~+/=-").find(c) != std::string_view::npos;
}

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kSubmit:
      return "submit";
    case Role::kRead:
      return "read";
    case Role::kAdmin:
      return "admin";
    case Role::kWorker:
      return "worker";
  }
  return "?";
}

struct AccessPolicy::State {
  struct Entry {
    TokenGrant grant;
    // The token bucket of `grant.rate`: tokens left, and when it was last filled.
    mutable std::mutex mu;
    mutable double left = 0;
    mutable std::chrono::steady_clock::time_point filled;
  };
  std::vector<std::unique_ptr<Entry>> entries;
  std::unordered_map<std::string, const Entry*> by_digest;
};

AccessPolicy::AccessPolicy() : state_(std::make_unique<State>()) {}
AccessPolicy::~AccessPolicy() = default;

bool AccessPolicy::enabled() const { return !state_->entries.empty(); }
size_t AccessPolicy::size() const { return state_->entries.size(); }

absl::StatusOr<std::unique_ptr<AccessPolicy>> AccessPolicy::Parse(std::string_view text,
                                                                  std::string_view file) {
  auto policy = std::make_unique<AccessPolicy>();
  State& s = *policy->state_;
  const std::string all(text), where(file);
  std::unordered_map<std::string, int> names;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(all, '\n')) {
    ++line_number;
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    // Fields with their 1-based columns.
    std::vector<std::pair<absl::string_view, size_t>> fields;
    for (size_t i = 0; i < line.size();) {
      if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
      fields.emplace_back(line.substr(i, j - i), i + 1);
      i = j;
    }
    if (fields.empty()) continue;
    auto error = [&](size_t column, const std::string& what) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ":", line_number, ":", column, ": ", what));
    };
    if (fields.size() < 3) {
      return error(fields.back().second + fields.back().first.size(),
                   "expected NAME TOKEN ROLE[,ROLE...] [max_queued=N] [rate=R]");
    }
    auto entry = std::make_unique<State::Entry>();
    TokenGrant& g = entry->grant;
    g.name = std::string(fields[0].first);
    if (auto [it, fresh] = names.emplace(g.name, line_number); !fresh) {
      return error(fields[0].second,
                   absl::StrCat("token name '", g.name, "' is already used on line ", it->second));
    }
    const absl::string_view token = fields[1].first;
    if (token.size() < kMinTokenLength) {
      return error(fields[1].second,
                   absl::StrCat("token of '", g.name, "' has ", token.size(),
                                " characters; at least ", kMinTokenLength, " are needed"));
    }
    for (size_t i = 0; i < token.size(); ++i) {
      if (!TokenCharacter(token[i])) {
        return error(fields[1].second + i, "a token is made of [A-Za-z0-9._~+/=-]");
      }
    }
    size_t column = fields[2].second;
    for (absl::string_view role : absl::StrSplit(fields[2].first, ',')) {
      if (role == "submit") {
        g.roles |= static_cast<uint8_t>(Role::kSubmit);
      } else if (role == "read") {
        g.roles |= static_cast<uint8_t>(Role::kRead);
      } else if (role == "admin") {
        g.roles |= static_cast<uint8_t>(Role::kAdmin) | static_cast<uint8_t>(Role::kSubmit) |
                   static_cast<uint8_t>(Role::kRead);
      } else if (role == "worker") {
        g.roles |= static_cast<uint8_t>(Role::kWorker);
      } else {
        return error(column,
                     absl::StrCat("unknown role '", role, "' (submit, read, admin, worker)"));
      }
      column += role.size() + 1;
    }
    for (size_t f = 3; f < fields.size(); ++f) {
      const auto [field, at] = fields[f];
      const size_t eq = field.find('=');
      const absl::string_view key = field.substr(0, eq);
      const absl::string_view value = eq == absl::string_view::npos ? "" : field.substr(eq + 1);
      if (key == "max_queued") {
        if (!absl::SimpleAtoi(value, &g.max_queued) || g.max_queued < 1) {
          return error(at + eq + 1, "max_queued takes a positive integer");
        }
      } else if (key == "rate") {
        if (!absl::SimpleAtod(value, &g.rate) || !(g.rate > 0)) {
          return error(at + eq + 1, "rate takes a positive number of requests per second");
        }
      } else {
        return error(at, absl::StrCat("unknown limit '", key, "' (max_queued=N, rate=R)"));
      }
    }
    entry->left = std::max(1.0, g.rate);
    entry->filled = std::chrono::steady_clock::now();
    if (!s.by_digest.emplace(Digest(token), entry.get()).second) {
      return error(fields[1].second, absl::StrCat("the token of '", g.name,
                                                  "' is also another name's: each needs its own"));
    }
    s.entries.push_back(std::move(entry));
  }
  return policy;
}

absl::StatusOr<std::unique_ptr<AccessPolicy>> AccessPolicy::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the tokens file ", path));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::unique_ptr<AccessPolicy>> policy = Parse(text.str(), path);
  if (policy.ok() && !(*policy)->enabled()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no tokens"));
  }
  return policy;
}

absl::StatusOr<const TokenGrant*> AccessPolicy::Authorize(std::string_view authorization, Role role,
                                                          std::string_view method) const {
  if (!enabled()) return nullptr;
  const std::string call(method);
  constexpr std::string_view kBearer = "Bearer ";
  if (authorization.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        call, " needs a bearer token (mltune --token, or $MLTUNE_TOKEN); none was sent"));
  }
  if (authorization.substr(0, kBearer.size()) != kBearer) {
    return absl::UnauthenticatedError(
        absl::StrCat(call, ": the authorization metadata is not 'Bearer TOKEN'"));
  }
  const std::string_view token = authorization.substr(kBearer.size());
  auto it = state_->by_digest.find(Digest(absl::string_view(token.data(), token.size())));
  if (it == state_->by_digest.end()) {
    return absl::UnauthenticatedError(absl::StrCat(call, ": unknown token"));
  }
  const State::Entry& e = *it->second;
  if (!e.grant.Has(role)) {
    return absl::PermissionDeniedError(absl::StrCat("token '", e.grant.name, "' lacks the role '",
                                                    std::string(RoleName(role)), "' that ", call,
                                                    " needs"));
  }
  if (e.grant.rate > 0) {
    std::lock_guard<std::mutex> lock(e.mu);
    const auto now = std::chrono::steady_clock::now();
    const double burst = std::max(1.0, e.grant.rate);
    e.left = std::min(
        burst, e.left + std::chrono::duration<double>(now - e.filled).count() * e.grant.rate);
    e.filled = now;
    if (e.left < 1) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "token '", e.grant.name, "' is over its rate of ", e.grant.rate, " requests per second"));
    }
    e.left -= 1;
  }
  return &e.grant;
}

}  // namespace mltune::daemon
