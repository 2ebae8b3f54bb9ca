// libFuzzer target for the ONNX importer: any bytes must give a module or an error, never a
// crash, hang, sanitizer report or unbounded allocation. Imported modules also go through the
// verifier, printer and fingerprint.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontends/onnx/onnx_import.h"
#include "ir/ir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  mltune::ir::onnx::OnnxImportOptions options;
  options.display_name = "fuzz.onnx";
  // Keep single inputs cheap so the fuzzer explores rather than allocates.
  options.max_constant_bytes = int64_t{16} << 20;
  options.max_instructions = 100'000;
  auto imported = mltune::ir::onnx::ImportOnnxModel(bytes, options);
  if (!imported.ok()) return 0;
  (void)mltune::ir::VerifyModule(*imported->module);
  (void)mltune::ir::PrintModule(*imported->module);
  (void)mltune::ir::Fingerprint(*imported->module);
  return 0;
}
