// Who may call mltuned: bearer tokens read from a file, each with roles (submit, read, admin) and
// its own limits on jobs queued at once and on requests per second. The daemon asks the policy
// at the start of every CompileService call; a policy without tokens lets every call through
// (loopback use).
//
// The tokens file, one token per line ('#' starts a comment):
//   NAME  TOKEN  ROLE[,ROLE...]  [max_queued=N]  [rate=R]
//   ci    3f9c...e1  submit,read    max_queued=8 rate=20
// NAME names the token in errors, logs and metrics; TOKEN is at least 16 characters of
// [A-Za-z0-9._~+/=-]; admin also grants submit and read; rate is in requests per second.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mltune::daemon {

// kWorker: a remote measurement worker (mltune-worker); no other role includes it.
enum class Role : uint8_t { kSubmit = 1, kRead = 2, kAdmin = 4, kWorker = 8 };
std::string_view RoleName(Role role);

struct TokenGrant {
  std::string name;
  uint8_t roles = 0;       // Role bits
  int64_t max_queued = 0;  // jobs queued or running at once that it submitted; 0: no own limit
  double rate = 0;         // requests per second (a second's worth may burst); 0: no limit
  bool Has(Role role) const { return (roles & static_cast<uint8_t>(role)) != 0; }
};

class AccessPolicy {
 public:
  // No tokens: Authorize lets every call through.
  AccessPolicy();
  ~AccessPolicy();
  AccessPolicy(const AccessPolicy&) = delete;
  AccessPolicy& operator=(const AccessPolicy&) = delete;

  // A tokens file's text; errors name `file`, the line and the column.
  static absl::StatusOr<std::unique_ptr<AccessPolicy>> Parse(std::string_view text,
                                                             std::string_view file);
  static absl::StatusOr<std::unique_ptr<AccessPolicy>> Load(const std::string& path);

  bool enabled() const;
  size_t size() const;  // tokens

  // The grant of the bearer token in `authorization` (the request's "authorization" metadata,
  // "Bearer TOKEN") for `method`, which needs `role`: nullptr where the policy has no tokens;
  // UNAUTHENTICATED without a token or with an unknown one, PERMISSION_DENIED without the role,
  // RESOURCE_EXHAUSTED over the token's rate. Thread-safe.
  absl::StatusOr<const TokenGrant*> Authorize(std::string_view authorization, Role role,
                                              std::string_view method) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mltune::daemon
