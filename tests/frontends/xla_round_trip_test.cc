// Every module mltune writes must be one XLA takes: each zoo module as XLA received it
// (models/hlo/*.before.hlo), printed by mltune, after every registered pass, after each default
// pipeline and after every pass following the CPU pipeline (where more passes find work), goes
// through jaxlib's HLO parser and its conversion to StableHLO; XLA's CPU compiler then takes one
// output of each kind (the smallest module it differs on) and each model's inference module.
// Skips where build/xla-venv is absent.
#include "frontends/xla/xla_round_trip.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/module.h"
#include "passes/default_pipelines.h"
#include "passes/registry.h"
#include "tests/support/corpus.h"

namespace mltune::frontends::xla {
namespace {

namespace fs = std::filesystem;

// models/hlo/*.before.hlo[.gz], smallest file first; empty when the zoo is absent.
std::vector<std::string> ZooModules() {
  std::vector<std::string> files;
  const fs::path dir = testing::SourcePath("models/hlo");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".before.hlo") || name.ends_with(".before.hlo.gz")) {
      files.push_back(e.path().string());
    }
  }
  // Compressed files are counted at about their text size, so "smallest" means cheapest.
  auto cost = [](const std::string& p) { return fs::file_size(p) * (p.ends_with(".gz") ? 6 : 1); };
  std::sort(files.begin(), files.end(), [&](const std::string& a, const std::string& b) {
    return std::make_pair(cost(a), a) < std::make_pair(cost(b), b);
  });
  return files;
}

// "bert.infer.b1" for models/hlo/bert.infer.b1.before.hlo.
std::string Stem(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  return name.substr(0, name.find(".before."));
}

// One text mltune can write for a module, and what made it: "print" (the module unmodified), a
// pass name, "pipeline-cpu" or "pipeline-gpu", or "pipeline-cpu+<pass>".
struct Variant {
  std::string what;
  std::string text;
};

// The distinct texts of `module` (the first maker of each kept), limited to the makers `wanted`
// accepts (all when it is empty). Passes that fail are listed in `failures`: they wrote nothing.
std::vector<Variant> Variants(const ir::Module& module,
                              const std::function<bool(const std::string&)>& wanted,
                              std::vector<std::string>* failures) {
  std::vector<Variant> variants;
  std::set<std::string> seen;
  auto add = [&](const std::string& what, const ir::Module& m) {
    std::string text = ir::PrintModule(m);
    if (seen.insert(text).second) variants.push_back({what, std::move(text)});
  };
  auto want = [&](const std::string& what) { return !wanted || wanted(what); };
  auto run_passes = [&](const ir::Module& start, const std::string& prefix) {
    for (const std::string& name : passes::Registry::Global().Names()) {
      if (!want(prefix + name)) continue;
      std::unique_ptr<ir::Module> copy = start.Clone();
      absl::StatusOr<std::unique_ptr<passes::Pass>> pass = passes::Registry::Global().Create(name);
      absl::StatusOr<bool> changed = (*pass)->Run(*copy);
      if (!changed.ok()) {
        failures->push_back(prefix + name + ": " + std::string(changed.status().message()));
      } else if (*changed) {
        add(prefix + name, *copy);
      }
    }
  };
  add("print", module);
  run_passes(module, "");
  for (const std::string& target : passes::DefaultPipelineTargets()) {
    const std::string what = "pipeline-" + target;
    const bool after = target == "cpu" && want("pipeline-cpu+");
    if (!want(what) && !after) continue;
    absl::StatusOr<std::unique_ptr<ir::Module>> out = passes::RunDefaultPipeline(module, target);
    if (!out.ok()) {
      failures->push_back(what + ": " + std::string(out.status().message()));
      continue;
    }
    if (want(what)) add(what, **out);
    if (after) run_passes(**out, what + "+");
  }
  // Wanted makers whose text equals an earlier one were not kept: they are already covered.
  if (wanted) {
    std::erase_if(variants, [&](const Variant& v) { return !wanted(v.what); });
  }
  return variants;
}

// A scratch folder for the texts handed to XLA, removed afterwards.
class Scratch {
 public:
  Scratch() {
    std::string tmpl = (fs::temp_directory_path() / "xla-round-trip-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string path = (path_ / (name + ".hlo")).string();
    std::ofstream(path) << text;
    return path;
  }

 private:
  fs::path path_;
};

// Asks XLA about each text, compiling where `compile` says, and fails the test for each one
// it refuses, naming the module, the maker, the stage and XLA's message.
void ExpectXlaAccepts(const std::string& module, const std::vector<Variant>& variants,
                      const std::function<bool(const Variant&)>& compile) {
  Scratch scratch;
  std::vector<XlaCheckRequest> requests;
  for (const Variant& v : variants) {
    requests.push_back({scratch.Write(module + "." + v.what, v.text), compile(v)});
  }
  absl::StatusOr<std::vector<XlaVerdict>> verdicts = CheckWithXla(requests);
  ASSERT_TRUE(verdicts.ok()) << verdicts.status();
  for (size_t i = 0; i < variants.size(); ++i) {
    const XlaVerdict& v = (*verdicts)[i];
    EXPECT_TRUE(v.ok) << module << " after " << variants[i].what << ": XLA refuses it at "
                      << v.stage << ": " << v.error;
    EXPECT_EQ(v.stage, requests[i].compile ? "compile" : "convert") << v.path;
  }
}

class XlaRoundTripTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::Status s = XlaAvailable(); !s.ok()) GTEST_SKIP() << s.message();
  }
};

// The checker itself: XLA's verdicts in order, its parser's refusal of a name used before its
// definition (what mltune's printer wrote before it ordered instructions), and a CHECK failure
// inside XLA's CPU compiler (a fusion whose bitcast XLA cannot analyse) costing only that
// module's verdict.
TEST_F(XlaRoundTripTest, NamesWhereXlaRefusesAndOutlivesItsAborts) {
  Scratch scratch;
  const std::string good = scratch.Write("good", R"(HloModule good

ENTRY e {
  p = f32[8] parameter(0)
  m = f32[8] multiply(p, p)
  ROOT t = f32[8] tanh(m)
}
)");
  const std::string use_before_definition = scratch.Write("use_before_definition",
                                                          R"(HloModule use_before_definition

ENTRY e {
  p = f32[8] parameter(0)
  a = f32[8] add(multiply.2, p)
  multiply.2 = f32[8] multiply(p, p)
  ROOT t = f32[8] tanh(a)
}
)");
  const std::string aborts = scratch.Write("aborts", R"(HloModule aborts

fused {
  p = f32[351,8,1,1]{3,2,1,0} parameter(0)
  b = f32[351,8]{1,0} bitcast(p)
  ROOT t = f32[8,351]{0,1} transpose(b), dimensions={1,0}
}

ENTRY e {
  a = f32[351,8,1,1]{3,2,1,0} parameter(0)
  ROOT f = f32[8,351]{0,1} fusion(a), kind=kLoop, calls=fused
}
)");
  absl::StatusOr<std::vector<XlaVerdict>> v =
      CheckWithXla({{good, true}, {use_before_definition, false}, {aborts, true}, {good, false}});
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->size(), 4u);
  EXPECT_TRUE((*v)[0].ok) << (*v)[0].error;
  EXPECT_EQ((*v)[0].stage, "compile");
  EXPECT_EQ((*v)[0].path, good);
  EXPECT_FALSE((*v)[1].ok);
  EXPECT_EQ((*v)[1].stage, "parse");
  EXPECT_NE((*v)[1].error.find("add(multiply.2, p)"), std::string::npos) << (*v)[1].error;
  EXPECT_FALSE((*v)[2].ok);
  EXPECT_EQ((*v)[2].stage, "abort");
  EXPECT_NE((*v)[2].error.find("Check failed"), std::string::npos) << (*v)[2].error;
  EXPECT_TRUE((*v)[3].ok) << (*v)[3].error;  // a fresh child after the abort
  EXPECT_EQ((*v)[3].stage, "convert");
}

class ZooModuleTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (absl::Status s = XlaAvailable(); !s.ok()) GTEST_SKIP() << s.message();
  }
};

TEST_P(ZooModuleTest, XlaParsesEveryOutput) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloFile(GetParam());
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<std::string> failures;
  const std::vector<Variant> variants = Variants(**module, {}, &failures);
  for (const std::string& f : failures) std::cout << "pass failed, nothing to check: " << f << "\n";
  ExpectXlaAccepts(Stem(GetParam()), variants, [](const Variant&) { return false; });
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = Stem(info.param);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooModuleTest, ::testing::ValuesIn(ZooModules()), TestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZooModuleTest);

// Compiling costs up to tens of seconds a module, so XLA's compiler takes each maker's output
// once, on the smallest zoo module where it differs from every other text, plus every model's
// inference module as mltune prints it (its graph as the user gave it).
TEST_F(XlaRoundTripTest, XlaCompilesEachKindOfOutput) {
  const std::vector<std::string> modules = ZooModules();
  if (modules.empty()) GTEST_SKIP() << "no zoo modules under models/hlo";
  std::set<std::string> compiled;  // makers already compiled once
  std::set<std::string> families;  // models whose inference module was compiled
  std::map<std::string, std::string> where;
  for (const std::string& path : modules) {
    const std::string stem = Stem(path);
    const std::string family = stem.substr(0, stem.find('.'));
    const bool inference = stem.find(".infer.") != std::string::npos && !families.contains(family);
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloFile(path);
    ASSERT_TRUE(module.ok()) << module.status();
    auto wanted = [&](const std::string& what) {
      if (what == "pipeline-cpu+") return true;  // a prefix: the CPU pipeline is needed
      return what == "print" ? inference : !compiled.contains(what);
    };
    std::vector<std::string> failures;
    const std::vector<Variant> variants = Variants(**module, wanted, &failures);
    for (const Variant& v : variants) {
      if (v.what != "print") {
        compiled.insert(v.what);
        where[v.what] = stem;
      }
    }
    if (inference) families.insert(family);
    ExpectXlaAccepts(stem, variants, [](const Variant&) { return true; });
  }
  // Makers that changed no zoo module are covered by the unmodified modules' checks alone.
  std::vector<std::string> idle;
  for (const std::string& name : passes::Registry::Global().Names()) {
    if (!compiled.contains(name) && !compiled.contains("pipeline-cpu+" + name)) {
      idle.push_back(name);
    }
  }
  std::cout << "compiled: " << families.size() << " inference modules as printed";
  for (const auto& [what, stem] : where) std::cout << "; " << what << " on " << stem;
  std::cout << "\npasses that changed no zoo module, alone or after the CPU pipeline:";
  for (const std::string& name : idle) std::cout << " " << name;
  std::cout << "\n";
  EXPECT_TRUE(compiled.contains("pipeline-cpu"));
  EXPECT_TRUE(compiled.contains("algsimp"));
}

}  // namespace
}  // namespace mltune::frontends::xla
