// The configurations the CPU backend's tests check beside the defaults: each other value of each
// parameter of each kernel, one at a time, so no configuration the tuner may pick changes results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/lowering.h"

namespace mltune::backends::cpu {

struct ConfigVariant {
  std::string label;  // "kernel NAME PARAM=VALUE"
  std::string param;
  int64_t value = 0;
  std::vector<KernelConfig> configs;  // `base` with that one value changed
};

inline std::vector<ConfigVariant> SingleParameterVariants(const LoweredModule& lowered,
                                                          const std::vector<KernelConfig>& base) {
  std::vector<ConfigVariant> out;
  for (size_t k = 0; k < lowered.kernels.size(); ++k) {
    const Kernel& kernel = lowered.kernels[k];
    for (size_t p = 0; p < kernel.params.size(); ++p) {
      for (size_t v = 1; v < kernel.params[p].choices.size(); ++v) {
        ConfigVariant variant;
        variant.param = kernel.params[p].name;
        variant.value = kernel.params[p].choices[v];
        variant.label =
            absl::StrCat("kernel ", kernel.name, " ", variant.param, "=", variant.value);
        variant.configs = base;
        variant.configs[k][p] = variant.value;
        out.push_back(std::move(variant));
      }
    }
  }
  return out;
}

}  // namespace mltune::backends::cpu
