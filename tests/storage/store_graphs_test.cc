// The graph store on both backends (a SQLite file and a database on a throwaway PostgreSQL server,
// skipped where none can start): a graph is stored once per hash, in pieces, read back byte for
// byte; a repeat stores nothing and does not read its source; a failing source or a bad hash
// writes nothing; two stores putting one graph at once store it once.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "storage/store.h"
#include "tests/storage/store_backends.h"

namespace mltune::storage {
namespace {

constexpr char kHashA[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
constexpr char kHashB[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// Every byte value, past one piece's length, so the graph spans three pieces.
std::string BinaryGraph() {
  std::string bytes(static_cast<size_t>(2 * kGraphPieceBytes + 12345), '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  return bytes;
}

using StoreGraphsTest = StoreBackendsTest;

TEST_P(StoreGraphsTest, AGraphIsStoredOnceAndReadBackByteForByte) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->GraphSize(kHashA), std::nullopt);
  EXPECT_EQ(*store->GetGraph(kHashA), std::nullopt);

  const std::string graph = BinaryGraph();
  absl::StatusOr<bool> put = store->PutGraph(kHashA, graph);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_TRUE(*put);
  EXPECT_EQ(*store->GraphSize(kHashA), static_cast<int64_t>(graph.size()));
  absl::StatusOr<std::optional<std::string>> got = store->GetGraph(kHashA);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->has_value());
  EXPECT_TRUE(**got == graph) << "the stored bytes differ";

  // A repeat stores nothing and does not even read its source.
  int reads = 0;
  absl::StatusOr<bool> again = store->PutGraph(kHashA, [&]() -> absl::StatusOr<std::string> {
    ++reads;
    return std::string("other");
  });
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(*again);
  EXPECT_EQ(reads, 0);
  ASSERT_TRUE(store->PutGraph(kHashB, "HloModule m").ok());
  GraphTotals totals = *store->CountGraphs();
  EXPECT_EQ(totals.graphs, 2);
  EXPECT_EQ(totals.bytes, static_cast<int64_t>(graph.size() + 11));

  // Another connection (another daemon on the store) reads the same bytes.
  std::unique_ptr<Store> other = MustOpen();
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(**other->GetGraph(kHashB), "HloModule m");
}

TEST_P(StoreGraphsTest, BadHashesEmptyGraphsAndFailingSourcesWriteNothing) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  for (const std::string& bad :
       {std::string(""), std::string(64, 'A'), std::string(63, 'a'), std::string(64, 'g')}) {
    absl::StatusOr<bool> put = store->PutGraph(bad, "bytes");
    EXPECT_EQ(put.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(store->GetGraph(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  absl::StatusOr<bool> empty = store->PutGraph(kHashA, "");
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument) << empty.status();

  // A source that fails after one piece: the piece is not kept, and the hash stays free.
  int pieces = 0;
  absl::StatusOr<bool> failed = store->PutGraph(kHashA, [&]() -> absl::StatusOr<std::string> {
    if (pieces++ == 0) return std::string("first piece");
    return absl::DataLossError("the upload broke off");
  });
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kDataLoss) << failed.status();
  EXPECT_EQ(*store->GraphSize(kHashA), std::nullopt);
  EXPECT_EQ(store->CountGraphs()->graphs, 0);
  absl::StatusOr<bool> later = store->PutGraph(kHashA, "the real graph");
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_TRUE(*later);
  EXPECT_EQ(**store->GetGraph(kHashA), "the real graph");
}

// Clients uploading the same model to two daemons on one store at once: it is stored once.
TEST_P(StoreGraphsTest, TwoStoresPuttingOneGraphAtOnceStoreItOnce) {
  std::unique_ptr<Store> a = MustOpen();
  std::unique_ptr<Store> b = MustOpen();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const std::string graph = BinaryGraph();
  constexpr int kThreads = 4;
  std::barrier start(kThreads);
  std::atomic<int> inserted = 0;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Store& store = t % 2 == 0 ? *a : *b;
      start.arrive_and_wait();
      absl::StatusOr<bool> put = store.PutGraph(kHashA, graph);
      if (!put.ok()) {
        errors[t] = put.status().ToString();
      } else if (*put) {
        ++inserted;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(inserted, 1);
  EXPECT_EQ(a->CountGraphs()->graphs, 1);
  EXPECT_TRUE(**b->GetGraph(kHashA) == graph);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreGraphsTest, kStoreBackends,
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace mltune::storage
