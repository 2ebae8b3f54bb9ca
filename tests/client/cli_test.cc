// The `mltune` binary end to end: outputs, JSON, exit codes and error messages.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "nlohmann/json.hpp"
#include "tests/support/corpus.h"
#include "tests/support/run_command.h"

namespace mltune {
namespace {

using Result = testing::CommandResult;

// Runs the CLI with stdout and stderr captured separately.
Result RunCli(const std::string& args) {
  return testing::RunCommand(std::string(MLTUNE_CLI_PATH) + " " + args);
}

std::string Example() { return testing::SourcePath("examples/mlp_train_step.hlo"); }

std::string WriteTemp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(CliTest, ParsePrintsHistogram) {
  Result r = RunCli("parse " + Example());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("module jit_mlp_train_step: verified, 3 computations"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("dot"), std::string::npos);
  EXPECT_NE(r.out.find("(ENTRY)"), std::string::npos);
}

TEST(CliTest, ParseJson) {
  Result r = RunCli("parse --json " + Example());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["module"], "jit_mlp_train_step");
  EXPECT_EQ(j["computations"].size(), 3u);
  EXPECT_EQ(j["opcodes"]["dot"], 5);
  EXPECT_EQ(j["opcodes"]["parameter"], 10);
  EXPECT_EQ(j["fingerprint"].get<std::string>().size(), 64u);
}

TEST(CliTest, EvalIsDeterministicPerSeed) {
  Result a = RunCli("eval --seed 7 " + Example());
  Result b = RunCli("eval --seed 7 " + Example());
  Result c = RunCli("eval --seed 8 " + Example());
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto digest = [](const std::string& out) { return out.substr(out.rfind("digest ")); };
  EXPECT_EQ(digest(a.out), digest(b.out));
  EXPECT_NE(digest(a.out), digest(c.out));
  EXPECT_NE(a.out.find("f32[16,32]"), std::string::npos) << a.out;
}

TEST(CliTest, EvalJsonReportsFiniteLoss) {
  Result r = RunCli("eval --json --seed 1 " + Example());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["outputs"].size(), 5u);
  EXPECT_EQ(j["outputs"][0]["shape"], "f32[]");
  // Cross-entropy of 4 classes with random weights: positive and finite.
  const double loss = j["outputs"][0]["mean"];
  EXPECT_GT(loss, 0.0);
  EXPECT_EQ(j["outputs"][0]["non_finite"], 0);
}

TEST(CliTest, FingerprintIgnoresRenaming) {
  std::string text = testing::ReadFile(Example());
  std::string renamed = text;
  for (size_t pos = 0; (pos = renamed.find("relu.15", pos)) != std::string::npos;) {
    renamed.replace(pos, 7, "hidden_activation");
  }
  const std::string path = WriteTemp("mltune_cli_renamed.hlo", renamed);
  Result a = RunCli("fingerprint " + Example());
  Result b = RunCli("fingerprint " + path);
  ASSERT_EQ(a.exit_code, 0);
  ASSERT_EQ(b.exit_code, 0);
  EXPECT_EQ(a.out.substr(0, 64), b.out.substr(0, 64));
}

TEST(CliTest, PrintRoundTrips) {
  Result r = RunCli("print " + Example());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string path = WriteTemp("mltune_cli_printed.hlo", r.out);
  Result again = RunCli("print " + path);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(r.out, again.out);
  Result no_meta = RunCli("print --no-metadata " + Example());
  EXPECT_EQ(no_meta.out.find("metadata="), std::string::npos);
  EXPECT_NE(r.out.find("metadata="), std::string::npos);
}

TEST(CliTest, ErrorsGoToStderrWithExitCode1) {
  const std::string bad = WriteTemp("mltune_cli_bad.hlo",
                                    "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                                    "  ROOT r = f32[2] frobnicate(p)\n}\n");
  Result r = RunCli("parse " + bad);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("mltune_cli_bad.hlo:4:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;

  Result missing = RunCli("parse /nonexistent/model.hlo");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/model.hlo"), std::string::npos) << missing.err;

  Result usage = RunCli("frobnicate");
  EXPECT_EQ(usage.exit_code, 1);
}

TEST(CliTest, VerifierErrorNamesInstruction) {
  const std::string bad = WriteTemp("mltune_cli_badshape.hlo",
                                    "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                                    "  q = f32[3] parameter(1)\n  ROOT r = f32[2] add(p, q)\n}\n");
  Result r = RunCli("eval " + bad);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("r"), std::string::npos);
  EXPECT_NE(r.err.find("verification failed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("instruction r (line 5)"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mltune

namespace mltune {
namespace {

const char kFoldable[] = R"(HloModule foldable
ENTRY e {
  p = f32[4] parameter(0)
  one = f32[] constant(1)
  b1 = f32[4] broadcast(one), dimensions={}
  m = f32[4] multiply(p, b1)
  n1 = f32[4] negate(m)
  ROOT n2 = f32[4] negate(n1)
}
)";

TEST(CliPassesTest, ListsEveryPassOnOneLine) {
  Result r = RunCli("passes");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"algsimp", "cse", "dce", "constant_folding", "simplify-while-loops"}) {
    EXPECT_NE(r.out.find(std::string("\n  ") + name + " "), std::string::npos) << name;
  }
  EXPECT_NE(r.out.find("default pipeline 'cpu'"), std::string::npos);
}

TEST(CliOptTest, PipelineReducesOpsAndVerifies) {
  const std::string in = WriteTemp("mltune_cli_foldable.hlo", kFoldable);
  const std::string out_path =
      (std::filesystem::temp_directory_path() / "mltune_cli_folded.hlo").string();
  Result r = RunCli("opt " + in + " --pipeline cpu --verify -o " + out_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // multiply by one and the double negation fold away: 5 ops (parameters do not count) -> 0: the
  // parameter is the root.
  EXPECT_NE(r.out.find("op count 5 -> 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0 elements outside tolerance"), std::string::npos) << r.out;
  Result printed = RunCli("parse " + out_path);
  EXPECT_EQ(printed.exit_code, 0) << printed.err;
}

TEST(CliOptTest, ExplicitPassListAndUnknownPass) {
  const std::string in = WriteTemp("mltune_cli_foldable2.hlo", kFoldable);
  Result r = RunCli("opt " + in + " --passes algsimp,dce");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("op count 5 -> 0"), std::string::npos) << r.out;
  Result bad = RunCli("opt " + in + " --passes algsimp,no-such-pass");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown pass 'no-such-pass'"), std::string::npos) << bad.err;
  Result both = RunCli("opt " + in + " --passes dce --pipeline cpu");
  EXPECT_EQ(both.exit_code, 1);
}

TEST(CliSearchTest, FindsAnOrderAtLeastAsGoodAsNothing) {
  const std::string in = WriteTemp("mltune_cli_search.hlo", kFoldable);
  const std::string out_path =
      (std::filesystem::temp_directory_path() / "mltune_cli_searched.hlo").string();
  Result r =
      RunCli("search pass-order " + in + " --strategy greedy --budget 200 --seed 3 -o " + out_path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("original op count                5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best order found                 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best sequence"), std::string::npos);
  EXPECT_EQ(RunCli("parse " + out_path).exit_code, 0);
  Result bad = RunCli("search pass-order " + in + " --strategy telepathy");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("greedy"), std::string::npos) << bad.err;  // lists the real ones
}

}  // namespace
}  // namespace mltune
