// `mltune print model.onnx` writes the importer's module as HLO text: XLA must take it too. Every
// ONNX backend node test the importer accepts (Debian's libonnx-testdata: small graphs covering
// the importer's op vocabulary) goes through jaxlib's parser and CPU compiler, and every zoo
// export (models/onnx) through its parser and StableHLO conversion (compiling those is the HLO
// zoo's test's job, and costs up to half a minute a model). Skips where build/xla-venv, the node
// tests or the zoo are absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "frontends/onnx/conformance/conformance.h"
#include "frontends/onnx/onnx_import.h"
#include "frontends/xla/xla_round_trip.h"
#include "ir/hlo_printer.h"
#include "tests/support/corpus.h"

namespace mltune::frontends::xla {
namespace {

namespace fs = std::filesystem;

class XlaOnnxImportsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::Status s = XlaAvailable(); !s.ok()) GTEST_SKIP() << s.message();
    std::string tmpl = (fs::temp_directory_path() / "xla-onnx-imports-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    scratch_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    if (!scratch_.empty()) fs::remove_all(scratch_, ec);
  }

  // Imports each model, writes its printed module and asks XLA about all of them; fails the
  // test for each one XLA refuses. Returns how many were imported (the others the importer
  // refuses, which its own tests account for).
  size_t ExpectXlaAcceptsImports(const std::vector<std::pair<std::string, std::string>>& models,
                                 bool compile) {
    std::vector<XlaCheckRequest> requests;
    std::vector<std::string> names;
    for (const auto& [name, path] : models) {
      absl::StatusOr<ir::onnx::OnnxImport> imported = ir::onnx::ImportOnnxFile(path);
      if (!imported.ok()) continue;
      const std::string out = (scratch_ / (name + ".hlo")).string();
      std::ofstream(out) << ir::PrintModule(*imported->module);
      requests.push_back({out, compile});
      names.push_back(name);
    }
    absl::StatusOr<std::vector<XlaVerdict>> verdicts = CheckWithXla(requests);
    EXPECT_TRUE(verdicts.ok()) << verdicts.status();
    if (!verdicts.ok()) return names.size();
    for (size_t i = 0; i < names.size(); ++i) {
      const XlaVerdict& v = (*verdicts)[i];
      EXPECT_TRUE(v.ok) << names[i] << ": XLA refuses the import at " << v.stage << ": " << v.error;
    }
    return names.size();
  }

  fs::path scratch_;
};

TEST_F(XlaOnnxImportsTest, XlaCompilesEveryImportedNodeTest) {
  absl::StatusOr<std::vector<std::string>> dirs =
      ir::onnx::ListNodeTests(ir::onnx::kDefaultNodeTestDir);
  if (!dirs.ok() || dirs->empty()) {
    GTEST_SKIP() << "no ONNX node tests under " << ir::onnx::kDefaultNodeTestDir
                 << " (scripts/setup installs libonnx-testdata)";
  }
  std::vector<std::pair<std::string, std::string>> models;
  for (const std::string& dir : *dirs) {
    models.push_back({fs::path(dir).filename().string(), (fs::path(dir) / "model.onnx").string()});
  }
  const size_t imported = ExpectXlaAcceptsImports(models, /*compile=*/true);
  // The importer takes about 90% of the node tests (docs/onnx.md): most of them must be here.
  EXPECT_GT(imported, models.size() / 2) << imported << " of " << models.size();
}

TEST_F(XlaOnnxImportsTest, XlaParsesEveryZooExport) {
  std::vector<std::pair<std::string, std::string>> models;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(testing::SourcePath("models/onnx"), ec)) {
    if (e.path().extension() == ".onnx") {
      models.push_back({e.path().stem().string(), e.path().string()});
    }
  }
  if (models.empty()) GTEST_SKIP() << "no zoo exports under models/onnx";
  std::sort(models.begin(), models.end());
  EXPECT_EQ(ExpectXlaAcceptsImports(models, /*compile=*/false), models.size());
}

}  // namespace
}  // namespace mltune::frontends::xla
