#include "backends/xla/xla_worker.h"

namespace mltune::backends::xla {

// Debug options that change the code XLA generates without changing what a program computes
// beyond floating-point rounding (every candidate is still checked against the default's
// outputs). Values are the alternatives to XLA's own default, which a candidate keeps by leaving
// the option unset. Names as jaxlib 0.12's DebugOptions spells them; the task drops those the
// installed XLA refuses and reports them.
const std::vector<XlaOptionChoice>& CuratedXlaOptions(std::string_view platform) {
  static const auto* cpu = new std::vector<XlaOptionChoice>{
      {"xla_cpu_enable_fast_math",
       {"true"},
       "LLVM fast-math flags: reassociation, reciprocals and approximate functions"},
      {"xla_cpu_prefer_vector_width",
       {"128", "512"},
       "the vector width LLVM's vectorizers aim for (XLA's default is 256 bits)"},
      {"xla_cpu_enable_fast_min_max", {"true", "false"}, "min/max without NaN propagation checks"},
      {"xla_cpu_enable_platform_dependent_math",
       {"true", "false"},
       "the host's own math routines instead of XLA's portable approximations"},
      {"xla_backend_optimization_level", {"2", "1"}, "LLVM's optimisation level for the kernels"},
      {"xla_llvm_disable_expensive_passes",
       {"true"},
       "skips LLVM's costly passes (faster compiles, sometimes faster code)"},
      {"xla_cpu_use_xnnpack", {"true"}, "XNNPACK kernels for the ops it covers"},
      {"xla_cpu_experimental_xnn_graph_fusion_mode",
       {"XNN_GRAPH_FUSION_MODE_GREEDY"},
       "fuses chains of XNNPACK-supported ops into one XNNPACK graph"},
      {"xla_cpu_use_onednn", {"true"}, "oneDNN kernels for dots and convolutions"},
      {"xla_cpu_enable_concurrency_optimized_scheduler",
       {"true", "false"},
       "the HLO scheduler that favours concurrency over memory"},
  };
  static const auto* gpu = new std::vector<XlaOptionChoice>{
      {"xla_gpu_enable_triton_gemm", {"false"}, "Triton GEMM fusions (else cuBLAS)"},
      {"xla_gpu_autotune_level", {"0", "2"}, "how much XLA autotunes GEMMs and convolutions"},
      {"xla_gpu_enable_latency_hiding_scheduler",
       {"true"},
       "the scheduler that overlaps communication and compute"},
      {"xla_gpu_enable_cublaslt", {"true"}, "cuBLASLt for GEMMs with fused epilogues"},
      {"xla_gpu_enable_fast_min_max", {"true", "false"}, "min/max without NaN checks"},
  };
  static const auto* none = new std::vector<XlaOptionChoice>();
  if (platform == "cpu") return *cpu;
  if (platform == "gpu") return *gpu;
  return *none;
}

}  // namespace mltune::backends::xla
