// libFuzzer target for the HLO text parser: any input must give a module or an error, never a
// crash, hang, sanitizer report or unbounded allocation. Accepted modules also go through the
// verifier, printer and fingerprint, and the printed text must parse again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ir/ir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  mltune::ir::ParseOptions options;
  options.filename = "fuzz";
  // Keep single inputs cheap so the fuzzer explores rather than allocates.
  options.max_array_bytes = int64_t{1} << 32;
  auto module = mltune::ir::ParseHloText(text, options);
  if (!module.ok()) return 0;
  (void)mltune::ir::VerifyModule(**module);
  std::string printed = mltune::ir::PrintModule(**module);
  (void)mltune::ir::Fingerprint(**module);
  auto reparsed = mltune::ir::ParseHloText(printed, options);
  if (!reparsed.ok()) {
    // The printer produced text the parser rejects: a round-trip bug worth a crash report.
    std::abort();
  }
  return 0;
}
