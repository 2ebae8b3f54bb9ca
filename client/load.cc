#include "client/load.h"

#include <cstdlib>
#include <fstream>
#include <ostream>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "frontends/onnx/onnx_import.h"
#include "ir/evaluator/fill_elided.h"
#include "ir/hlo_printer.h"

namespace mltune::client {

absl::StatusOr<std::unique_ptr<ir::Module>> LoadModelFile(const std::string& file) {
  // HLO text is printable; anything else is tried as an ONNX ModelProto (gzipped HLO included).
  char head[64];
  std::ifstream in(file, std::ios::binary);
  in.read(head, sizeof(head));
  const std::string_view start(head, static_cast<size_t>(in.gcount()));
  const bool gzip = start.size() >= 2 && static_cast<unsigned char>(start[0]) == 0x1f &&
                    static_cast<unsigned char>(start[1]) == 0x8b;
  if (!in.bad() && !start.empty() && !gzip && !ir::onnx::LooksLikeText(start)) {
    ir::onnx::OnnxImportOptions options;
    // Symbolic dimensions (a batch exported as dynamic) are bound from MLTUNE_ONNX_DIMS.
    if (const char* dims = std::getenv("MLTUNE_ONNX_DIMS")) {
      for (absl::string_view item : absl::StrSplit(dims, ',', absl::SkipEmpty())) {
        const size_t eq = item.find('=');
        int64_t value = 0;
        if (eq == absl::string_view::npos || !absl::SimpleAtoi(item.substr(eq + 1), &value)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "MLTUNE_ONNX_DIMS: expected NAME=N[,NAME=N...], got '", std::string(item), "'"));
        }
        options.dim_values[std::string(item.substr(0, eq))] = value;
      }
    }
    absl::StatusOr<ir::onnx::OnnxImport> imported = ir::onnx::ImportOnnxFile(file, options);
    if (!imported.ok()) return imported.status();
    return std::move(imported->module);
  }
  return ir::LoadVerifiedHlo(file);
}
std::optional<std::vector<InputFile>> CollectHloFiles(const std::vector<std::string>& inputs,
                                                      std::ostream& err) {
  absl::StatusOr<std::vector<ir::HloFile>> files = ir::FindHloFiles(inputs);
  if (!files.ok()) {
    err << "error: " << files.status().message() << "\n";
    return std::nullopt;
  }
  return *std::move(files);
}

namespace {

std::optional<uint64_t>& FillElidedSeed() {
  static std::optional<uint64_t> seed;
  return seed;
}

}  // namespace

void SetFillElidedSeed(uint64_t seed) { FillElidedSeed() = seed; }

std::unique_ptr<ir::Module> LoadVerified(const std::string& file, std::ostream& err) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = LoadModelFile(file);
  if (!module.ok()) {
    err << "error: " << module.status().message() << "\n";
    return nullptr;
  }
  std::optional<uint64_t> seed = FillElidedSeed();
  if (const char* env = std::getenv("MLTUNE_FILL_ELIDED"); !seed.has_value() && env != nullptr) {
    uint64_t value = 0;
    if (!absl::SimpleAtoi(env, &value)) {
      err << "error: MLTUNE_FILL_ELIDED: expected a seed (an unsigned integer), got '" << env
          << "'\n";
      return nullptr;
    }
    seed = value;
  }
  if (seed.has_value()) {
    absl::StatusOr<int64_t> filled = ir::FillElidedConstants(**module, *seed);
    if (!filled.ok()) {
      err << "error: " << file << ": " << filled.status().message() << "\n";
      return nullptr;
    }
    // Said every time: the results are then not the model's.
    if (*filled > 0) {
      err << "warning: " << file << ": filled " << *filled
          << " elided constant(s) with seeded random values (seed " << *seed
          << "); results are not the model's\n";
    }
  }
  return *std::move(module);
}

bool WriteModule(const ir::Module& module, const std::string& path, std::ostream& out,
                 std::ostream& err) {
  std::ofstream file(path);
  file << ir::PrintModule(module);
  if (!file) {
    err << "error: cannot write " << path << "\n";
    return false;
  }
  out << "wrote " << path << "\n";
  return true;
}

}  // namespace mltune::client
