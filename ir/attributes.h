// Structured opcode attributes: the parts of an HLO instruction the IR interprets (dimension
// numbers, windows, slices, comparison direction, ...). Attributes it does not interpret are kept
// verbatim in Instruction::extra_attributes().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mltune::ir {

struct SliceDim {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
  bool operator==(const SliceDim&) const = default;
};

struct WindowDim {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t padding_low = 0;
  int64_t padding_high = 0;
  int64_t window_dilation = 1;
  int64_t base_dilation = 1;
  bool window_reversal = false;
  bool operator==(const WindowDim&) const = default;
};

struct Window {
  std::vector<WindowDim> dims;
  bool operator==(const Window&) const = default;
};

// Printed as dim_labels=b01f_01io->b01f.
struct ConvolutionDimensionNumbers {
  int64_t input_batch_dimension = 0;
  int64_t input_feature_dimension = 1;
  std::vector<int64_t> input_spatial_dimensions;
  int64_t kernel_input_feature_dimension = 0;
  int64_t kernel_output_feature_dimension = 1;
  std::vector<int64_t> kernel_spatial_dimensions;
  int64_t output_batch_dimension = 0;
  int64_t output_feature_dimension = 1;
  std::vector<int64_t> output_spatial_dimensions;
  bool operator==(const ConvolutionDimensionNumbers&) const = default;
};

struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch_dimensions;
  std::vector<int64_t> lhs_contracting_dimensions;
  std::vector<int64_t> rhs_batch_dimensions;
  std::vector<int64_t> rhs_contracting_dimensions;
  bool operator==(const DotDimensionNumbers&) const = default;
};

struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
  bool operator==(const GatherDimensionNumbers&) const = default;
};

struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
  bool operator==(const ScatterDimensionNumbers&) const = default;
};

struct PaddingDim {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
  bool operator==(const PaddingDim&) const = default;
};

enum class ComparisonDirection { kEq, kNe, kGe, kGt, kLe, kLt };
// XLA's comparison type: how floats and integers are ordered (type=TOTALORDER, ...).
enum class ComparisonType { kDefault, kFloat, kFloatTotalOrder, kSigned, kUnsigned };

enum class RandomDistribution { kUniform, kNormal };
enum class FftType { kFft, kIfft, kRfft, kIrfft };
enum class TriangularTranspose { kNoTranspose, kTranspose, kAdjoint };

struct TriangularSolveOptions {
  bool left_side = false;
  bool lower = false;
  bool unit_diagonal = false;
  TriangularTranspose transpose_a = TriangularTranspose::kNoTranspose;
  bool operator==(const TriangularSolveOptions&) const = default;
};

// One `input_output_alias` entry: output tuple index aliases a parameter (sub)buffer.
struct IoAlias {
  std::vector<int64_t> output_index;
  int64_t parameter_number = 0;
  std::vector<int64_t> parameter_index;
  std::string kind;  // "must-alias" or "may-alias"; empty prints nothing
  bool operator==(const IoAlias&) const = default;
};

std::string_view ComparisonDirectionName(ComparisonDirection d);
std::optional<ComparisonDirection> ParseComparisonDirection(std::string_view s);
std::string_view ComparisonTypeName(ComparisonType t);  // "" for kDefault
std::optional<ComparisonType> ParseComparisonType(std::string_view s);
std::string_view RandomDistributionName(RandomDistribution d);
std::optional<RandomDistribution> ParseRandomDistribution(std::string_view s);
std::string_view FftTypeName(FftType t);
std::optional<FftType> ParseFftType(std::string_view s);
std::string_view TriangularTransposeName(TriangularTranspose t);
std::optional<TriangularTranspose> ParseTriangularTranspose(std::string_view s);

// dim_labels text such as "b01f_01io->b01f" for the given numbers, and back.
std::string ConvolutionDimensionNumbersToString(const ConvolutionDimensionNumbers& dnums);
std::optional<ConvolutionDimensionNumbers> ParseConvolutionDimLabels(std::string_view s);
// Window text: "size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=... rhs_dilate=... rhs_reversal=..."
std::string WindowToString(const Window& window);
// Padding text: "0_0x1_2_1" (low_high[_interior] per dimension).
std::string PaddingToString(const std::vector<PaddingDim>& padding);

}  // namespace mltune::ir
