// IR throughput on real modules: parse, parse + verify, print, fingerprint, and evaluation of
// the bundled example. Counters report MB/s of HLO text and instructions/s.
//
//   build/release/bench/ir_bench [--benchmark_filter=...]
//
// The input is the largest module of ../shared/corpus/hlo (MLTUNE_CORPUS_DIR overrides); without
// the corpus it falls back to examples/mlp_train_step.hlo and says so.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ir/evaluator/evaluator.h"
#include "ir/ir.h"

namespace {

namespace fs = std::filesystem;
using mltune::ir::Module;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Input {
  std::string path;
  std::string text;
};

const Input& LargestModule() {
  static const Input input = [] {
    const char* env = std::getenv("MLTUNE_CORPUS_DIR");
    fs::path corpus = fs::path(env != nullptr ? env : MLTUNE_CORPUS_DIR) / "hlo";
    Input in;
    std::error_code ec;
    uintmax_t best = 0;
    if (fs::is_directory(corpus, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(corpus)) {
        if (e.is_regular_file() && e.file_size() > best) {
          best = e.file_size();
          in.path = e.path().string();
        }
      }
    }
    if (in.path.empty()) {
      in.path = (fs::path(MLTUNE_SOURCE_DIR) / "examples" / "mlp_train_step.hlo").string();
      std::cerr << "note: shared corpus not found; benchmarking the bundled example instead\n";
    }
    in.text = ReadAll(in.path);
    std::cerr << "input: " << in.path << " (" << in.text.size() << " bytes)\n";
    return in;
  }();
  return input;
}

std::unique_ptr<Module> ParseOrDie(const std::string& text) {
  auto m = mltune::ir::ParseHloText(text);
  if (!m.ok()) {
    std::cerr << m.status().message() << "\n";
    std::abort();
  }
  return *std::move(m);
}

void SetThroughput(benchmark::State& state, int64_t bytes, int64_t instructions) {
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["instructions/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * instructions), benchmark::Counter::kIsRate);
  state.counters["instructions"] = static_cast<double>(instructions);
}

void BM_Parse(benchmark::State& state) {
  const Input& in = LargestModule();
  int64_t n = 0;
  for (auto _ : state) {
    auto m = ParseOrDie(in.text);
    n = m->instruction_count();
    benchmark::DoNotOptimize(m);
  }
  SetThroughput(state, static_cast<int64_t>(in.text.size()), n);
}
BENCHMARK(BM_Parse)->Unit(benchmark::kMillisecond);

void BM_ParseAndVerify(benchmark::State& state) {
  const Input& in = LargestModule();
  int64_t n = 0;
  for (auto _ : state) {
    auto m = ParseOrDie(in.text);
    absl::Status s = mltune::ir::VerifyModule(*m);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
    n = m->instruction_count();
  }
  SetThroughput(state, static_cast<int64_t>(in.text.size()), n);
}
BENCHMARK(BM_ParseAndVerify)->Unit(benchmark::kMillisecond);

void BM_Print(benchmark::State& state) {
  auto m = ParseOrDie(LargestModule().text);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string text = mltune::ir::PrintModule(*m);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  SetThroughput(state, static_cast<int64_t>(bytes), m->instruction_count());
}
BENCHMARK(BM_Print)->Unit(benchmark::kMillisecond);

void BM_Fingerprint(benchmark::State& state) {
  auto m = ParseOrDie(LargestModule().text);
  for (auto _ : state) benchmark::DoNotOptimize(mltune::ir::Fingerprint(*m));
  SetThroughput(state, static_cast<int64_t>(LargestModule().text.size()), m->instruction_count());
}
BENCHMARK(BM_Fingerprint)->Unit(benchmark::kMillisecond);

void BM_EvaluateExample(benchmark::State& state) {
  auto m = ParseOrDie(ReadAll(fs::path(MLTUNE_SOURCE_DIR) / "examples" / "mlp_train_step.hlo"));
  auto args = mltune::ir::MakeRandomArguments(*m, 1);
  for (auto _ : state) {
    auto r = mltune::ir::Evaluate(*m, *args);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(r);
  }
  state.counters["instructions"] = static_cast<double>(m->instruction_count());
}
BENCHMARK(BM_EvaluateExample)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
