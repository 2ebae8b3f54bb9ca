// The model zoo (models/, written by scripts/zoo): every module XLA received and every module XLA's
// CPU pipeline produced must parse, verify (the optimized ones with layouts), round-trip through
// the printer and go through mltune's XLA-order default pipeline; XLA's per-pass dumps must parse
// and verify. The held-out models (role "report" in models/manifest.json) are checked at
// inference batch 1 only, so that adding them leaves the suite's time nearly flat (their
// training steps alone would add as much again as the twelve "fit" models' files take).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/fingerprint.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/module.h"
#include "ir/verifier.h"
#include "passes/default_pipelines.h"
#include "tests/support/corpus.h"

namespace mltune {
namespace {

namespace fs = std::filesystem;

// Files under models/<folder> with an HLO suffix, sorted; empty when the zoo is absent.
std::vector<std::string> ZooFiles(const std::string& folder) {
  std::vector<std::string> files;
  const fs::path dir = testing::SourcePath("models/" + folder);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string p = e.path().string();
    if (e.is_regular_file() && (p.ends_with(".hlo") || p.ends_with(".hlo.gz"))) {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Model name -> role ("fit" or "report") from models/manifest.json; empty when it is absent.
std::map<std::string, std::string> ZooRoles() {
  std::map<std::string, std::string> roles;
  std::ifstream in(testing::SourcePath("models/manifest.json"));
  if (!in) return roles;
  const nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.contains("models")) return roles;
  for (const auto& [name, entry] : manifest["models"].items()) {
    roles[name] = entry.value("role", std::string());
  }
  return roles;
}

// The hlo/ files the full check runs on: every file of a "fit" model (or of one the manifest does
// not name), the infer.b1 files of a "report" model.
std::vector<std::string> CheckedZooFiles() {
  const std::map<std::string, std::string> roles = ZooRoles();
  std::vector<std::string> files;
  for (const std::string& path : ZooFiles("hlo")) {
    const std::string file = fs::path(path).filename().string();
    const auto role = roles.find(file.substr(0, file.find('.')));
    if (role != roles.end() && role->second == "report" &&
        file.find(".infer.b1.") == std::string::npos) {
      continue;
    }
    files.push_back(path);
  }
  return files;
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).filename().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class ZooModuleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooModuleTest, ParsesVerifiesRoundTripsAndRunsTheDefaultPipeline) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloFile(GetParam());
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(ir::VerifyModule(**m).ok()) << ir::VerifyModule(**m);
  // Layouts bind only after XLA's layout assignment: XLA's input may disagree with itself (a while
  // loop's state and its body's result), its optimized output may not.
  if (GetParam().find(".after.hlo") != std::string::npos) {
    ir::VerifyOptions layouts;
    layouts.check_layouts = true;
    EXPECT_TRUE(ir::VerifyModule(**m, layouts).ok()) << ir::VerifyModule(**m, layouts);
  }

  const std::string printed = ir::PrintModule(**m);
  absl::StatusOr<std::unique_ptr<ir::Module>> again = ir::ParseHloText(printed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(ir::PrintModule(**again), printed);
  std::string why;
  EXPECT_TRUE(ir::StructurallyEqual(**m, **again, &why)) << why;
  EXPECT_EQ(ir::Fingerprint(**m), ir::Fingerprint(**again));

  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = passes::RunDefaultPipeline(**m, "cpu");
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_TRUE(ir::VerifyModule(**optimized).ok()) << ir::VerifyModule(**optimized);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooModuleTest, ::testing::ValuesIn(CheckedZooFiles()), TestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZooModuleTest);

TEST(ZooTest, EveryModelHasItsModules) {
  const std::vector<std::string> files = ZooFiles("hlo");
  ASSERT_FALSE(files.empty()) << "no zoo under " << testing::SourcePath("models/hlo")
                              << " (scripts/zoo writes it; it is committed)";
  for (const char* model :
       {"gpt2", "bert", "llama", "t5", "vit", "resnet50", "inception_v3", "mobilenet_v2", "gnmt",
        "wavenet", "dlrm", "graphsage", "convnext", "efficientnet", "regnet", "swin", "whisper",
        "unet", "moe", "mamba", "lstm_lm"}) {
    for (const char* kind :
         {".infer.b1.before", ".infer.b1.after", ".infer.b8.before", ".train.b"}) {
      const std::string prefix = std::string(model) + kind;
      EXPECT_TRUE(std::any_of(files.begin(), files.end(),
                              [&](const std::string& f) {
                                return fs::path(f).filename().string().starts_with(prefix);
                              }))
          << "missing " << prefix;
    }
  }
}

// The manifest gives every model a role: the twelve the CPU backend's defaults were fitted on are
// "fit", the rest "report" (docs/zoo.md).
TEST(ZooTest, EveryModelHasARole) {
  const std::map<std::string, std::string> roles = ZooRoles();
  ASSERT_FALSE(roles.empty()) << "no models in " << testing::SourcePath("models/manifest.json");
  int fit = 0;
  for (const auto& [model, role] : roles) {
    EXPECT_TRUE(role == "fit" || role == "report") << model << ": role " << role;
    fit += role == "fit";
  }
  EXPECT_EQ(fit, 12);
}

// XLA's module after each of its passes parses and verifies, for the models the zoo dumps them.
TEST(ZooTest, XlaPerPassModulesParseAndVerify) {
  const std::vector<std::string> files = ZooFiles("passes");
  ASSERT_FALSE(files.empty()) << "no per-pass dumps under models/passes";
  for (const std::string& path : files) {
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloFile(path);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_TRUE(ir::VerifyModule(**m).ok()) << path << ": " << ir::VerifyModule(**m);
  }
}

}  // namespace
}  // namespace mltune
