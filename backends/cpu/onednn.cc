#include "backends/cpu/onednn.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace mltune::backends::cpu {

bool OneDnnAvailable() {
  const char* off = std::getenv("MLTUNE_NO_ONEDNN");
  if (off != nullptr && std::strcmp(off, "0") != 0 && off[0] != '\0') return false;
  const std::string lib = MLTUNE_DNNL_LIBRARY;
  return !lib.empty() && access(lib.c_str(), R_OK) == 0;
}

std::string OneDnnLinkArgument() { return OneDnnAvailable() ? MLTUNE_DNNL_LIBRARY : ""; }

}  // namespace mltune::backends::cpu
