// The modules both time-to-best benchmarks (tile_time_to_best, fusion_time_to_best) tune by
// default: five corpus modules that the README's training data leaves out, and the bundled MLP.
// Header-only: it reads the including executable's MLTUNE_CORPUS_DIR and MLTUNE_SOURCE_DIR.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace mltune::bench {

inline std::vector<std::string> TimeToBestFiles() {
  const std::string corpus = MLTUNE_CORPUS_DIR "/hlo/hloenv/";
  std::vector<std::string> files;
  for (const char* name :
       {"maml_flax__module_0067.jit_train_step.26.before_optimizations.txt",
        "jax-enhance__module_0033.jit_prim_fun.13.before_optimizations.txt",
        "Scale-Mixtures-of-NNGP__module_0040.jit_serial.13.before_optimizations.txt",
        "jax_muzero__1649835456716499.module_0095.jit__var__1.31.before_optimizations.txt",
        "neural-tangents__module_0011.jit_fn.7.before_optimizations.txt"}) {
    if (std::filesystem::exists(corpus + name)) files.push_back(corpus + name);
  }
  files.push_back(MLTUNE_SOURCE_DIR "/examples/mlp_train_step.hlo");
  return files;
}

}  // namespace mltune::bench
