#include "ir/attributes.h"

#include <array>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mltune::ir {
namespace {

template <typename E, size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "";
}

template <typename E, size_t N>
std::optional<E> ValueOf(const std::array<std::pair<E, std::string_view>, N>& table,
                         std::string_view name) {
  for (const auto& [e, n] : table) {
    if (n == name) return e;
  }
  return std::nullopt;
}

constexpr std::array<std::pair<ComparisonDirection, std::string_view>, 6> kDirections = {{
    {ComparisonDirection::kEq, "EQ"},
    {ComparisonDirection::kNe, "NE"},
    {ComparisonDirection::kGe, "GE"},
    {ComparisonDirection::kGt, "GT"},
    {ComparisonDirection::kLe, "LE"},
    {ComparisonDirection::kLt, "LT"},
}};

constexpr std::array<std::pair<ComparisonType, std::string_view>, 4> kComparisonTypes = {{
    {ComparisonType::kFloat, "FLOAT"},
    {ComparisonType::kFloatTotalOrder, "TOTALORDER"},
    {ComparisonType::kSigned, "SIGNED"},
    {ComparisonType::kUnsigned, "UNSIGNED"},
}};

constexpr std::array<std::pair<RandomDistribution, std::string_view>, 2> kDistributions = {{
    {RandomDistribution::kUniform, "rng_uniform"},
    {RandomDistribution::kNormal, "rng_normal"},
}};

constexpr std::array<std::pair<FftType, std::string_view>, 4> kFftTypes = {{
    {FftType::kFft, "FFT"},
    {FftType::kIfft, "IFFT"},
    {FftType::kRfft, "RFFT"},
    {FftType::kIrfft, "IRFFT"},
}};

constexpr std::array<std::pair<TriangularTranspose, std::string_view>, 3> kTransposes = {{
    {TriangularTranspose::kNoTranspose, "NO_TRANSPOSE"},
    {TriangularTranspose::kTranspose, "TRANSPOSE"},
    {TriangularTranspose::kAdjoint, "ADJOINT"},
}};

// One side of dim_labels ("b01f"): the positions of the two named dimensions and of each
// spatial dimension, in spatial order.
struct LabelSide {
  int64_t first = -1;   // 'b' or 'i'
  int64_t second = -1;  // 'f' or 'o'
  std::vector<int64_t> spatial;
};

std::optional<LabelSide> ParseLabelSide(std::string_view s, char first, char second) {
  if (s.size() < 2 || s.size() > 12) return std::nullopt;
  LabelSide side;
  const int64_t spatial_count = static_cast<int64_t>(s.size()) - 2;
  side.spatial.assign(spatial_count, -1);
  for (size_t pos = 0; pos < s.size(); ++pos) {
    const char c = s[pos];
    const int64_t p = static_cast<int64_t>(pos);
    if (c == first) {
      if (side.first != -1) return std::nullopt;
      side.first = p;
    } else if (c == second) {
      if (side.second != -1) return std::nullopt;
      side.second = p;
    } else if (c >= '0' && c <= '9') {
      const int64_t k = c - '0';
      if (k >= spatial_count || side.spatial[k] != -1) return std::nullopt;
      side.spatial[k] = p;
    } else {
      return std::nullopt;
    }
  }
  if (side.first == -1 || side.second == -1) return std::nullopt;
  return side;
}

// Inverse of ParseLabelSide; positions out of range print as '?' rather than crash.
std::string LabelSideToString(int64_t first, char first_label, int64_t second, char second_label,
                              const std::vector<int64_t>& spatial) {
  const int64_t rank = static_cast<int64_t>(spatial.size()) + 2;
  std::string out(static_cast<size_t>(rank), '?');
  auto put = [&](int64_t pos, char label) {
    if (pos >= 0 && pos < rank) out[static_cast<size_t>(pos)] = label;
  };
  put(first, first_label);
  put(second, second_label);
  for (size_t k = 0; k < spatial.size(); ++k) {
    put(spatial[k], k < 10 ? static_cast<char>('0' + k) : '?');
  }
  return out;
}

}  // namespace

std::string_view ComparisonDirectionName(ComparisonDirection d) { return NameOf(kDirections, d); }
std::optional<ComparisonDirection> ParseComparisonDirection(std::string_view s) {
  return ValueOf(kDirections, s);
}
std::string_view ComparisonTypeName(ComparisonType t) { return NameOf(kComparisonTypes, t); }
std::optional<ComparisonType> ParseComparisonType(std::string_view s) {
  return ValueOf(kComparisonTypes, s);
}
std::string_view RandomDistributionName(RandomDistribution d) { return NameOf(kDistributions, d); }
std::optional<RandomDistribution> ParseRandomDistribution(std::string_view s) {
  return ValueOf(kDistributions, s);
}
std::string_view FftTypeName(FftType t) { return NameOf(kFftTypes, t); }
std::optional<FftType> ParseFftType(std::string_view s) { return ValueOf(kFftTypes, s); }
std::string_view TriangularTransposeName(TriangularTranspose t) { return NameOf(kTransposes, t); }
std::optional<TriangularTranspose> ParseTriangularTranspose(std::string_view s) {
  return ValueOf(kTransposes, s);
}

std::string ConvolutionDimensionNumbersToString(const ConvolutionDimensionNumbers& d) {
  return absl::StrCat(
      LabelSideToString(d.input_batch_dimension, 'b', d.input_feature_dimension, 'f',
                        d.input_spatial_dimensions),
      "_",
      LabelSideToString(d.kernel_input_feature_dimension, 'i', d.kernel_output_feature_dimension,
                        'o', d.kernel_spatial_dimensions),
      "->",
      LabelSideToString(d.output_batch_dimension, 'b', d.output_feature_dimension, 'f',
                        d.output_spatial_dimensions));
}

std::optional<ConvolutionDimensionNumbers> ParseConvolutionDimLabels(std::string_view s) {
  const size_t arrow = s.find("->");
  if (arrow == std::string_view::npos) return std::nullopt;
  const std::string_view inputs = s.substr(0, arrow);
  const std::string_view output = s.substr(arrow + 2);
  const size_t underscore = inputs.find('_');
  if (underscore == std::string_view::npos) return std::nullopt;
  std::optional<LabelSide> lhs = ParseLabelSide(inputs.substr(0, underscore), 'b', 'f');
  std::optional<LabelSide> rhs = ParseLabelSide(inputs.substr(underscore + 1), 'i', 'o');
  std::optional<LabelSide> out = ParseLabelSide(output, 'b', 'f');
  if (!lhs || !rhs || !out) return std::nullopt;
  if (lhs->spatial.size() != rhs->spatial.size() || lhs->spatial.size() != out->spatial.size()) {
    return std::nullopt;
  }
  ConvolutionDimensionNumbers d;
  d.input_batch_dimension = lhs->first;
  d.input_feature_dimension = lhs->second;
  d.input_spatial_dimensions = std::move(lhs->spatial);
  d.kernel_input_feature_dimension = rhs->first;
  d.kernel_output_feature_dimension = rhs->second;
  d.kernel_spatial_dimensions = std::move(rhs->spatial);
  d.output_batch_dimension = out->first;
  d.output_feature_dimension = out->second;
  d.output_spatial_dimensions = std::move(out->spatial);
  return d;
}

std::string WindowToString(const Window& window) {
  if (window.dims.empty()) return "";
  bool has_stride = false, has_pad = false, has_lhs = false, has_rhs = false, has_rev = false;
  for (const WindowDim& d : window.dims) {
    has_stride |= d.stride != 1;
    has_pad |= d.padding_low != 0 || d.padding_high != 0;
    has_lhs |= d.base_dilation != 1;
    has_rhs |= d.window_dilation != 1;
    has_rev |= d.window_reversal;
  }
  std::string out = "size=";
  out += absl::StrJoin(window.dims, "x",
                       [](std::string* o, const WindowDim& d) { absl::StrAppend(o, d.size); });
  if (has_stride) {
    out += " stride=";
    out += absl::StrJoin(window.dims, "x",
                         [](std::string* o, const WindowDim& d) { absl::StrAppend(o, d.stride); });
  }
  if (has_pad) {
    out += " pad=";
    out += absl::StrJoin(window.dims, "x", [](std::string* o, const WindowDim& d) {
      absl::StrAppend(o, d.padding_low, "_", d.padding_high);
    });
  }
  if (has_lhs) {
    out += " lhs_dilate=";
    out += absl::StrJoin(window.dims, "x", [](std::string* o, const WindowDim& d) {
      absl::StrAppend(o, d.base_dilation);
    });
  }
  if (has_rhs) {
    out += " rhs_dilate=";
    out += absl::StrJoin(window.dims, "x", [](std::string* o, const WindowDim& d) {
      absl::StrAppend(o, d.window_dilation);
    });
  }
  if (has_rev) {
    out += " rhs_reversal=";
    out += absl::StrJoin(window.dims, "x", [](std::string* o, const WindowDim& d) {
      absl::StrAppend(o, d.window_reversal ? 1 : 0);
    });
  }
  return out;
}

std::string PaddingToString(const std::vector<PaddingDim>& padding) {
  bool interior = false;
  for (const PaddingDim& p : padding) interior |= p.interior != 0;
  return absl::StrJoin(padding, "x", [interior](std::string* o, const PaddingDim& p) {
    absl::StrAppend(o, p.low, "_", p.high);
    if (interior) absl::StrAppend(o, "_", p.interior);
  });
}

}  // namespace mltune::ir
