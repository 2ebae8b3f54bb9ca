// Whether generated kernels may call oneDNN's sgemm, and how to link them against it. The build
// records the library it found (Debian's libdnnl-dev); MLTUNE_NO_ONEDNN=1 turns it off at run
// time, so the tuner's choice between library and generated GEMMs can be tested both ways.
#pragma once

#include <string>

namespace mltune::backends::cpu {

bool OneDnnAvailable();
// The linker argument for generated objects that call dnnl_sgemm ("" when unavailable).
std::string OneDnnLinkArgument();

}  // namespace mltune::backends::cpu
