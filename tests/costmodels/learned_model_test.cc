// The learned cost model on synthetic kernels whose runtime is a known function of the graph and
// the configuration: it must learn absolute runtimes and the order of configurations within a
// kernel far better than a constant predictor, round-trip through checkpoints, predict the same
// in batches as one by one, train reproducibly, and refuse bad input with an error.
#include "costmodels/learned/learned_model.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace mltune::costmodels::learned {
namespace {

using features::KernelGraph;
using features::kKernelFeatures;
using features::kNodeFeatures;

constexpr int kVocabulary = 8;
constexpr int kTiles = 8;  // configurations per kernel

// Kernels with 3-14 nodes in a random tree (producer -> consumer) plus a few extra edges. Node
// feature 0 is an op's size, 1 is noise; kernel features are the static figures log(work) and
// node count, and the configuration: the tile slot t / (kTiles - 1). The runtime is
//   1e-6 * work * (1 + 0.3 (t - best)^2) * lognormal noise (2%),
// where work sums exp(3 size) times a per-opcode cost, and the best tile depends on the graph
// (the kernel's mean op size): ranking configurations needs the graph, not only the config.
struct Dataset {
  std::vector<std::unique_ptr<KernelGraph>> graphs;
  std::vector<Sample> samples;

  std::vector<const KernelGraph*> Graphs() const {
    std::vector<const KernelGraph*> out;
    for (const Sample& s : samples) out.push_back(s.graph);
    return out;
  }
  std::vector<int64_t> Groups() const {
    std::vector<int64_t> out;
    for (const Sample& s : samples) out.push_back(s.group);
    return out;
  }
  std::vector<double> Seconds() const {
    std::vector<double> out;
    for (const Sample& s : samples) out.push_back(s.seconds);
    return out;
  }
};

Dataset MakeDataset(int kernels, uint64_t seed, int64_t first_group) {
  static constexpr double kOpCost[kVocabulary] = {1.0, 0.5, 2.0, 1.0, 0.7, 1.5, 0.3, 1.2};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::normal_distribution<double> noise(0, 0.02);
  Dataset d;
  for (int k = 0; k < kernels; ++k) {
    const int n = 3 + static_cast<int>(rng() % 12);
    const double base = unit(rng);
    std::vector<int32_t> opcodes(n);
    std::vector<float> node_features(n * kNodeFeatures, 0.0f);
    std::vector<int32_t> src, dst;
    double work = 0, size_sum = 0;
    for (int i = 0; i < n; ++i) {
      opcodes[i] = 1 + static_cast<int32_t>(rng() % (kVocabulary - 1));
      const double size = std::clamp(base + 0.3 * (unit(rng) - 0.5), 0.0, 1.0);
      node_features[i * kNodeFeatures + 0] = static_cast<float>(size);
      node_features[i * kNodeFeatures + 1] = static_cast<float>(unit(rng));
      work += std::exp(3 * size) * kOpCost[opcodes[i]];
      size_sum += size;
      if (i > 0) {
        src.push_back(static_cast<int32_t>(rng() % i));
        dst.push_back(i);
      }
      if (i > 1 && rng() % 3 == 0) {
        src.push_back(static_cast<int32_t>(rng() % (i - 1)));
        dst.push_back(i);
      }
    }
    const double best = std::round(size_sum / n * (kTiles - 1));
    for (int t = 0; t < kTiles; ++t) {
      auto g = std::make_unique<KernelGraph>();
      g->opcodes = opcodes;
      g->node_features = node_features;
      g->edge_src = src;
      g->edge_dst = dst;
      g->kernel_features.assign(kKernelFeatures, 0.0f);
      g->kernel_features[0] = static_cast<float>(std::log(work));
      g->kernel_features[1] = static_cast<float>(n) / 14;
      g->kernel_features[2] = static_cast<float>(t) / (kTiles - 1);
      const double seconds =
          1e-6 * work * (1 + 0.3 * (t - best) * (t - best)) * std::exp(noise(rng));
      d.samples.push_back({g.get(), first_group + k, seconds});
      d.graphs.push_back(std::move(g));
    }
  }
  return d;
}

ModelOptions SmallOptions(Loss loss) {
  ModelOptions o;
  o.vocabulary_size = kVocabulary;
  o.embedding_dim = 8;
  o.hidden_dim = 32;
  o.sage_layers = 2;
  o.learning_rate = 3e-3;
  o.epochs = 80;
  o.batch_size = 32;
  o.loss = loss;
  o.seed = 7;
  return o;
}

std::vector<double> Exp(std::vector<double> v) {
  for (double& x : v) x = std::exp(x);
  return v;
}

// APE of picking a configuration uniformly at random: the mean over each group's samples.
double RandomPickApe(const Dataset& d) {
  double sum = 0;
  const int groups = static_cast<int>(d.samples.size()) / kTiles;
  for (int g = 0; g < groups; ++g) {
    double best = 1e300, mean = 0;
    for (int t = 0; t < kTiles; ++t) {
      best = std::min(best, d.samples[g * kTiles + t].seconds);
      mean += d.samples[g * kTiles + t].seconds / kTiles;
    }
    sum += mean / best - 1;
  }
  return sum / groups;
}

// The synthetic task at full size: 48 kernels x 8 tiles to train on, 16 other kernels to test on.
TEST(LearnedModel, LearnsRuntimesAndConfigurationOrderOfHeldOutKernels) {
  const Dataset train = MakeDataset(48, 1, 0);
  const Dataset test = MakeDataset(16, 2, 1000);
  absl::StatusOr<std::unique_ptr<LearnedModel>> model =
      LearnedModel::Create(SmallOptions(Loss::kBoth));
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<TrainReport> report = (*model)->Train(train.samples);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->epochs.size(), 80u);
  EXPECT_EQ(report->samples, 48 * kTiles);
  EXPECT_GT(report->rank_pairs, 48 * 20);  // 28 pairs per kernel, minus the rare noise ties
  EXPECT_LT(report->epochs.back().loss, 0.3 * report->epochs.front().loss);
  EXPECT_TRUE((*model)->trained());

  // Absolute head: log seconds, against the best constant in log space (the geometric mean).
  absl::StatusOr<std::vector<double>> log_seconds = (*model)->Predict(test.Graphs());
  ASSERT_TRUE(log_seconds.ok()) << log_seconds.status();
  const double mape = Mape(test.Seconds(), Exp(*log_seconds));
  double mean_log = 0;
  for (const Sample& s : train.samples) mean_log += std::log(s.seconds) / train.samples.size();
  const double constant_mape =
      Mape(test.Seconds(), std::vector<double>(test.samples.size(), std::exp(mean_log)));
  const double random_ape = RandomPickApe(test);
  std::cout << "held-out MAPE " << mape << " (constant " << constant_mape << "), random-pick APE "
            << random_ape << "\n";
  EXPECT_LT(mape, 0.35);
  EXPECT_LT(mape, constant_mape / 4);
  const RankMetrics by_runtime = EvaluateRanking(test.Groups(), test.Seconds(), *log_seconds);
  std::cout << "absolute head: APE mean " << by_runtime.ape_mean << " median "
            << by_runtime.ape_median << " Kendall tau " << by_runtime.kendall_tau << "\n";
  EXPECT_EQ(by_runtime.groups, 16);
  EXPECT_GT(by_runtime.kendall_tau, 0.75);
  EXPECT_LT(by_runtime.ape_mean, random_ape / 8);

  // Relative head: a head of its own, not the absolute one under another name.
  absl::StatusOr<std::vector<double>> scores = (*model)->Predict(test.Graphs(), Head::kRelative);
  ASSERT_TRUE(scores.ok()) << scores.status();
  EXPECT_NE(*scores, *log_seconds);
  const RankMetrics by_score = EvaluateRanking(test.Groups(), test.Seconds(), *scores);
  std::cout << "relative head: APE mean " << by_score.ape_mean << " median " << by_score.ape_median
            << " Kendall tau " << by_score.kendall_tau << "\n";
  EXPECT_GT(by_score.kendall_tau, 0.75);
  EXPECT_LT(by_score.ape_mean, random_ape / 8);
}

// A model trained briefly, for the tests of batching, checkpoints and input checks.
class LearnedModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    test_ = new Dataset(MakeDataset(16, 2, 1000));
    ModelOptions o = SmallOptions(Loss::kBoth);
    o.epochs = 3;
    absl::StatusOr<std::unique_ptr<LearnedModel>> m = LearnedModel::Create(o);
    ASSERT_TRUE(m.ok()) << m.status();
    absl::StatusOr<TrainReport> r = (*m)->Train(MakeDataset(12, 1, 0).samples);
    ASSERT_TRUE(r.ok()) << r.status();
    model_ = m->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete test_;
  }
  static Dataset* test_;
  static LearnedModel* model_;
};
Dataset* LearnedModelTest::test_ = nullptr;
LearnedModel* LearnedModelTest::model_ = nullptr;

TEST_F(LearnedModelTest, BatchedPredictionEqualsOneByOne) {
  // 128 graphs in chunks of batch_size (32), each chunk one disjoint graph.
  std::vector<const KernelGraph*> graphs = test_->Graphs();
  for (Head head : {Head::kAbsolute, Head::kRelative}) {
    absl::StatusOr<std::vector<double>> batched = model_->Predict(graphs, head);
    ASSERT_TRUE(batched.ok()) << batched.status();
    ASSERT_EQ(batched->size(), graphs.size());
    for (size_t i = 0; i < graphs.size(); ++i) {
      absl::StatusOr<std::vector<double>> one = model_->Predict({graphs[i]}, head);
      ASSERT_TRUE(one.ok()) << one.status();
      ASSERT_EQ(one->size(), 1u);
      EXPECT_NEAR((*batched)[i], (*one)[0], 1e-4 * (1 + std::abs((*one)[0]))) << "graph " << i;
    }
  }
  absl::StatusOr<std::vector<double>> none = model_->Predict({});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(LearnedModelTest, ConcurrentPredictionsAgree) {
  // The daemon scores candidates from several job threads with one shared model.
  const std::vector<double> expected = *model_->Predict(test_->Graphs());
  std::vector<std::vector<double>> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) results[t] = *model_->Predict(test_->Graphs());
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::vector<double>& r : results) EXPECT_EQ(r, expected);
}

TEST_F(LearnedModelTest, SaveLoadRoundTripsToIdenticalPredictions) {
  const std::string bytes = model_->Save();
  absl::StatusOr<std::unique_ptr<LearnedModel>> loaded = LearnedModel::Load(bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE((*loaded)->trained());
  EXPECT_EQ((*loaded)->options().hidden_dim, 32);
  EXPECT_EQ((*loaded)->options().sage_layers, 2);
  EXPECT_EQ((*loaded)->options().loss, Loss::kBoth);
  EXPECT_EQ((*loaded)->options().seed, 7u);
  for (Head head : {Head::kAbsolute, Head::kRelative}) {
    absl::StatusOr<std::vector<double>> a = model_->Predict(test_->Graphs(), head);
    absl::StatusOr<std::vector<double>> b = (*loaded)->Predict(test_->Graphs(), head);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b);  // same weights, same normalisation statistics, same arithmetic
  }
  EXPECT_EQ((*loaded)->Save(), bytes);
}

// Checkpoints from before an architecture option (the sum readout, the linear skip) have no key
// for it in their header: they load as the network they are, without it, and predict as they did.
// Claiming the option (`claimed`, the header's text for it, as long as `absent`'s) for such weights
// fails to load instead of predicting garbage.
void ExpectCheckpointWithoutKeyLoadsWithoutIt(const std::string& key,
                                              void (*disable)(ModelOptions&),
                                              bool (*enabled)(const ModelOptions&),
                                              const std::string& absent = "false",
                                              const std::string& claimed = "true ") {
  SCOPED_TRACE(key);
  Dataset data = MakeDataset(12, 3, 0);
  ModelOptions o = SmallOptions(Loss::kBoth);
  o.epochs = 3;
  disable(o);
  absl::StatusOr<std::unique_ptr<LearnedModel>> model = LearnedModel::Create(o);
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE((*model)->Train(data.samples).ok());
  const std::string bytes = (*model)->Save();
  // MLTUNE-COSTMODEL-1, the header's length, the header, the weights.
  const size_t length_at = bytes.find('\n') + 1;
  const size_t header_at = bytes.find('\n', length_at) + 1;
  const size_t weights_at = bytes.find('}') + 1;
  std::string header = bytes.substr(header_at, weights_at - header_at);
  const std::string entry = absl::StrCat("\"", key, "\":", absent, ",");
  ASSERT_NE(header.find(entry), std::string::npos) << header;
  header.erase(header.find(entry), entry.size());
  const std::string old = absl::StrCat(bytes.substr(0, length_at), header.size(), "\n", header,
                                       bytes.substr(weights_at));
  absl::StatusOr<std::unique_ptr<LearnedModel>> loaded = LearnedModel::Load(old);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(enabled((*loaded)->options()));
  absl::StatusOr<std::vector<double>> a = (*model)->Predict(data.Graphs());
  absl::StatusOr<std::vector<double>> b = (*loaded)->Predict(data.Graphs());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  std::string lying = bytes;
  const std::string claim = absl::StrCat("\"", key, "\":", absent);
  lying.replace(lying.find(claim), claim.size(), absl::StrCat("\"", key, "\":", claimed));
  EXPECT_FALSE(LearnedModel::Load(lying).ok());
}

TEST(LearnedModel, CheckpointsWithoutTheSumReadoutKeyLoadAsMeanMax) {
  ExpectCheckpointWithoutKeyLoadsWithoutIt(
      "sum_readout", [](ModelOptions& o) { o.sum_readout = false; },
      [](const ModelOptions& o) { return o.sum_readout; });
}

TEST(LearnedModel, CheckpointsWithoutTheLinearSkipKeyLoadWithoutIt) {
  ExpectCheckpointWithoutKeyLoadsWithoutIt(
      "linear_skip", [](ModelOptions& o) { o.linear_skip = false; },
      [](const ModelOptions& o) { return o.linear_skip; });
}

TEST(LearnedModel, CheckpointsWithoutTheNodeTimeSumKeyLoadWithoutIt) {
  ExpectCheckpointWithoutKeyLoadsWithoutIt(
      "node_time_sum", [](ModelOptions& o) { o.node_time_sum = false; },
      [](const ModelOptions& o) { return o.node_time_sum; });
}

TEST(LearnedModel, CheckpointsWithoutTheTransformerKeyLoadWithoutIt) {
  ExpectCheckpointWithoutKeyLoadsWithoutIt(
      "transformer_layers", [](ModelOptions& o) { o.transformer_layers = 0; },
      [](const ModelOptions& o) { return o.transformer_layers > 0; }, "0", "1");
}

// `graph` with its nodes in another order (node i moves to perm[i]), edges renumbered alike.
KernelGraph PermuteNodes(const KernelGraph& graph, const std::vector<int32_t>& perm) {
  KernelGraph p = graph;
  for (int32_t i = 0; i < graph.size(); ++i) {
    p.opcodes[perm[i]] = graph.opcodes[i];
    std::copy_n(graph.node_features.begin() + i * kNodeFeatures, kNodeFeatures,
                p.node_features.begin() + perm[i] * kNodeFeatures);
  }
  for (size_t e = 0; e < graph.edge_src.size(); ++e) {
    p.edge_src[e] = perm[graph.edge_src[e]];
    p.edge_dst[e] = perm[graph.edge_dst[e]];
  }
  return p;
}

// Transformer layers between GraphSAGE and the pooling: the model still learns the task, each
// kernel's attention stays inside its own nodes (batched = alone, padding masked), it is blind to
// the order nodes are listed in, as the rest of the network is, and checkpoints carry its weights.
TEST(LearnedModel, TransformerLayersLearnBatchAndRoundTrip) {
  const Dataset train = MakeDataset(48, 1, 0);
  const Dataset test = MakeDataset(16, 2, 1000);
  ModelOptions o = SmallOptions(Loss::kBoth);
  o.transformer_layers = 1;
  absl::StatusOr<std::unique_ptr<LearnedModel>> model = LearnedModel::Create(o);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE((*model)->Train(train.samples).ok());
  const std::vector<const KernelGraph*> graphs = test.Graphs();
  absl::StatusOr<std::vector<double>> batched = (*model)->Predict(graphs);
  ASSERT_TRUE(batched.ok()) << batched.status();
  const double mape = Mape(test.Seconds(), Exp(*batched));
  std::cout << "held-out MAPE with a transformer layer " << mape << "\n";
  EXPECT_LT(mape, 0.35);
  EXPECT_GT(EvaluateRanking(test.Groups(), test.Seconds(), *batched).kendall_tau, 0.75);

  std::mt19937_64 rng(5);
  for (size_t i = 0; i < graphs.size(); i += 7) {
    absl::StatusOr<std::vector<double>> one = (*model)->Predict({graphs[i]});
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_NEAR((*batched)[i], (*one)[0], 1e-4 * (1 + std::abs((*one)[0]))) << "graph " << i;
    std::vector<int32_t> perm(static_cast<size_t>(graphs[i]->size()));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const KernelGraph permuted = PermuteNodes(*graphs[i], perm);
    absl::StatusOr<std::vector<double>> shuffled = (*model)->Predict({&permuted});
    ASSERT_TRUE(shuffled.ok()) << shuffled.status();
    EXPECT_NEAR((*shuffled)[0], (*one)[0], 1e-4 * (1 + std::abs((*one)[0]))) << "graph " << i;
  }

  absl::StatusOr<std::unique_ptr<LearnedModel>> loaded = LearnedModel::Load((*model)->Save());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->options().transformer_layers, 1);
  EXPECT_EQ((*loaded)->options().attention_heads, 4);
  EXPECT_EQ(*(*loaded)->Predict(graphs), *batched);
}

// Chains of `min_nodes`-`max_nodes` elementwise-like ops whose time is a fixed overhead plus each
// op's own: its per-element cost (by opcode) times its elements (node feature 9, log2 of the
// count, as the real features have it). The kernel features are left empty, so the time has to
// come from the nodes, as a fused loop's does.
Dataset MakeAdditiveDataset(int kernels, int min_nodes, int max_nodes, uint64_t seed) {
  static constexpr double kNsPerElement[kVocabulary] = {0, 0.02, 0.1, 0.05, 0.4, 0.02, 0.2, 1.0};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> log2_elements(4, 16);
  Dataset d;
  for (int k = 0; k < kernels; ++k) {
    const int n = min_nodes + static_cast<int>(rng() % (max_nodes - min_nodes + 1));
    auto g = std::make_unique<KernelGraph>();
    g->node_features.assign(n * kNodeFeatures, 0.0f);
    g->kernel_features.assign(kKernelFeatures, 0.0f);
    double ns = 2;
    for (int i = 0; i < n; ++i) {
      const int32_t op = 1 + static_cast<int32_t>(rng() % (kVocabulary - 1));
      const double l = log2_elements(rng);
      g->opcodes.push_back(op);
      g->node_features[i * kNodeFeatures + 9] = static_cast<float>(l);
      ns += kNsPerElement[op] * std::exp2(l);
      if (i > 0) {
        g->edge_src.push_back(i - 1);
        g->edge_dst.push_back(i);
      }
    }
    d.samples.push_back({g.get(), k, ns * 1e-9});
    d.graphs.push_back(std::move(g));
  }
  return d;
}

// The absolute head's log-seconds predictions for `test` of a model with options `o` trained on
// `train` (empty where training or prediction fails, which the expectations report).
std::vector<double> TrainAndPredict(const ModelOptions& o, const Dataset& train,
                                    const Dataset& test) {
  std::unique_ptr<LearnedModel> m = *LearnedModel::Create(o);
  EXPECT_TRUE(m->Train(train.samples).ok());
  absl::StatusOr<std::vector<double>> p = m->Predict(test.Graphs());
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : std::vector<double>{};
}

// Trained on kernels of 1-4 ops, tested on kernels of 8-12: the per-node times add up to the
// longer kernels' times, where the pooled readout, fitted to short kernels only, is far off.
TEST(LearnedModel, NodeTimeSumExtrapolatesToLongerKernels) {
  const Dataset train = MakeAdditiveDataset(400, 1, 4, 21);
  const Dataset test = MakeAdditiveDataset(100, 8, 12, 22);
  auto test_mape = [&](bool node_time_sum) {
    ModelOptions o = SmallOptions(Loss::kMseLog);
    o.node_time_sum = node_time_sum;
    o.epochs = 60;
    const std::vector<double> p = TrainAndPredict(o, train, test);
    return p.size() == test.samples.size() ? Mape(test.Seconds(), Exp(p)) : 1e9;
  };
  const double pooled = test_mape(false);
  const double node_sum = test_mape(true);
  std::cout << "MAPE on 8-12 op kernels: pooled " << pooled << ", node-sum " << node_sum << "\n";
  EXPECT_LT(node_sum, 0.25);
  EXPECT_LT(node_sum, pooled / 2);
}

// Node times are summed per kernel over the padded batch layout: kernels of different sizes in
// one batch predict what each predicts alone, and a checkpoint reloads to the same predictions.
TEST(LearnedModel, NodeTimeSumBatchesAndRoundTrips) {
  const Dataset data = MakeAdditiveDataset(40, 1, 12, 23);
  ModelOptions o = SmallOptions(Loss::kMseLog);
  o.node_time_sum = true;
  o.epochs = 5;
  std::unique_ptr<LearnedModel> m = *LearnedModel::Create(o);
  ASSERT_TRUE(m->Train(data.samples).ok());
  const std::vector<const KernelGraph*> graphs = data.Graphs();
  absl::StatusOr<std::vector<double>> batched = m->Predict(graphs);
  ASSERT_TRUE(batched.ok()) << batched.status();
  for (size_t i = 0; i < graphs.size(); ++i) {
    absl::StatusOr<std::vector<double>> one = m->Predict({graphs[i]});
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_NEAR((*batched)[i], (*one)[0], 1e-4 * (1 + std::abs((*one)[0]))) << "graph " << i;
  }
  absl::StatusOr<std::unique_ptr<LearnedModel>> loaded = LearnedModel::Load(m->Save());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE((*loaded)->options().node_time_sum);
  EXPECT_EQ(*(*loaded)->Predict(graphs), *batched);
}

// The same features, runtimes scattered by wide log-normal noise the features cannot explain:
// MSE on logs predicts their geometric middle; the relative-error term moves the predictions
// down, where the mean relative error over the same kernels is lower.
TEST(LearnedModel, RelativeErrorWeightLowersTheMapeOfNoisyTimes) {
  Dataset data = MakeDataset(24, 31, 0);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 0.6);
  for (Sample& s : data.samples) s.seconds *= std::exp(noise(rng));
  auto fit = [&](double weight) {
    ModelOptions o = SmallOptions(Loss::kMseLog);
    o.relative_error_weight = weight;
    o.epochs = 40;
    return TrainAndPredict(o, data, data);
  };
  const std::vector<double> mse = fit(0), weighted = fit(2);
  ASSERT_EQ(mse.size(), data.samples.size());
  ASSERT_EQ(weighted.size(), data.samples.size());
  double mean_shift = 0;
  for (size_t i = 0; i < mse.size(); ++i) mean_shift += (weighted[i] - mse[i]) / mse.size();
  EXPECT_LT(mean_shift, -0.1);  // log seconds
  EXPECT_LT(Mape(data.Seconds(), Exp(weighted)), Mape(data.Seconds(), Exp(mse)));
  ModelOptions bad = SmallOptions(Loss::kMseLog);
  bad.relative_error_weight = -1;
  EXPECT_EQ(LearnedModel::Create(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(LearnedModelTest, LoadOfGarbageFailsCleanly) {
  const std::string bytes = model_->Save();
  const size_t weights_start = bytes.find("}") + 1;  // the JSON header ends at its only '}'
  std::string flipped_header = bytes;
  flipped_header[bytes.find('{')] = '#';  // the header is no longer JSON
  std::string garbage_weights = bytes.substr(0, weights_start) + std::string(4096, '\x5a');
  std::string zeroed_weights = bytes;
  std::fill(zeroed_weights.begin() + weights_start, zeroed_weights.end(), '\0');
  for (const std::string& bad :
       {std::string(), std::string("hello"), std::string(1000, '\xff'), bytes.substr(0, 10),
        bytes.substr(0, bytes.size() / 2), bytes.substr(0, weights_start), flipped_header,
        garbage_weights, zeroed_weights, std::string("MLTUNE-COSTMODEL-1\n999999999\n{}"),
        std::string("MLTUNE-COSTMODEL-1\n2\n{}")}) {
    absl::StatusOr<std::unique_ptr<LearnedModel>> loaded = LearnedModel::Load(bad);
    EXPECT_FALSE(loaded.ok()) << "accepted " << bad.size() << " bytes";
    if (!loaded.ok()) {
      EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST_F(LearnedModelTest, LoadRejectsWeightsOfAnotherShape) {
  // A header claiming a wider network than the weights that follow it.
  absl::StatusOr<std::unique_ptr<LearnedModel>> other =
      LearnedModel::Create(SmallOptions(Loss::kBoth));
  ASSERT_TRUE(other.ok());
  const std::string small = (*other)->Save();
  std::string header = small.substr(0, small.find("}") + 1);
  const size_t at = header.find("\"hidden_dim\":32");
  ASSERT_NE(at, std::string::npos);
  header.replace(at, 15, "\"hidden_dim\":16");
  absl::StatusOr<std::unique_ptr<LearnedModel>> loaded =
      LearnedModel::Load(header + small.substr(small.find("}") + 1));
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(LearnedModelTest, RejectsMalformedGraphs) {
  KernelGraph bad = *test_->graphs[0];
  bad.opcodes[0] = kVocabulary;
  absl::StatusOr<std::vector<double>> p = model_->Predict({test_->graphs[1].get(), &bad});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("graph 1"), std::string::npos) << p.status();
  EXPECT_FALSE(model_->Predict({nullptr}).ok());
}

// Features are append-only: graphs of a newer feature set (wider rows) score as their leading
// columns do, so a stored model keeps working after features are added.
TEST_F(LearnedModelTest, ReadsTheLeadingColumnsOfWiderGraphs) {
  std::vector<const KernelGraph*> graphs = test_->Graphs();
  std::vector<KernelGraph> wider;
  wider.reserve(graphs.size());
  for (const KernelGraph* g : graphs) {
    KernelGraph w = *g;
    w.node_features.clear();
    for (int32_t i = 0; i < g->size(); ++i) {
      auto row = g->node_features.begin() + i * kNodeFeatures;
      w.node_features.insert(w.node_features.end(), row, row + kNodeFeatures);
      w.node_features.insert(w.node_features.end(), {9.0f, -3.0f});  // new columns
    }
    w.kernel_features.push_back(42.0f);
    wider.push_back(std::move(w));
  }
  std::vector<const KernelGraph*> wider_ptrs;
  for (const KernelGraph& w : wider) wider_ptrs.push_back(&w);
  for (Head head : {Head::kAbsolute, Head::kRelative}) {
    absl::StatusOr<std::vector<double>> a = model_->Predict(graphs, head);
    absl::StatusOr<std::vector<double>> b = model_->Predict(wider_ptrs, head);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(*a, *b);
  }
  // Narrower rows, or node values that do not split into rows, are refused.
  KernelGraph ragged = *graphs[0];
  ragged.node_features.push_back(1.0f);
  EXPECT_EQ(model_->Predict({&ragged}).status().code(), absl::StatusCode::kInvalidArgument);
  KernelGraph narrow = *graphs[0];
  narrow.node_features.resize(static_cast<size_t>(narrow.size()) * (kNodeFeatures - 1));
  EXPECT_EQ(model_->Predict({&narrow}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LearnedModel, DeterministicForASeed) {
  Dataset data = MakeDataset(12, 3, 0);
  auto train = [&](uint64_t seed) {
    ModelOptions o = SmallOptions(Loss::kBoth);
    o.epochs = 5;
    o.dropout = 0.1;  // dropout masks come from the seed too
    o.seed = seed;
    std::unique_ptr<LearnedModel> m = *LearnedModel::Create(o);
    TrainReport r = *m->Train(data.samples);
    std::vector<double> p = *m->Predict(data.Graphs());
    return std::make_pair(r.epochs.back().loss, p);
  };
  auto [loss_a, pred_a] = train(11);
  auto [loss_b, pred_b] = train(11);
  auto [loss_c, pred_c] = train(12);
  EXPECT_EQ(loss_a, loss_b);
  EXPECT_EQ(pred_a, pred_b);
  EXPECT_NE(pred_a, pred_c);
}

TEST(LearnedModel, RankOnlyLossesTrainTheRelativeHeadOnly) {
  Dataset train = MakeDataset(24, 4, 0);
  Dataset test = MakeDataset(12, 5, 100);
  for (Loss loss : {Loss::kRankHinge, Loss::kRankLogistic}) {
    ModelOptions o = SmallOptions(loss);
    o.epochs = 80;  // the logistic loss needs more than 20 under reference BLAS (CI), the hinge 50+
                    // with 41 node features
    std::unique_ptr<LearnedModel> m = *LearnedModel::Create(o);
    EXPECT_FALSE(m->HasHead(Head::kAbsolute));
    EXPECT_TRUE(m->HasHead(Head::kRelative));
    absl::StatusOr<TrainReport> r = m->Train(train.samples);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->epochs.back().mse_loss, 0);
    EXPECT_GT(r->epochs.front().rank_loss, 0);
    EXPECT_LT(r->epochs.back().rank_loss, r->epochs.front().rank_loss);
    absl::StatusOr<std::vector<double>> scores = m->Predict(test.Graphs(), Head::kRelative);
    ASSERT_TRUE(scores.ok()) << scores.status();
    const RankMetrics metrics = EvaluateRanking(test.Groups(), test.Seconds(), *scores);
    std::cout << LossName(loss) << ": APE mean " << metrics.ape_mean << " median "
              << metrics.ape_median << " Kendall tau " << metrics.kendall_tau
              << " (random pick APE " << RandomPickApe(test) << ")\n";
    // Chance is tau 0 and the random-pick APE.
    EXPECT_GT(metrics.kendall_tau, 0.5) << LossName(loss);
    EXPECT_LT(metrics.ape_mean, RandomPickApe(test) / 4) << LossName(loss);
    absl::StatusOr<std::vector<double>> absolute = m->Predict(test.Graphs(), Head::kAbsolute);
    ASSERT_FALSE(absolute.ok());
    EXPECT_EQ(absolute.status().code(), absl::StatusCode::kFailedPrecondition);
  }
}

// The listwise rank term (ListNet against softmax(-log(seconds) / T)) learns the order of held-out
// kernels' configurations from the rank term alone and with MSE; its reported loss is a KL
// divergence (>= 0, falling); it needs a logistic rank term and survives a checkpoint.
TEST(LearnedModel, ListwiseRankTermLearnsTheTopConfigurations) {
  Dataset train = MakeDataset(24, 4, 0);
  Dataset test = MakeDataset(12, 5, 100);
  for (Loss loss : {Loss::kRankLogistic, Loss::kBoth}) {
    ModelOptions o = SmallOptions(loss);
    o.epochs = 50;
    o.listwise_temperature = 0.1;
    std::unique_ptr<LearnedModel> m = *LearnedModel::Create(o);
    absl::StatusOr<TrainReport> r = m->Train(train.samples);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GT(r->epochs.front().rank_loss, 0);
    EXPECT_LT(r->epochs.back().rank_loss, 0.5 * r->epochs.front().rank_loss);
    absl::StatusOr<std::vector<double>> scores = m->Predict(test.Graphs(), Head::kRelative);
    ASSERT_TRUE(scores.ok()) << scores.status();
    const RankMetrics metrics = EvaluateRanking(test.Groups(), test.Seconds(), *scores);
    std::cout << "listwise, " << LossName(loss) << ": APE mean " << metrics.ape_mean << " median "
              << metrics.ape_median << " Kendall tau " << metrics.kendall_tau
              << " (random pick APE " << RandomPickApe(test) << ")\n";
    EXPECT_GT(metrics.kendall_tau, 0.5) << LossName(loss);
    EXPECT_LT(metrics.ape_mean, RandomPickApe(test) / 4) << LossName(loss);

    absl::StatusOr<std::unique_ptr<LearnedModel>> loaded = LearnedModel::Load(m->Save());
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ((*loaded)->options().listwise_temperature, 0.1);
    EXPECT_EQ(*(*loaded)->Predict(test.Graphs(), Head::kRelative), *scores);
  }
  for (Loss loss : {Loss::kMseLog, Loss::kRankHinge}) {
    ModelOptions o = SmallOptions(loss);
    o.listwise_temperature = 0.1;
    EXPECT_EQ(LearnedModel::Create(o).status().code(), absl::StatusCode::kInvalidArgument)
        << LossName(loss);
  }
  ModelOptions o = SmallOptions(Loss::kBoth);
  o.listwise_temperature = -1;
  EXPECT_EQ(LearnedModel::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.listwise_temperature = 0.1;
  // both's rank term is then a hinge: nothing for the listwise term to replace.
  o.rank_hinge = true;
  EXPECT_EQ(LearnedModel::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LearnedModel, HasLogisticRankTermNamesTheLossesAListwiseTermCanReplace) {
  EXPECT_TRUE(HasLogisticRankTerm(Loss::kRankLogistic, false));
  EXPECT_TRUE(HasLogisticRankTerm(Loss::kBoth, false));
  EXPECT_FALSE(HasLogisticRankTerm(Loss::kBoth, true));
  EXPECT_FALSE(HasLogisticRankTerm(Loss::kRankHinge, false));
  EXPECT_FALSE(HasLogisticRankTerm(Loss::kMseLog, false));
}

TEST(LearnedModel, MseOnlyTrainsTheAbsoluteHeadOnly) {
  Dataset train = MakeDataset(16, 6, 0);
  ModelOptions o = SmallOptions(Loss::kMseLog);
  o.epochs = 10;
  std::unique_ptr<LearnedModel> m = *LearnedModel::Create(o);
  absl::StatusOr<TrainReport> r = m->Train(train.samples);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->epochs.back().rank_loss, 0);
  EXPECT_LT(r->epochs.back().mse_loss, r->epochs.front().mse_loss);
  EXPECT_TRUE(m->Predict(train.Graphs(), Head::kAbsolute).ok());
  EXPECT_EQ(m->Predict(train.Graphs(), Head::kRelative).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Pairs closer than min_pair_ratio are left out of the rank loss (and the report's count); a
// ratio below 1 is refused.
TEST(LearnedModel, MinPairRatioLeavesCloseRankPairsOut) {
  Dataset data = MakeDataset(8, 10, 0);
  auto pairs_beyond = [&](double ratio) {
    int64_t n = 0;
    for (const Sample& a : data.samples) {
      for (const Sample& b : data.samples) n += a.group == b.group && a.seconds * ratio < b.seconds;
    }
    return n;
  };
  ModelOptions o = SmallOptions(Loss::kBoth);
  o.epochs = 2;
  for (double ratio : {1.0, 1.2, 1e6}) {
    o.min_pair_ratio = ratio;
    std::unique_ptr<LearnedModel> m = *LearnedModel::Create(o);
    absl::StatusOr<TrainReport> r = m->Train(data.samples);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->rank_pairs, pairs_beyond(ratio)) << ratio;
    if (ratio == 1e6) {
      EXPECT_EQ(r->epochs.back().rank_loss, 0);  // nothing left to rank
    } else {
      EXPECT_GT(r->epochs.back().rank_loss, 0);
    }
  }
  EXPECT_LT(pairs_beyond(1.2), pairs_beyond(1.0));
  EXPECT_GT(pairs_beyond(1.2), 0);
  o.min_pair_ratio = 0.5;
  EXPECT_EQ(LearnedModel::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

// Sample::rank_weight scales a group's rank pairs: two copies of the same kernels with opposite
// configuration orders cannot both be learned, and the model follows the copy that weighs more.
TEST(LearnedModel, RankWeightDecidesBetweenConflictingGroups) {
  const Dataset a = MakeDataset(8, 11, 0);
  std::vector<Sample> reversed;
  for (const Sample& s : a.samples) reversed.push_back({s.graph, s.group + 100, 1e-6 / s.seconds});
  ModelOptions o = SmallOptions(Loss::kRankLogistic);
  o.epochs = 50;
  auto tau_on_a = [&](double weight_a, double weight_reversed) {
    std::vector<Sample> samples;
    for (Sample s : a.samples) samples.push_back((s.rank_weight = weight_a, s));
    for (Sample s : reversed) samples.push_back((s.rank_weight = weight_reversed, s));
    std::unique_ptr<LearnedModel> m = *LearnedModel::Create(o);
    EXPECT_TRUE(m->Train(samples).ok());
    absl::StatusOr<std::vector<double>> scores = m->Predict(a.Graphs(), Head::kRelative);
    EXPECT_TRUE(scores.ok()) << scores.status();
    return EvaluateRanking(a.Groups(), a.Seconds(), *scores).kendall_tau;
  };
  EXPECT_GT(tau_on_a(1, 1e-3), 0.5);
  EXPECT_LT(tau_on_a(1e-3, 1), -0.5);
}

// An ensemble's first member is trained exactly as a single network of the same seed; the
// ensemble predicts the members' mean, so it differs from that network, round-trips through its
// checkpoint, and a checkpoint claiming more members than it holds does not load.
TEST(LearnedModel, EnsembleAveragesMembersAndRoundTrips) {
  Dataset train = MakeDataset(16, 11, 0);
  Dataset test = MakeDataset(6, 12, 100);
  ModelOptions o = SmallOptions(Loss::kBoth);
  o.epochs = 6;
  std::unique_ptr<LearnedModel> single = *LearnedModel::Create(o);
  ASSERT_TRUE(single->Train(train.samples).ok());
  o.ensemble = 3;
  std::unique_ptr<LearnedModel> ensemble = *LearnedModel::Create(o);
  absl::StatusOr<TrainReport> r = ensemble->Train(train.samples);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->epochs.size(), 6u);  // one report per epoch, over all members
  for (Head head : {Head::kAbsolute, Head::kRelative}) {
    std::vector<double> a = *single->Predict(test.Graphs(), head);
    std::vector<double> b = *ensemble->Predict(test.Graphs(), head);
    ASSERT_EQ(a.size(), b.size());
    double differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ = std::max(differ, std::abs(a[i] - b[i]));
    EXPECT_GT(differ, 1e-4);
  }
  const std::string bytes = ensemble->Save();
  absl::StatusOr<std::unique_ptr<LearnedModel>> loaded = LearnedModel::Load(bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->options().ensemble, 3);
  EXPECT_EQ(*(*loaded)->Predict(test.Graphs()), *ensemble->Predict(test.Graphs()));
  std::string lying = bytes;
  lying.replace(lying.find("\"ensemble\":3"), 12, "\"ensemble\":4");
  absl::StatusOr<std::unique_ptr<LearnedModel>> missing = LearnedModel::Load(lying);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  // A one-member model keeps the checkpoint layout of before ensembles: its header without the
  // key loads the same weights.
  const std::string one = single->Save();
  const std::string key = "\"ensemble\":1,";
  ASSERT_NE(one.find(key), std::string::npos);
  std::string old = one;
  old.erase(old.find(key), key.size());
  const size_t length_at = old.find('\n') + 1;
  const size_t header_at = old.find('\n', length_at) + 1;
  const size_t header_size = std::stoul(old.substr(length_at, header_at - length_at - 1));
  old = absl::StrCat(old.substr(0, length_at), header_size - key.size(), old.substr(header_at - 1));
  absl::StatusOr<std::unique_ptr<LearnedModel>> old_loaded = LearnedModel::Load(old);
  ASSERT_TRUE(old_loaded.ok()) << old_loaded.status();
  EXPECT_EQ((*old_loaded)->options().ensemble, 1);
  EXPECT_EQ(*(*old_loaded)->Predict(test.Graphs()), *single->Predict(test.Graphs()));
}

// The spread Predict reports is the members' standard deviation: member m trains as a single
// network of seed + m, so three single networks give the same figure; one network has none.
TEST(LearnedModel, EnsembleSpreadIsTheMembersStandardDeviation) {
  Dataset train = MakeDataset(16, 11, 0);
  Dataset test = MakeDataset(6, 12, 100);
  ModelOptions o = SmallOptions(Loss::kMseLog);
  o.epochs = 4;
  std::vector<std::vector<double>> members;
  for (uint64_t m = 0; m < 3; ++m) {
    ModelOptions one = o;
    one.seed = o.seed + m;
    std::unique_ptr<LearnedModel> single = *LearnedModel::Create(one);
    ASSERT_TRUE(single->Train(train.samples).ok());
    std::vector<double> spread = {-1};
    members.push_back(*single->Predict(test.Graphs(), Head::kAbsolute, &spread));
    ASSERT_EQ(spread.size(), members.back().size());
    for (double s : spread) EXPECT_EQ(s, 0.0);
  }
  o.ensemble = 3;
  std::unique_ptr<LearnedModel> ensemble = *LearnedModel::Create(o);
  ASSERT_TRUE(ensemble->Train(train.samples).ok());
  std::vector<double> spread;
  const std::vector<double> mean = *ensemble->Predict(test.Graphs(), Head::kAbsolute, &spread);
  ASSERT_EQ(spread.size(), mean.size());
  double largest = 0;
  for (size_t i = 0; i < mean.size(); ++i) {
    const double m = (members[0][i] + members[1][i] + members[2][i]) / 3;
    double var = 0;
    for (const std::vector<double>& v : members) var += (v[i] - m) * (v[i] - m) / 3;
    EXPECT_NEAR(mean[i], m, 1e-4);
    EXPECT_NEAR(spread[i], std::sqrt(var), 1e-4);
    largest = std::max(largest, spread[i]);
  }
  EXPECT_GT(largest, 1e-3) << "members from different seeds should disagree somewhere";
  // The runtime points: the median is exp(mean); the relative-error point lowers it by the
  // variance model's floor + scale * spread^2, which the checkpoint carries.
  const std::vector<double> median =
      *ensemble->PredictSeconds(test.Graphs(), RuntimePoint::kMedian);
  ModelOptions calibrated = ensemble->options();
  calibrated.spread_floor = 0.1;
  calibrated.spread_scale = 3;
  std::string bytes = ensemble->Save();
  const std::string floor_key = "\"spread_floor\":0.0", scale_key = "\"spread_scale\":0.0";
  ASSERT_NE(bytes.find(floor_key), std::string::npos);
  ASSERT_NE(bytes.find(scale_key), std::string::npos);
  // Same-length edits keep the header's byte count.
  bytes.replace(bytes.find(floor_key), floor_key.size(), "\"spread_floor\":0.1");
  bytes.replace(bytes.find(scale_key), scale_key.size(), "\"spread_scale\":3.0");
  absl::StatusOr<std::unique_ptr<LearnedModel>> loaded = LearnedModel::Load(bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_DOUBLE_EQ((*loaded)->options().spread_floor, 0.1);
  EXPECT_DOUBLE_EQ((*loaded)->options().spread_scale, 3.0);
  const std::vector<double> point =
      *(*loaded)->PredictSeconds(test.Graphs(), RuntimePoint::kRelativeError);
  ASSERT_EQ(point.size(), mean.size());
  for (size_t i = 0; i < mean.size(); ++i) {
    EXPECT_NEAR(median[i], std::exp(mean[i]), 1e-9 * median[i]);
    EXPECT_NEAR(point[i], std::exp(mean[i] - 0.1 - 3 * spread[i] * spread[i]), 1e-9 * point[i]);
    EXPECT_LT(point[i], median[i]);
  }
  // Without a fit (older checkpoints) the two points agree.
  EXPECT_EQ(*ensemble->PredictSeconds(test.Graphs(), RuntimePoint::kRelativeError), median);
  calibrated.spread_scale = -1;
  EXPECT_FALSE(ValidateOptions(calibrated).ok());
}

TEST(LearnedModel, ProgressCallbackStopsTraining) {
  Dataset data = MakeDataset(4, 8, 0);
  std::unique_ptr<LearnedModel> m = *LearnedModel::Create(SmallOptions(Loss::kBoth));
  std::vector<int> seen;
  absl::StatusOr<TrainReport> r = m->Train(data.samples, [&](const EpochReport& e) {
    seen.push_back(e.epoch);
    return e.epoch < 2;
  });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
  EXPECT_EQ(r->epochs.size(), 2u);
  EXPECT_TRUE(r->stopped_early);
}

TEST(LearnedModel, RefusesBadInputWithAnError) {
  ModelOptions o = SmallOptions(Loss::kBoth);
  o.vocabulary_size = 0;
  EXPECT_EQ(LearnedModel::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = SmallOptions(Loss::kBoth);
  o.transformer_layers = 1;
  o.attention_heads = 5;  // 32 hidden units do not split into 5 heads
  EXPECT_EQ(LearnedModel::Create(o).status().code(), absl::StatusCode::kInvalidArgument);

  Dataset data = MakeDataset(2, 9, 0);
  std::unique_ptr<LearnedModel> m = *LearnedModel::Create(SmallOptions(Loss::kBoth));
  // Untrained: no normalisation statistics, so no predictions.
  EXPECT_EQ(m->Predict(data.Graphs()).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(m->trained());
  EXPECT_EQ(m->Train({}).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<Sample> bad = data.samples;
  bad[3].seconds = 0;
  EXPECT_EQ(m->Train(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad = data.samples;
  bad[1].seconds = std::nan("");
  EXPECT_EQ(m->Train(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad = data.samples;
  bad[2].graph = nullptr;
  EXPECT_EQ(m->Train(bad).status().code(), absl::StatusCode::kInvalidArgument);
  KernelGraph wrong = *data.graphs[0];
  wrong.kernel_features.pop_back();
  bad = data.samples;
  bad[0].graph = &wrong;
  EXPECT_EQ(m->Train(bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(m->trained());  // nothing was fitted by the failed calls
}

}  // namespace
}  // namespace mltune::costmodels::learned
