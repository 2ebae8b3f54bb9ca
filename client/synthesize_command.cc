// `mltune synthesize`: writes random ML-shaped HLO programs (costmodels/synthetic) to a folder,
// each parsed and verified before it is written, as extra training data for `mltune collect`.
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/cli_commands.h"
#include "costmodels/synthetic/synthetic_programs.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"

namespace mltune::client {

int RunSynthesize(const SynthesizeCommand& cmd, std::ostream& out, std::ostream& err) {
  if (cmd.count < 1) {
    err << "error: --count must be at least 1\n";
    return 1;
  }
  costmodels::synthetic::SyntheticOptions options;
  options.max_blocks = cmd.max_blocks;
  options.max_elements = cmd.max_elements;
  options.max_flops = cmd.max_flops;
  options.blocks = cmd.blocks;
  if (absl::Status s = costmodels::synthetic::ValidateSyntheticOptions(options); !s.ok()) {
    err << "error: " << s.message()
        << " (--max-blocks >= 1, --max-elements and --max-flops >= 16, --blocks)\n";
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(cmd.out, ec);
  if (ec) {
    err << "error: cannot create " << cmd.out << ": " << ec.message() << "\n";
    return 1;
  }
  for (int64_t i = 0; i < cmd.count; ++i) {
    const uint64_t seed = cmd.seed + static_cast<uint64_t>(i);
    const std::string text = costmodels::synthetic::SyntheticProgram(seed, options);
    const std::string name =
        absl::StrCat(std::string(costmodels::synthetic::kModulePrefix), seed, ".hlo");
    // A generator bug must not reach the training data as a file collect skips or misreads.
    ir::ParseOptions parse;
    parse.filename = name;
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(text, parse);
    absl::Status verified = module.ok() ? ir::VerifyModule(**module) : module.status();
    if (!verified.ok()) {
      err << "error: synthetic program " << seed << " is invalid: " << verified.message() << "\n";
      return 1;
    }
    const std::filesystem::path path = std::filesystem::path(cmd.out) / name;
    std::ofstream file(path);
    file << text;
    if (!file.flush()) {
      err << "error: cannot write " << path.string() << "\n";
      return 1;
    }
  }
  out << "wrote " << cmd.count << " synthetic program(s) to " << cmd.out << " (seeds " << cmd.seed
      << ".." << cmd.seed + static_cast<uint64_t>(cmd.count) - 1 << ")\n";
  return 0;
}

}  // namespace mltune::client
