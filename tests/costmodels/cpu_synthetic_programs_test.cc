// Synthetic training programs (costmodels/synthetic): deterministic per seed, valid HLO within the
// size limits, covering the blocks they are meant to add, and lowered, compiled and run by the
// CPU backend with the reference evaluator's results.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/lowering.h"
#include "costmodels/synthetic/synthetic_programs.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"

namespace mltune::costmodels::synthetic {
namespace {

std::unique_ptr<ir::Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status() << "\n" << text;
  return m.ok() ? *std::move(m) : nullptr;
}

TEST(SyntheticProgramsTest, SameSeedSameProgramOtherSeedOtherProgram) {
  EXPECT_EQ(SyntheticProgram(7), SyntheticProgram(7));
  EXPECT_NE(SyntheticProgram(7), SyntheticProgram(8));
  std::unique_ptr<ir::Module> m = Parse(SyntheticProgram(7));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->name(), "synthetic_7");
}

// What kind of contraction a dot is, by its operands' ranks and dimension numbers.
std::string ContractionForm(const ir::Instruction& dot) {
  const ir::DotDimensionNumbers& d = *dot.dot_dnums;
  const size_t lhs_rank = dot.operand(0)->shape().dimensions().size();
  const size_t rhs_rank = dot.operand(1)->shape().dimensions().size();
  const bool batched = !d.lhs_batch_dimensions.empty();
  if (batched && lhs_rank == 2 && rhs_rank == 2) return "row dots";
  if (batched && rhs_rank + 1 == lhs_rank) return "batched matrix-vector";
  if (batched) return "batched matmul";
  if (rhs_rank == 1) return "matrix-vector";
  if (d.lhs_contracting_dimensions == std::vector<int64_t>{0}) return "transposed lhs";
  if (d.rhs_contracting_dimensions == std::vector<int64_t>{1}) return "gram";
  return "matmul";
}

// Which pass of a convolution layer `conv` is, by its dimension labels: the forward one
// (b01f_01io->b01f), the weight gradient (f01b_i01o->01bf: batch contracted, a [k, k, c, o]
// result) or the input gradient (b01f_01oi->b01f: the filter's features swapped).
std::string ConvolutionForm(const ir::Instruction& conv) {
  const ir::ConvolutionDimensionNumbers& d = *conv.conv_dnums;
  if (d.input_feature_dimension == 0 && d.output_spatial_dimensions.front() == 0) {
    return "weight gradient";
  }
  if (d.kernel_output_feature_dimension + 1 == d.kernel_input_feature_dimension) {
    return "input gradient";
  }
  return "forward convolution";
}

// A dot's contraction form or a convolution's pass; empty for other ops.
std::string Form(const ir::Instruction& i) {
  if (i.opcode() == ir::Opcode::kDot) return ContractionForm(i);
  if (i.opcode() == ir::Opcode::kConvolution) return ConvolutionForm(i);
  return "";
}

TEST(SyntheticProgramsTest, ProgramsVerifyRespectSizeLimitsAndCoverEveryBlock) {
  SyntheticOptions options;
  options.max_elements = 1 << 14;
  options.max_flops = 1 << 22;
  std::set<std::string> opcodes;
  int degenerate = 0;           // parameters with a minor dimension of at most 4 after a unit one
  int integer_ops = 0;          // s32 arithmetic: index and mask code
  std::set<std::string> forms;  // dot forms and convolution passes
  for (uint64_t seed = 0; seed < 300; ++seed) {
    std::unique_ptr<ir::Module> m = Parse(SyntheticProgram(seed, options));
    ASSERT_NE(m, nullptr) << "seed " << seed;
    ASSERT_TRUE(ir::VerifyModule(*m).ok()) << "seed " << seed << ": " << ir::VerifyModule(*m);
    for (const ir::Instruction* i : m->entry()->instructions()) {
      opcodes.insert(std::string(ir::OpcodeName(i->opcode())));
      if (i->opcode() == ir::Opcode::kParameter && i->shape().IsArray()) {
        const std::vector<int64_t>& d = i->shape().dimensions();
        if (d.size() >= 3 && d[d.size() - 2] == 1 && d.back() <= 4) ++degenerate;
      }
      if (i->shape().IsArray() && i->shape().element_type() == ir::PrimitiveType::kS32 &&
          i->opcode() != ir::Opcode::kParameter && i->opcode() != ir::Opcode::kBroadcast &&
          i->opcode() != ir::Opcode::kConstant) {
        ++integer_ops;
      }
      forms.insert(Form(*i));
      if (i->shape().IsArray()) {
        EXPECT_LE(i->shape().ElementCount(), options.max_elements)
            << "seed " << seed << ": " << i->name();
      }
    }
  }
  // The blocks, and the math library: each libm call costs its own, so the model has to have
  // seen it (held-out programs brought power and atan2 when no training program had them).
  for (const char* op : {"dot",
                         "convolution",
                         "reduce",
                         "reduce-window",
                         "reverse",
                         "transpose",
                         "slice",
                         "concatenate",
                         "pad",
                         "select",
                         "compare",
                         "exponential",
                         "rsqrt",
                         "power",
                         "atan2",
                         "remainder",
                         "sine",
                         "cosine",
                         "erf",
                         "cbrt",
                         "log-plus-one",
                         "exponential-minus-one",
                         "round-nearest-even",
                         "convert",
                         "shift-left",
                         "xor",
                         "divide"}) {
    EXPECT_EQ(opcodes.count(op), 1u) << op << " never generated in 300 programs";
  }
  EXPECT_GE(degenerate, 5) << "shapes such as [2048,1,2] should come up now and then";
  EXPECT_GE(integer_ops, 50) << "s32 index and mask arithmetic should come up";
  for (const char* form :
       {"matmul", "batched matmul", "row dots", "gram", "matrix-vector", "batched matrix-vector",
        "transposed lhs", "forward convolution", "weight gradient", "input gradient"}) {
    EXPECT_EQ(forms.count(form), 1u) << form << " never generated in 300 programs";
  }
}

// Naming blocks aims a batch at kernel classes: contraction-only programs hold dots and the ops
// that feed them, and no convolution, reduce or transcendental the other blocks bring.
TEST(SyntheticProgramsTest, ChosenBlocksAreTheOnlyOnesBuilt) {
  SyntheticOptions options;
  options.max_elements = 1 << 14;
  options.max_flops = 1 << 22;
  options.blocks = {"contraction"};
  ASSERT_TRUE(ValidateSyntheticOptions(options).ok());
  std::set<std::string> opcodes;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    std::unique_ptr<ir::Module> m = Parse(SyntheticProgram(seed, options));
    ASSERT_NE(m, nullptr) << "seed " << seed;
    ASSERT_TRUE(ir::VerifyModule(*m).ok()) << "seed " << seed;
    for (const ir::Instruction* i : m->entry()->instructions()) {
      opcodes.insert(std::string(ir::OpcodeName(i->opcode())));
    }
  }
  EXPECT_EQ(opcodes.count("dot"), 1u);
  for (const char* op : {"convolution", "reduce", "exponential", "tanh", "transpose", "slice"}) {
    EXPECT_EQ(opcodes.count(op), 0u) << op << " comes from a block that was not chosen";
  }
  // The default mix is untouched by the option's existence: no blocks named, all of them drawn.
  options.blocks = {"reduce", "layer-norm"};
  EXPECT_NE(SyntheticProgram(3, options), SyntheticProgram(3, SyntheticOptions{}));
}

// The kernel-method block: atan2 on the [n, n] Gram matrix and on its [n] diagonal, the diagonal
// broadcast along both dimensions of the matrix, within the size limits; compiled, it computes
// what the evaluator does.
TEST(SyntheticProgramsTest, KernelMethodRecursionAtan2OnTheGramMatrixAndItsDiagonal) {
  setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
  SyntheticOptions options;
  options.max_elements = 4096;
  options.max_flops = 1 << 18;
  options.blocks = {"kernel-method"};
  ASSERT_TRUE(ValidateSyntheticOptions(options).ok());
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::string text = SyntheticProgram(seed, options);
    std::unique_ptr<ir::Module> m = Parse(text);
    ASSERT_NE(m, nullptr) << "seed " << seed;
    ASSERT_TRUE(ir::VerifyModule(*m).ok()) << "seed " << seed;
    bool matrix_atan2 = false, vector_atan2 = false, row_broadcast = false, gram = false;
    for (const ir::Instruction* i : m->entry()->instructions()) {
      if (!i->shape().IsArray()) continue;
      const size_t rank = i->shape().dimensions().size();
      EXPECT_LE(i->shape().ElementCount(), options.max_elements) << "seed " << seed;
      if (i->opcode() == ir::Opcode::kAtan2) (rank == 2 ? matrix_atan2 : vector_atan2) = true;
      gram |= Form(*i) == "gram";
      row_broadcast |= i->opcode() == ir::Opcode::kBroadcast && rank == 2 &&
                       i->operand(0)->shape().dimensions().size() == 1 &&
                       i->dimensions == std::vector<int64_t>{1};
    }
    EXPECT_TRUE(matrix_atan2 && vector_atan2 && row_broadcast && gram) << text;
    if (seed < 2) {
      absl::StatusOr<backends::cpu::CompiledModule> compiled = backends::cpu::CompileModule(*m);
      ASSERT_TRUE(compiled.ok()) << "seed " << seed << ": " << compiled.status();
      absl::Status check = backends::cpu::CheckAgainstEvaluator(*m, *compiled, seed);
      EXPECT_TRUE(check.ok()) << "seed " << seed << ": " << check << "\n" << text;
    }
  }
}

// The channel-split block: slices of a minor dimension of 2-16, merged back by a concatenate along
// it or by pads summed (a slice's gradient); every form comes up, and compiled, each computes what
// the evaluator does.
TEST(SyntheticProgramsTest, ChannelSplitSlicesAndMergesTheMinorDimension) {
  setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
  SyntheticOptions options;
  options.max_elements = 2048;
  options.blocks = {"channel-split"};
  options.max_blocks = 1;
  ASSERT_TRUE(ValidateSyntheticOptions(options).ok());
  std::map<std::string, uint64_t> first_seed;  // form -> the first program with it
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const std::string text = SyntheticProgram(seed, options);
    std::unique_ptr<ir::Module> m = Parse(text);
    ASSERT_NE(m, nullptr) << "seed " << seed;
    ASSERT_TRUE(ir::VerifyModule(*m).ok()) << "seed " << seed << ": " << ir::VerifyModule(*m);
    int pads = 0, minor_slices = 0;
    bool minor_concatenate = false;
    for (const ir::Instruction* i : m->entry()->instructions()) {
      if (!i->shape().IsArray()) continue;
      EXPECT_LE(i->shape().ElementCount(), options.max_elements) << "seed " << seed;
      const int64_t last = static_cast<int64_t>(i->shape().dimensions().size()) - 1;
      if (i->opcode() == ir::Opcode::kSlice) {
        const std::vector<int64_t>& in = i->operand(0)->shape().dimensions();
        EXPECT_TRUE(in.back() >= 2 && in.back() <= 16) << text;
        minor_slices += i->shape().dimensions().back() < in.back();
      }
      pads += i->opcode() == ir::Opcode::kPad;
      minor_concatenate |=
          i->opcode() == ir::Opcode::kConcatenate && i->dimensions == std::vector<int64_t>{last};
    }
    EXPECT_GE(minor_slices, 1) << text;
    const std::string form = minor_concatenate ? "concatenate"
                             : pads == 2       ? "both parts padded back"
                             : pads == 1       ? "one part padded onto the whole"
                                               : "none";
    EXPECT_NE(form, "none") << text;
    first_seed.emplace(form, seed);
  }
  ASSERT_EQ(first_seed.size(), 3u) << "a form never came up in 40 programs";
  for (const auto& [form, seed] : first_seed) {
    std::unique_ptr<ir::Module> m = Parse(SyntheticProgram(seed, options));
    absl::StatusOr<backends::cpu::CompiledModule> compiled = backends::cpu::CompileModule(*m);
    ASSERT_TRUE(compiled.ok()) << form << ": " << compiled.status();
    absl::Status check = backends::cpu::CheckAgainstEvaluator(*m, *compiled, seed);
    EXPECT_TRUE(check.ok()) << form << ": " << check << "\n" << SyntheticProgram(seed, options);
  }
}

TEST(SyntheticProgramsTest, UnknownBlocksAndBadSizesAreRejected) {
  SyntheticOptions options;
  options.blocks = {"dense", "matmul"};
  const absl::Status s = ValidateSyntheticOptions(options);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown block 'matmul'"), std::string::npos) << s;
  EXPECT_NE(s.message().find("contraction"), std::string::npos) << "lists the known blocks: " << s;
  options.blocks = {};
  options.max_blocks = 0;
  EXPECT_FALSE(ValidateSyntheticOptions(options).ok());
  options.max_blocks = 4;
  options.max_elements = 4;
  EXPECT_FALSE(ValidateSyntheticOptions(options).ok());
  EXPECT_TRUE(ValidateSyntheticOptions(SyntheticOptions{}).ok());
  EXPECT_EQ(SyntheticBlockNames().size(), 14u);
}

TEST(SyntheticProgramsTest, CpuBackendLowersEveryProgram) {
  for (uint64_t seed = 0; seed < 60; ++seed) {
    std::unique_ptr<ir::Module> m = Parse(SyntheticProgram(seed));
    ASSERT_NE(m, nullptr);
    absl::StatusOr<std::unique_ptr<ir::Module>> optimized = backends::cpu::RunCpuPipeline(*m);
    ASSERT_TRUE(optimized.ok()) << "seed " << seed << ": " << optimized.status();
    absl::StatusOr<backends::cpu::LoweredModule> lowered = backends::cpu::Lower(**optimized);
    ASSERT_TRUE(lowered.ok()) << "seed " << seed << ": " << lowered.status();
    EXPECT_FALSE(lowered->kernels.empty()) << "seed " << seed;
  }
}

// Small programs compiled and run: what collect measures computes what the HLO says.
TEST(SyntheticProgramsTest, CompiledProgramsMatchTheEvaluator) {
  setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
  SyntheticOptions options;
  options.max_elements = 2048;
  options.max_flops = 1 << 18;
  // Seeds 0-5, and the first three after them with s32 index arithmetic (integer division,
  // shifts and converts have semantics of their own to get right).
  std::vector<uint64_t> seeds = {0, 1, 2, 3, 4, 5};
  for (uint64_t seed = 6, integer = 0; integer < 3 && seed < 200; ++seed) {
    if (SyntheticProgram(seed, options).find(" s32[") == std::string::npos) continue;
    seeds.push_back(seed);
    ++integer;
  }
  ASSERT_EQ(seeds.size(), 9u) << "fewer than 3 programs with s32 arithmetic in 200 seeds";
  // And the first program with each contraction the dense and attention blocks do not make, and
  // with each convolution gradient.
  std::set<std::string> forms_left = {"row dots",       "gram",
                                      "matrix-vector",  "batched matrix-vector",
                                      "transposed lhs", "weight gradient",
                                      "input gradient"};
  for (uint64_t seed = 0; !forms_left.empty() && seed < 400; ++seed) {
    std::unique_ptr<ir::Module> m = Parse(SyntheticProgram(seed, options));
    ASSERT_NE(m, nullptr);
    for (const ir::Instruction* i : m->entry()->instructions()) {
      if (forms_left.erase(Form(*i)) > 0 &&
          std::find(seeds.begin(), seeds.end(), seed) == seeds.end()) {
        seeds.push_back(seed);
      }
    }
  }
  EXPECT_TRUE(forms_left.empty()) << *forms_left.begin() << " not in 400 small programs";
  for (uint64_t seed : seeds) {
    std::unique_ptr<ir::Module> m = Parse(SyntheticProgram(seed, options));
    ASSERT_NE(m, nullptr);
    absl::StatusOr<backends::cpu::CompiledModule> compiled = backends::cpu::CompileModule(*m);
    ASSERT_TRUE(compiled.ok()) << "seed " << seed << ": " << compiled.status();
    absl::Status check = backends::cpu::CheckAgainstEvaluator(*m, *compiled, seed);
    EXPECT_TRUE(check.ok()) << "seed " << seed << ": " << check << "\n"
                            << SyntheticProgram(seed, options);
  }
}

}  // namespace
}  // namespace mltune::costmodels::synthetic
