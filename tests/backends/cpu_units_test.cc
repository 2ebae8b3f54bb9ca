// A program split into translation units compiled in parallel (units.h): the split keeps every
// section once and the header in each unit; a module of many kernels compiled as several units
// runs and matches the evaluator, with its constants segment, literal tables, called programs
// and oneDNN convolutions spread over them; small programs stay one unit; the kernel cache
// answers a split program; a unit that fails to compile is named and kept.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/units.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace mltune::backends::cpu {
namespace {

namespace fs = std::filesystem;

// A kernel cache of this test's own, emptied first, so the first compile is a cold one.
std::string FreshCacheDir(const std::string& name) {
  const std::string dir = absl::StrCat(MLTUNE_TEST_KERNEL_CACHE, "-units-", name, "-", getpid());
  fs::remove_all(dir);
  return dir;
}

// An HLO constant's literal text of shape `dims`, nested a brace per dimension.
std::string Values(const std::vector<int>& dims, double scale, size_t d = 0, int* next = nullptr) {
  int counter = 0;
  if (next == nullptr) next = &counter;
  std::string out = "{";
  for (int i = 0; i < dims[d]; ++i) {
    if (i > 0) out += ", ";
    if (d + 1 < dims.size()) {
      out += Values(dims, scale, d + 1, next);
    } else {
      absl::StrAppend(&out, ((*next)++ % 7 - 3) * scale);
    }
  }
  return out + "}";
}

// Dots sharing a 16 KB weight (a view of the constants segment in every unit that reads it) and
// a 256-byte bias (a literal table each unit declares for itself), a while loop (a called
// program, local to its kernel's unit) and two convolutions (oneDNN's, given impl 2).
std::string ManyKernels() {
  return absl::StrCat(R"(
HloModule many_kernels
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  cp = (s32[], f32[8,64]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  cn = s32[] constant(3)
  ROOT lt = pred[] compare(ci, cn), direction=LT
}
body {
  bp = (s32[], f32[8,64]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  bv = f32[8,64] get-tuple-element(bp), index=1
  one = s32[] constant(1)
  bi2 = s32[] add(bi, one)
  bv2 = f32[8,64] tanh(bv)
  ROOT bt = (s32[], f32[8,64]) tuple(bi2, bv2)
}
ENTRY e {
  x = f32[8,64] parameter(0)
  img = f32[1,3,10,10] parameter(1)
  w = f32[64,64] constant()",
                      Values({64, 64}, 0.01), R"()
  bias = f32[64] constant()",
                      Values({64}, 0.1), R"()
  k1 = f32[4,3,3,3] constant()",
                      Values({4, 3, 3, 3}, 0.05), R"()
  k2 = f32[5,4,3,3] constant()",
                      Values({5, 4, 3, 3}, 0.05), R"()
  d1 = f32[8,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[8,64] broadcast(bias), dimensions={1}
  e1 = f32[8,64] add(d1, bb)
  t1 = f32[8,64] tanh(e1)
  d2 = f32[8,64] dot(t1, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  e2 = f32[8,64] multiply(d2, bb)
  zero = s32[] constant(0)
  init = (s32[], f32[8,64]) tuple(zero, e2)
  loop = (s32[], f32[8,64]) while(init), condition=cond, body=body
  lv = f32[8,64] get-tuple-element(loop), index=1
  d3 = f32[8,64] dot(lv, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  r = f32[8] reduce(d3, z), dimensions={1}, to_apply=add
  c1 = f32[1,4,8,8] convolution(img, k1), window={size=3x3}, dim_labels=bf01_oi01->bf01
  a1 = f32[1,4,8,8] tanh(c1)
  c2 = f32[1,5,6,6] convolution(a1, k2), window={size=3x3}, dim_labels=bf01_oi01->bf01
  ROOT out = (f32[8], f32[8,64], f32[1,5,6,6]) tuple(r, e2, c2)
})");
}

struct Split {
  std::unique_ptr<ir::Module> module;     // as parsed: what the evaluator runs
  std::unique_ptr<ir::Module> optimized;  // what `compiled.lowered` points into
  CompiledModule compiled;
};

// Parsed, through the pipeline, convolutions on oneDNN's primitive where it takes them, and
// compiled with `options`.
absl::StatusOr<Split> CompileSplit(const std::string& text, const CompilerOptions& options) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(text);
  if (!module.ok()) return module.status();
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = RunCpuPipeline(**module);
  if (!optimized.ok()) return optimized.status();
  absl::StatusOr<LoweredModule> lowered = Lower(**optimized);
  if (!lowered.ok()) return lowered.status();
  std::vector<KernelConfig> configs;
  for (const Kernel& k : lowered->kernels) {
    KernelConfig config = DefaultConfig(k);
    for (size_t p = 0; p < k.params.size(); ++p) {
      const std::vector<int64_t>& choices = k.params[p].choices;
      if (k.params[p].name == "impl" &&
          std::find(choices.begin(), choices.end(), 2) != choices.end()) {
        config[p] = 2;
      }
    }
    configs.push_back(config);
  }
  absl::StatusOr<CompiledModule> compiled = CompileModule(**optimized, configs, nullptr, options);
  if (!compiled.ok()) return compiled.status();
  return Split{*std::move(module), *std::move(optimized), *std::move(compiled)};
}

// A program laid out as units.h describes, of kernels k0, k1, ... with bodies `bodies`, whose
// entry calls `calls` (kernel numbers) in order, and a profiled entry doing the same.
std::string LaidOut(const std::vector<std::string>& bodies, const std::vector<int>& calls) {
  std::string out = "#include <cstdint>\n";
  for (size_t k = 0; k < bodies.size(); ++k) {
    absl::StrAppend(&out, kKernelSection, "k", k, "\nstatic void k", k,
                    "(char* const* b, char* ws) { ", bodies[k], " }\n");
  }
  absl::StrAppend(&out, kEntrySection,
                  "extern \"C\" int64_t mltune_scratch_bytes() { return 0; }\n"
                  "extern \"C\" void mltune_entry(void* const* args, void* const* results, "
                  "char* scratch) {\n  char* const ws = scratch;\n",
                  kCallsBegin);
  for (int k : calls) absl::StrAppend(&out, "  { char* b[] = {nullptr}; k", k, "(b, ws); }\n");
  absl::StrAppend(&out, kCallsEnd,
                  "}\nextern \"C\" void mltune_entry_profiled(void* const* args, void* const* "
                  "results, char* scratch, int64_t* kernel_ns) {\n  char* const ws = scratch;\n",
                  kCallsBegin);
  for (size_t i = 0; i < calls.size(); ++i) {
    absl::StrAppend(&out, "  { char* b[] = {nullptr}; k", calls[i], "(b, ws); kernel_ns[", i,
                    "] += 1; }\n");
  }
  absl::StrAppend(&out, kCallsEnd, "}\n");
  return out;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CpuUnitsTest, SplitCutsTheCallsIntoRangesAndDefinesEachKernelOnce) {
  const std::string big = absl::StrCat("/* ", std::string(40 << 10, 'x'), " */");
  // k1 is called again after k2: in the third unit, which declares it.
  const std::string source = LaidOut({big, big, big, "/* small */"}, {0, 1, 2, 1, 3});
  // One job and no most size: the source as it is.
  const std::vector<std::string> whole = SplitIntoUnits(source, 1, kMinUnitBytes, 1 << 30);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0], source);
  // 120 KB of kernels: over kMaxUnitBytes, so two units even for one job; not three of under
  // kMinUnitBytes for three.
  EXPECT_EQ(SplitIntoUnits(source, 1).size(), 2u);
  EXPECT_EQ(SplitIntoUnits(source, 3).size(), 2u);

  const std::vector<std::string> units = SplitIntoUnits(source, 3, 1);
  ASSERT_EQ(units.size(), 3u);
  for (const std::string& u : units) {
    EXPECT_EQ(u.substr(0, 19), "#include <cstdint>\n");
    EXPECT_EQ(Count(u, "mltune_entry("), &u == &units.back() ? 1 : 0);
  }
  EXPECT_EQ(Count(units[0], "static void k0(char* const* b, char* ws) {"), 1);
  EXPECT_EQ(Count(units[1], "[[gnu::visibility(\"hidden\")]] void k1(char* const* b, char* ws) {"),
            1);
  EXPECT_EQ(Count(units[2], "static void k2(char* const* b, char* ws) {"), 1);
  EXPECT_EQ(Count(units[2], "static void k3(char* const* b, char* ws) {"), 1);
  EXPECT_EQ(Count(units[2], "[[gnu::visibility(\"hidden\")]] void k1(char* const* b, char* ws);"),
            1);
  for (const std::string& u : units) EXPECT_EQ(Count(u, "/* small */"), &u == &units[2] ? 1 : 0);
  // Each part runs its range, in the plain and in the profiled entry; the entry runs the parts.
  EXPECT_EQ(Count(units[2], "k2(b, ws); }"), 1);
  EXPECT_EQ(Count(units[2], "k1(b, ws); kernel_ns[3] += 1; }"), 1);
  EXPECT_EQ(Count(units[2],
                  "  mltune_part_0(args, results, scratch, ws);\n"
                  "  mltune_part_1(args, results, scratch, ws);\n"
                  "  mltune_part_2(args, results, scratch, ws);\n"),
            1);
  EXPECT_EQ(Count(units[2], "mltune_part_1_profiled(args, results, scratch, ws, kernel_ns);"), 1);

  EXPECT_EQ(SplitIntoUnits(source, 1, 1, 1 << 30).size(), 1u);
  // At most one unit per call; the largest range as small as it can be (k0 alone).
  EXPECT_EQ(SplitIntoUnits(source, 16, 1).size(), 4u);
  EXPECT_EQ(SplitIntoUnits("no markers\n", 4, 1).size(), 1u);
}

TEST(CpuUnitsTest, ManyKernelsCompileAsSeveralUnitsMatchTheEvaluatorAndHitTheCache) {
  CompilerOptions options;
  options.cache_dir = FreshCacheDir("many");
  options.jobs = 4;
  options.min_unit_bytes = 1;
  absl::StatusOr<Split> split = CompileSplit(ManyKernels(), options);
  ASSERT_TRUE(split.ok()) << split.status();
  const CompiledModule& c = split->compiled;
  ASSERT_GE(c.lowered.kernels.size(), 6u);
  EXPECT_EQ(c.object.units, 4);
  EXPECT_FALSE(c.object.cache_hit);
  EXPECT_NE(c.program.constants, nullptr);  // the 16 KB weight
  for (uint64_t seed : {1, 2}) {
    const absl::Status check = CheckAgainstEvaluator(*split->module, c, seed);
    EXPECT_TRUE(check.ok()) << "seed " << seed << ": " << check << "\n" << c.program.source;
  }
  // The constants segment's base is one symbol, defined once: each unit declares it.
  const std::vector<std::string> units = SplitIntoUnits(c.program.source, 4, 1);
  ASSERT_EQ(units.size(), 4u);
  int definitions = 0;
  for (const std::string& u : units) {
    EXPECT_NE(u.find("extern const char* mt_constants;"), std::string::npos);
    definitions += u.find("const char* mt_constants = nullptr;") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(definitions, 1);

  // The same program again: the cached object, split alike.
  absl::StatusOr<CompiledObject> again = CompileProgram(c.program, options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->cache_hit);
  EXPECT_EQ(again->path, c.object.path);
  EXPECT_EQ(again->units, 4);

  // More units than jobs (most size 1: as many as the largest kernel allows), compiled one at a
  // time.
  CompilerOptions apart = options;
  apart.jobs = 1;
  apart.max_unit_bytes = 1;
  absl::StatusOr<Split> each = CompileSplit(ManyKernels(), apart);
  ASSERT_TRUE(each.ok()) << each.status();
  EXPECT_GE(each->compiled.object.units, 3);
  EXPECT_TRUE(CheckAgainstEvaluator(*each->module, each->compiled, 1).ok());

  // The same source compiles alone as one unit (what --emit-source writes), to another object
  // with the same results.
  CompilerOptions whole = options;
  whole.jobs = 1;
  whole.max_unit_bytes = kMaxUnitBytes;
  absl::StatusOr<Split> one = CompileSplit(ManyKernels(), whole);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->compiled.object.units, 1);
  EXPECT_EQ(one->compiled.program.source, c.program.source);
  EXPECT_NE(one->compiled.object.path, c.object.path);
  const absl::Status check = CheckAgainstEvaluator(*one->module, one->compiled, 1);
  EXPECT_TRUE(check.ok()) << check;
  fs::remove_all(options.cache_dir);
}

TEST(CpuUnitsTest, SmallProgramsAndSingleKernelsStayOneUnit) {
  CompilerOptions options;
  options.cache_dir = FreshCacheDir("small");
  options.jobs = 8;
  // Under the default least unit size, the many-kernel module is one unit.
  absl::StatusOr<Split> small = CompileSplit(ManyKernels(), options);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->compiled.object.units, 1);
  // One kernel stays one unit however small a unit may be: its entry does not go apart.
  options.min_unit_bytes = 1;
  absl::StatusOr<Split> single = CompileSplit(R"(
HloModule single
ENTRY e {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
})",
                                              options);
  ASSERT_TRUE(single.ok()) << single.status();
  EXPECT_EQ(single->compiled.lowered.kernels.size(), 1u);
  EXPECT_EQ(single->compiled.object.units, 1);
  EXPECT_TRUE(CheckAgainstEvaluator(*single->module, single->compiled, 0).ok());
  // A kernel compiled alone (the tile search's programs) likewise.
  const LoweredModule& lowered = small->compiled.lowered;
  absl::StatusOr<Program> kernel = GenerateKernel(lowered, 0, small->compiled.configs[0]);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_EQ(SplitIntoUnits(kernel->source, 8, 1).size(), 1u);
  fs::remove_all(options.cache_dir);
}

TEST(CpuUnitsTest, AUnitThatFailsIsNamedAndKept) {
  Program p;
  p.source = LaidOut({"(void)b; (void)ws;", "this is not C++;"}, {0, 1});
  CompilerOptions options;
  options.cache_dir = FreshCacheDir("failing");
  options.jobs = 2;
  options.min_unit_bytes = 1;
  absl::StatusOr<CompiledObject> bad = CompileProgram(p, options);
  ASSERT_FALSE(bad.ok());
  const std::string message(bad.status().message());
  EXPECT_NE(message.find("compiling generated code failed (unit 1 of 2: exit"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("unit 0 of 2"), std::string::npos) << message;
  const size_t at = message.find("source kept at ");
  ASSERT_NE(at, std::string::npos);
  const std::string kept = message.substr(at + 15, message.find("):", at) - at - 15);
  std::ifstream in(kept);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("this is not C++"), std::string::npos) << kept;
  // The working unit and the objects are gone; nothing is stored under the key.
  int left = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(options.cache_dir)) {
    left += e.path().string() == kept ? 0 : 1;
  }
  EXPECT_EQ(left, 0);
  fs::remove_all(options.cache_dir);
}

}  // namespace
}  // namespace mltune::backends::cpu
