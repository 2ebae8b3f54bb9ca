// Loss names and the checks on options and graphs that run before any tensor is built, so a bad
// request is an error status rather than a c10::Error from deep inside LibTorch.
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "costmodels/learned/learned_model.h"

namespace mltune::costmodels::learned {
namespace {
constexpr int kMaxVocabulary = 1 << 20;
constexpr int kMaxWidth = 4096;
constexpr int kMaxLayers = 64;
constexpr int kMaxEnsemble = 64;
}  // namespace

std::string_view LossName(Loss loss) {
  switch (loss) {
    case Loss::kMseLog:
      return "mse-log";
    case Loss::kRankHinge:
      return "rank-hinge";
    case Loss::kRankLogistic:
      return "rank-logistic";
    case Loss::kBoth:
      return "both";
  }
  return "unknown";
}

absl::StatusOr<Loss> ParseLoss(std::string_view name) {
  for (Loss loss : {Loss::kMseLog, Loss::kRankHinge, Loss::kRankLogistic, Loss::kBoth}) {
    if (LossName(loss) == name) return loss;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown loss '", std::string(name),
                                                 "' (mse-log, rank-hinge, rank-logistic, both)"));
}

bool HasLogisticRankTerm(Loss loss, bool rank_hinge) {
  return loss == Loss::kRankLogistic || (loss == Loss::kBoth && !rank_hinge);
}

absl::Status ValidateOptions(const ModelOptions& o) {
  auto bad = [](const char* what, double value) {
    return absl::InvalidArgumentError(absl::StrCat("ModelOptions: bad ", what, ": ", value));
  };
  // Upper bounds too: a checkpoint header is read from disk, and a huge size would be an
  // allocation failure inside LibTorch rather than an error.
  if (o.vocabulary_size < 1 || o.vocabulary_size > kMaxVocabulary) {
    return bad("vocabulary_size", o.vocabulary_size);
  }
  if (o.node_features < 0 || o.node_features > kMaxWidth) {
    return bad("node_features", o.node_features);
  }
  if (o.kernel_features < 0 || o.kernel_features > kMaxWidth) {
    return bad("kernel_features", o.kernel_features);
  }
  if (o.embedding_dim < 1 || o.embedding_dim > kMaxWidth) {
    return bad("embedding_dim", o.embedding_dim);
  }
  if (o.hidden_dim < 1 || o.hidden_dim > kMaxWidth) return bad("hidden_dim", o.hidden_dim);
  if (o.sage_layers < 0 || o.sage_layers > kMaxLayers) return bad("sage_layers", o.sage_layers);
  if (o.transformer_layers < 0 || o.transformer_layers > kMaxLayers) {
    return bad("transformer_layers", o.transformer_layers);
  }
  if (o.attention_heads < 1 || o.attention_heads > o.hidden_dim ||
      (o.transformer_layers > 0 && o.hidden_dim % o.attention_heads != 0)) {
    return bad("attention_heads (hidden_dim must be a multiple)", o.attention_heads);
  }
  if (!(o.dropout >= 0 && o.dropout < 1)) return bad("dropout", o.dropout);
  if (!(o.learning_rate > 0) || !std::isfinite(o.learning_rate)) {
    return bad("learning_rate", o.learning_rate);
  }
  if (!(o.weight_decay >= 0) || !std::isfinite(o.weight_decay)) {
    return bad("weight_decay", o.weight_decay);
  }
  if (o.epochs < 0) return bad("epochs", o.epochs);
  if (o.batch_size < 1) return bad("batch_size", o.batch_size);
  if (!(o.hinge_margin >= 0) || !std::isfinite(o.hinge_margin)) {
    return bad("hinge_margin", o.hinge_margin);
  }
  if (!(o.min_pair_ratio >= 1) || !std::isfinite(o.min_pair_ratio)) {
    return bad("min_pair_ratio", o.min_pair_ratio);
  }
  if (!(o.listwise_temperature >= 0) || !std::isfinite(o.listwise_temperature)) {
    return bad("listwise_temperature", o.listwise_temperature);
  }
  if (o.listwise_temperature > 0 && !HasLogisticRankTerm(o.loss, o.rank_hinge)) {
    return absl::InvalidArgumentError(
        "ModelOptions: listwise_temperature needs a logistic rank term (rank-logistic, or both "
        "without rank_hinge)");
  }
  if (!(o.relative_error_weight >= 0) || !std::isfinite(o.relative_error_weight)) {
    return bad("relative_error_weight", o.relative_error_weight);
  }
  if (o.ensemble < 1 || o.ensemble > kMaxEnsemble) return bad("ensemble", o.ensemble);
  if (!(o.spread_floor >= 0) || !std::isfinite(o.spread_floor)) {
    return bad("spread_floor", o.spread_floor);
  }
  if (!(o.spread_scale >= 0) || !std::isfinite(o.spread_scale)) {
    return bad("spread_scale", o.spread_scale);
  }
  if (o.threads < 1 || o.threads > 1024) return bad("threads", o.threads);
  return absl::OkStatus();
}

absl::Status ValidateGraph(const features::KernelGraph& g, const ModelOptions& o) {
  const int64_t n = g.size();
  if (n == 0) return absl::InvalidArgumentError("kernel graph has no nodes");
  // Wider rows than the model's are a newer feature set: the model reads their leading columns.
  const int64_t values = static_cast<int64_t>(g.node_features.size());
  if (values % n != 0 || values / n < o.node_features) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel graph: ", values, " node feature values for ", n,
                     " nodes; the model reads ", o.node_features, " per node"));
  }
  if (static_cast<int>(g.kernel_features.size()) < o.kernel_features) {
    return absl::InvalidArgumentError(absl::StrCat("kernel graph: ", g.kernel_features.size(),
                                                   " kernel features, model expects ",
                                                   o.kernel_features));
  }
  for (int32_t op : g.opcodes) {
    if (op < 0 || op >= o.vocabulary_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel graph: opcode id ", op, " outside the vocabulary [0, ", o.vocabulary_size, ")"));
    }
  }
  if (g.edge_src.size() != g.edge_dst.size()) {
    return absl::InvalidArgumentError("kernel graph: edge_src and edge_dst differ in length");
  }
  for (size_t e = 0; e < g.edge_src.size(); ++e) {
    if (g.edge_src[e] < 0 || g.edge_src[e] >= n || g.edge_dst[e] < 0 || g.edge_dst[e] >= n) {
      return absl::InvalidArgumentError(absl::StrCat("kernel graph: edge ", e, " (", g.edge_src[e],
                                                     " -> ", g.edge_dst[e], ") outside [0, ", n,
                                                     ")"));
    }
  }
  for (float v : g.node_features) {
    if (!std::isfinite(v)) return absl::InvalidArgumentError("kernel graph: non-finite feature");
  }
  for (float v : g.kernel_features) {
    if (!std::isfinite(v)) return absl::InvalidArgumentError("kernel graph: non-finite feature");
  }
  return absl::OkStatus();
}

}  // namespace mltune::costmodels::learned
