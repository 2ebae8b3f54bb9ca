#include "daemon/access/access_policy.h"

#include <chrono>
#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace mltune::daemon {
namespace {

constexpr char kTokens[] = R"(# name  token                  roles
ci      ci-token-0123456789abcdef   submit,read   max_queued=2 rate=3
dash    dash-token-0123456789abcd   read          # a dashboard
ops     ops-token-0123456789abcde   admin
gpubox  gpu-token-0123456789abcde   worker
)";

std::unique_ptr<AccessPolicy> Policy() {
  absl::StatusOr<std::unique_ptr<AccessPolicy>> p = AccessPolicy::Parse(kTokens, "tokens.txt");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : std::make_unique<AccessPolicy>();
}

TEST(AccessPolicyTest, ParsesNamesRolesAndLimits) {
  std::unique_ptr<AccessPolicy> p = Policy();
  ASSERT_TRUE(p->enabled());
  EXPECT_EQ(p->size(), 4u);
  absl::StatusOr<const TokenGrant*> ci =
      p->Authorize("Bearer ci-token-0123456789abcdef", Role::kSubmit, "SubmitCompile");
  ASSERT_TRUE(ci.ok()) << ci.status();
  EXPECT_EQ((*ci)->name, "ci");
  EXPECT_EQ((*ci)->max_queued, 2);
  EXPECT_DOUBLE_EQ((*ci)->rate, 3);
  // admin grants submit and read too.
  for (Role r : {Role::kSubmit, Role::kRead, Role::kAdmin}) {
    EXPECT_TRUE(p->Authorize("Bearer ops-token-0123456789abcde", r, "M").ok()) << RoleName(r);
  }
  // ... but not worker, which only a measurement worker's token has (and nothing else).
  EXPECT_TRUE(absl::IsPermissionDenied(
      p->Authorize("Bearer ops-token-0123456789abcde", Role::kWorker, "TakeBatch").status()));
  EXPECT_TRUE(p->Authorize("Bearer gpu-token-0123456789abcde", Role::kWorker, "TakeBatch").ok());
  EXPECT_TRUE(absl::IsPermissionDenied(
      p->Authorize("Bearer gpu-token-0123456789abcde", Role::kRead, "GetJob").status()));
}

TEST(AccessPolicyTest, RefusesMissingUnknownAndUnderprivilegedTokens) {
  std::unique_ptr<AccessPolicy> p = Policy();
  absl::StatusOr<const TokenGrant*> none = p->Authorize("", Role::kRead, "GetJob");
  EXPECT_TRUE(absl::IsUnauthenticated(none.status())) << none.status();
  EXPECT_NE(none.status().message().find("GetJob needs a bearer token"), std::string::npos);
  EXPECT_TRUE(absl::IsUnauthenticated(
      p->Authorize("Basic ci-token-0123456789abcdef", Role::kRead, "GetJob").status()));
  absl::StatusOr<const TokenGrant*> unknown =
      p->Authorize("Bearer ci-token-0123456789abcdeX", Role::kRead, "GetJob");
  EXPECT_TRUE(absl::IsUnauthenticated(unknown.status())) << unknown.status();
  absl::StatusOr<const TokenGrant*> denied =
      p->Authorize("Bearer dash-token-0123456789abcd", Role::kSubmit, "SubmitCompile");
  EXPECT_TRUE(absl::IsPermissionDenied(denied.status())) << denied.status();
  EXPECT_EQ(denied.status().message(),
            "token 'dash' lacks the role 'submit' that SubmitCompile needs");
  EXPECT_TRUE(absl::IsPermissionDenied(
      p->Authorize("Bearer ci-token-0123456789abcdef", Role::kAdmin, "CancelJob").status()));
}

TEST(AccessPolicyTest, RateLimitsEachTokenWithASecondsBurst) {
  std::unique_ptr<AccessPolicy> p = Policy();
  int allowed = 0;
  absl::Status last;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) {
    absl::StatusOr<const TokenGrant*> g =
        p->Authorize("Bearer ci-token-0123456789abcdef", Role::kRead, "GetJob");
    if (g.ok())
      ++allowed;
    else
      last = g.status();
  }
  // A burst of rate=3, plus what refilled while the loop ran (nothing, unless it was preempted).
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(allowed, 3);
  EXPECT_LE(allowed, 3 + static_cast<int>(std::ceil(elapsed * 3)));
  EXPECT_TRUE(absl::IsResourceExhausted(last)) << last;
  // Another token has its own bucket, and no limit here.
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(p->Authorize("Bearer dash-token-0123456789abcd", Role::kRead, "GetJob").ok());
  }
}

TEST(AccessPolicyTest, WithoutTokensEveryCallIsLetThrough) {
  AccessPolicy open;
  EXPECT_FALSE(open.enabled());
  absl::StatusOr<const TokenGrant*> g = open.Authorize("", Role::kAdmin, "CancelJob");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, nullptr);
}

TEST(AccessPolicyTest, BadFilesSayWhereAndWhat) {
  struct Bad {
    const char* text;
    const char* error;
  };
  for (const Bad& b : std::initializer_list<Bad>{
           {"ci short submit\n", "t:1:4: token of 'ci' has 5 characters; at least 16 are needed"},
           {"ci 0123456789abcdef\n", "t:1:20: expected NAME TOKEN"},
           {"ci 0123456789abcdef submit,write\n", "t:1:28: unknown role 'write'"},
           {"ci 0123456789abcdef read rate=0\n", "t:1:31: rate takes a positive number"},
           {"ci 0123456789abcdef read max_queued=x\n", "t:1:37: max_queued takes a positive"},
           {"ci 0123456789abcdef read burst=3\n", "t:1:26: unknown limit 'burst'"},
           {"ci 0123456789abcdef read\n\nci 0123456789abcdeg read\n",
            "t:3:1: token name 'ci' is already used on line 1"},
           {"a 0123456789abcdef read\nb 0123456789abcdef read\n",
            "t:2:3: the token of 'b' is also another name's"},
           {"ci 0123456789abc\"ef read\n", "t:1:17: a token is made of"},
       }) {
    absl::StatusOr<std::unique_ptr<AccessPolicy>> p = AccessPolicy::Parse(b.text, "t");
    ASSERT_FALSE(p.ok()) << b.text;
    EXPECT_TRUE(absl::IsInvalidArgument(p.status()));
    EXPECT_EQ(p.status().message().rfind(b.error, 0), 0u) << p.status().message();
  }
  EXPECT_TRUE(absl::IsNotFound(AccessPolicy::Load("/nonexistent/tokens").status()));
}

}  // namespace
}  // namespace mltune::daemon
