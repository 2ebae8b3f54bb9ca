// Target specs: every shipped spec loads and says what the issue asks of it; bad files are clear
// errors naming the file, the line and column of a JSON syntax error, or the field.
#include "backends/spec/target_spec.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace mltune::backends {
namespace {

const std::string kSpecs = std::string(MLTUNE_SOURCE_DIR) + "/backends/specs";

TEST(TargetSpecTest, EveryShippedSpecLoads) {
  absl::StatusOr<std::map<std::string, TargetSpec>> specs = LoadTargetSpecs(kSpecs);
  ASSERT_TRUE(specs.ok()) << specs.status();
  for (const char* name : {"tpu-v3-core", "tpu-v4-core", "mcm-36", "gpu-2x-nvlink", "gpu-2x-pcie",
                           "gpu-4x-nvlink", "gpu-4x-pcie", "gpu-8x-nvlink", "gpu-8x-pcie"}) {
    ASSERT_TRUE(specs->contains(name)) << name;
  }
  const TargetSpec& v3 = specs->at("tpu-v3-core");
  EXPECT_EQ(v3.kind, "tpu");
  EXPECT_EQ(v3.matrix_unit_rows, 128);
  EXPECT_EQ(v3.matrix_units, 2);
  EXPECT_DOUBLE_EQ(v3.PeakOps("bf16"), 61.5e12);
  EXPECT_DOUBLE_EQ(v3.PeakOps("f64"), v3.PeakOps("f32"));  // unlisted types fall back to f32
  ASSERT_NE(v3.Memory("vmem"), nullptr);
  EXPECT_EQ(v3.Memory("vmem")->bytes, 16 << 20);
  EXPECT_EQ(v3.Memory("l9"), nullptr);
  // More than a v3 in every respect a simulator uses.
  const TargetSpec& v4 = specs->at("tpu-v4-core");
  EXPECT_GT(v4.PeakOps("bf16"), v3.PeakOps("bf16"));
  EXPECT_GT(v4.memory.front().bandwidth, v3.memory.front().bandwidth);

  const TargetSpec& mcm = specs->at("mcm-36");
  EXPECT_EQ(mcm.devices, 36);
  EXPECT_EQ(mcm.topology, "ring");
  EXPECT_DOUBLE_EQ(mcm.PeakOps("s8"), 24e12);
  EXPECT_EQ(mcm.Memory("sram")->bytes, 32 << 20);
  EXPECT_DOUBLE_EQ(mcm.links.at(0).bandwidth, 16e9);

  EXPECT_EQ(specs->at("gpu-8x-pcie").devices, 8);
  EXPECT_GT(specs->at("gpu-4x-nvlink").links.at(0).bandwidth,
            specs->at("gpu-4x-pcie").links.at(0).bandwidth);
}

TEST(TargetSpecTest, SyntaxErrorsNameTheLineAndColumn) {
  absl::StatusOr<TargetSpec> spec =
      ParseTargetSpec("{\n  \"name\": \"x\",\n  \"kind\": tpu\n}", "bad.json");
  ASSERT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find("bad.json:3:"), std::string::npos) << spec.status();
}

TEST(TargetSpecTest, MissingAndBadFieldsAreNamed) {
  const std::string base =
      R"({"name": "t", "kind": "tpu", "clock_ghz": 1, "peak_ops": {"f32": 1e12},
          "memory": [{"name": "hbm", "bytes": 1024, "bandwidth": 1e9}])";
  ASSERT_TRUE(ParseTargetSpec(base + "}", "ok.json").ok());
  struct Case {
    std::string json, needle;
  };
  for (const Case& c : {
           Case{R"({"kind": "tpu"})", "'name': missing"},
           Case{base + R"(, "clock_ghz": -1})", "'clock_ghz'"},
           Case{R"({"name": "t", "kind": "tpu", "clock_ghz": 1, "peak_ops": {},
                   "memory": [{"name": "hbm", "bytes": 1, "bandwidth": 1}]})",
                "'peak_ops'"},
           Case{R"({"name": "t", "kind": "tpu", "clock_ghz": 1, "peak_ops": {"f32": 1},
                   "memory": [{"name": "hbm", "bytes": 1.5, "bandwidth": 1}]})",
                "memory[0]: field 'bytes'"},
           Case{base + R"(, "devices": 4, "topology": "ring"})", "'links'"},
           Case{base + R"(, "devices": 2, "topology": "torus", "links": []})", "'topology'"},
           Case{base + R"(, "matrix_unit": {"rows": 128}})", "matrix_unit: field 'cols'"},
       }) {
    absl::StatusOr<TargetSpec> spec = ParseTargetSpec(c.json, "t.json");
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_NE(spec.status().message().find(c.needle), std::string::npos) << spec.status();
  }
  EXPECT_EQ(LoadTargetSpec("/no/such.json").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace mltune::backends

namespace mltune::backends {
namespace {

TEST(TargetRegistryTest, BuiltinSpecsAreCompiledInAndParse) {
  const TargetRegistry& registry = TargetRegistry::Global();
  EXPECT_EQ(registry.Names().size(), BuiltinTargetSpecTexts().size());
  EXPECT_GE(registry.Names().size(), 9u);
  ASSERT_NE(registry.Find("tpu-v4-core"), nullptr);
  EXPECT_EQ(registry.Find("tpu-v4-core")->kind, "tpu");
  EXPECT_EQ(registry.Find("mcm-36")->devices, 36);
  EXPECT_EQ(registry.OfKind("gpu-cluster").size(), 6u);
  EXPECT_EQ(registry.Find("no-such-target"), nullptr);
}

TEST(TargetRegistryTest, DirectoryReplacesABuiltinOfTheSameName) {
  TargetRegistry registry;
  const std::string dir = ::testing::TempDir() + "/mltune_specs_override";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/tpu-v4-core.json") << BuiltinTargetSpecTexts().at("tpu-v4-core");
  std::ofstream(dir + "/tiny.json")
      << R"({"name": "tiny", "kind": "tpu", "clock_ghz": 1, "peak_ops": {"f32": 1e12}, "devices": 1,
             "memory": [{"name": "hbm", "bytes": 1000, "bandwidth": 1e9}]})";
  ASSERT_TRUE(registry.AddDirectory(dir).ok()) << registry.AddDirectory(dir);
  EXPECT_NE(registry.Find("tiny"), nullptr);
  std::ofstream(dir + "/broken.json") << "{";
  const absl::Status bad = registry.AddDirectory(dir);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.message()).find("broken.json"), std::string::npos) << bad;
}

}  // namespace
}  // namespace mltune::backends
