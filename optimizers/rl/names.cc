#include "absl/strings/str_cat.h"
#include "optimizers/rl/rl.h"

namespace mltune::opt::rl {

std::string_view AlgoName(Algo algo) {
  switch (algo) {
    case Algo::kPpo:
      return "ppo";
    case Algo::kDqn:
      return "dqn";
    case Algo::kMaxQ:
      return "maxq";
  }
  return "?";
}

absl::StatusOr<Algo> ParseAlgo(std::string_view name) {
  for (Algo a : {Algo::kPpo, Algo::kDqn, Algo::kMaxQ}) {
    if (AlgoName(a) == name) return a;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown algorithm '", std::string(name), "' (known: ppo, dqn, maxq)"));
}

std::string_view EncoderName(EncoderKind kind) { return kind == EncoderKind::kGnn ? "gnn" : "mlp"; }

absl::StatusOr<EncoderKind> ParseEncoder(std::string_view name) {
  if (name == "mlp") return EncoderKind::kMlp;
  if (name == "gnn") return EncoderKind::kGnn;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown encoder '", std::string(name), "' (known: mlp, gnn)"));
}

}  // namespace mltune::opt::rl
