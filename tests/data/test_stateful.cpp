// Stateful datasets and their loader, ChunkDataset, the loader's queue, shuttle and sequencers,
// the stream sampler and samplers saved to and loaded from archives. Expected batches are
// derived by hand from the small datasets below.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ember/data.h"
#include "ember/ember.h"
#include "test_support.h"

namespace ember::data {
namespace {

using testutil::throws_error;

// Yields the batches {0..k-1}, {k..2k-1}, ... of `total` counts, then nullopt.
struct CountingDataset : datasets::StatefulDataset<CountingDataset, std::vector<int>, size_t> {
  explicit CountingDataset(int total) : total(total) {}
  std::optional<std::vector<int>> get_batch(size_t batch_size) override {
    std::lock_guard<std::mutex> lock(*mutex);
    if (counter >= total) return std::nullopt;
    std::vector<int> batch;
    for (size_t i = 0; i < batch_size && counter < total; ++i) batch.push_back(counter++);
    return batch;
  }
  std::optional<size_t> size() const override { return static_cast<size_t>(total); }
  void reset() override { counter = 0; }
  void save(serialize::OutputArchive& archive) const override {
    archive.write("counter", ember::tensor(static_cast<int64_t>(counter)));
  }
  void load(serialize::InputArchive& archive) override {
    Tensor value;
    archive.read("counter", value);
    counter = static_cast<int>(value.item<int64_t>());
  }
  int total;
  int counter = 0;
  std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();  // copies share it
};

TEST(StatefulDataLoader, RunsUntilTheDatasetIsExhaustedEveryEpoch) {
  auto loader = make_data_loader(datasets::make_shared_dataset<CountingDataset>(7), DataLoaderOptions(3));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::vector<int>> batches;
    for (auto& batch : *loader) batches.push_back(batch);
    EXPECT_EQ(batches, (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}, {6}})) << "epoch " << epoch;
  }
}

TEST(StatefulDataLoader, WorkersShareTheOneDataset) {
  auto loader =
      make_data_loader(datasets::make_shared_dataset<CountingDataset>(20), DataLoaderOptions(4).workers(3));
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int> seen;
    for (auto& batch : *loader) seen.insert(seen.end(), batch.begin(), batch.end());
    std::sort(seen.begin(), seen.end());
    std::vector<int> expected(20);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(seen, expected) << "epoch " << epoch;
  }
}

TEST(StatefulDataLoader, MapKeepsNulloptAtTheEnd) {
  auto mapped = CountingDataset(5).map(transforms::BatchLambda<std::vector<int>, int>(
      [](std::vector<int> batch) { return std::accumulate(batch.begin(), batch.end(), 0); }));
  static_assert(decltype(mapped)::is_stateful);
  EXPECT_EQ(mapped.get_batch(2), std::optional<int>(1));   // 0 + 1
  EXPECT_EQ(mapped.get_batch(2), std::optional<int>(5));   // 2 + 3
  EXPECT_EQ(mapped.get_batch(2), std::optional<int>(4));   // 4
  EXPECT_EQ(mapped.get_batch(2), std::nullopt);
  mapped.reset();
  EXPECT_EQ(mapped.get_batch(5), std::optional<int>(10));  // 0 + 1 + 2 + 3 + 4
}

TEST(StatefulDataset, SavesAndLoadsThroughAnArchive) {
  CountingDataset a(10);
  a.get_batch(4);
  std::stringstream stream;
  ember::save(a, stream);
  CountingDataset b(10);
  ember::load(b, stream);
  EXPECT_EQ(b.counter, 4);
  EXPECT_EQ(b.get_batch(2), (std::optional<std::vector<int>>{{4, 5}}));
}

// Chunk c holds the `sizes[c]` numbers after those of the chunks before it.
struct RangeReader : datasets::ChunkDataReader<int> {
  explicit RangeReader(std::vector<size_t> sizes) : sizes(std::move(sizes)) {}
  ChunkType read_chunk(size_t chunk_index) override {
    const size_t start = std::accumulate(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(chunk_index),
                                         size_t{0});
    ChunkType chunk(sizes.at(chunk_index));
    std::iota(chunk.begin(), chunk.end(), static_cast<int>(start));
    return chunk;
  }
  size_t chunk_count() override { return sizes.size(); }
  void reset() override {}
  std::vector<size_t> sizes;
};

using SequentialChunks = datasets::ChunkDataset<RangeReader, samplers::SequentialSampler, samplers::SequentialSampler>;

TEST(ChunkDataset, OnePreloaderYieldsChunksInOrderAcrossChunkBoundaries) {
  auto dataset = datasets::make_shared_dataset<SequentialChunks>(
      RangeReader({4, 2, 5}), samplers::SequentialSampler(0), samplers::SequentialSampler(0),
      datasets::ChunkDatasetOptions(/*preloader_count=*/1, /*batch_size=*/3));
  auto loader = make_data_loader(dataset, DataLoaderOptions(3));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::vector<int>> batches;
    for (auto& batch : *loader) batches.push_back(batch);
    // The last batch of chunk 0 is topped up from chunk 1, and so on; 11 = 3 + 3 + 3 + 2.
    EXPECT_EQ(batches, (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 10}})) << epoch;
  }
  EXPECT_EQ(dataset->chunk_sampler().index(), 3u);
}

TEST(ChunkDataset, ManyPreloadersAndWorkersSeeEveryExampleOnce) {
  auto dataset = datasets::make_shared_dataset<SequentialChunks>(
      RangeReader({10, 5, 20, 1}), samplers::SequentialSampler(0), samplers::SequentialSampler(0),
      datasets::ChunkDatasetOptions(3, 4, /*cache_size=*/8));
  auto loader = make_data_loader(dataset, DataLoaderOptions(4).workers(2));
  std::multiset<int> seen;
  for (auto& batch : *loader) seen.insert(batch.begin(), batch.end());
  std::multiset<int> expected;
  for (int i = 0; i < 36; ++i) expected.insert(i);
  EXPECT_EQ(seen, expected);
}

TEST(ChunkDataset, CrossChunkShuffleReadsChunksTogetherAndPolicyRunsOnThem) {
  // Two chunks at a time, reversed by the policy: {0..3} + {4, 5} -> 5 4 3 2 1 0, then {6, 7}.
  auto dataset = datasets::make_shared_dataset<SequentialChunks>(
      RangeReader({4, 2, 2}), samplers::SequentialSampler(0), samplers::SequentialSampler(0),
      datasets::ChunkDatasetOptions(1, 4, 16, /*cross_chunk_shuffle_count=*/2),
      [](std::vector<int>& data) { std::reverse(data.begin(), data.end()); });
  auto loader = make_data_loader(dataset, DataLoaderOptions(4));
  std::vector<int> order;
  for (auto& batch : *loader) order.insert(order.end(), batch.begin(), batch.end());
  EXPECT_EQ(order, (std::vector<int>{5, 4, 3, 2, 1, 0, 7, 6}));
}

TEST(ChunkDataset, LoadResumesAtTheSavedChunk) {
  samplers::SequentialSampler chunk_sampler(3);
  chunk_sampler.next(2);  // chunks 0 and 1 were read
  auto tempfile = ember::make_tempfile();
  ember::save(chunk_sampler, tempfile.name);
  // As libtorch's SequentialSampler, load restores the position only: the size is the reader's.
  auto dataset = datasets::make_shared_dataset<SequentialChunks>(
      RangeReader({2, 2, 3}), samplers::SequentialSampler(3), samplers::SequentialSampler(0),
      datasets::ChunkDatasetOptions(1, 3));
  ember::load(*dataset, tempfile.name);
  auto loader = make_data_loader(dataset, DataLoaderOptions(3));
  std::vector<int> first_epoch, second_epoch;
  for (auto& batch : *loader) first_epoch.insert(first_epoch.end(), batch.begin(), batch.end());
  for (auto& batch : *loader) second_epoch.insert(second_epoch.end(), batch.begin(), batch.end());
  EXPECT_EQ(first_epoch, (std::vector<int>{4, 5, 6}));  // chunk 2 only
  EXPECT_EQ(second_epoch, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(ChunkDataset, ChecksItsOptionsAndTheBatchSize) {
  EXPECT_TRUE(throws_error([] { datasets::ChunkDatasetOptions(0, 1); }, {"Preloader count is 0"}));
  EXPECT_TRUE(throws_error([] { datasets::ChunkDatasetOptions(1, 0); }, {"Batch size is 0"}));
  EXPECT_TRUE(throws_error([] { datasets::ChunkDatasetOptions(1, 4, 2); }, {"Cache size is less than batch size"}));
  EXPECT_TRUE(throws_error([] { datasets::ChunkDatasetOptions(1, 4, 8, 0); }, {"cross_chunk_shuffle_count"}));
  SequentialChunks dataset(RangeReader({2}), samplers::SequentialSampler(0), samplers::SequentialSampler(0),
                           datasets::ChunkDatasetOptions(1, 2));
  EXPECT_TRUE(throws_error([&] { dataset.get_batch(2); }, {"needs to call reset()"}));
  dataset.reset();
  EXPECT_TRUE(throws_error([&] { dataset.get_batch(3); }, {"requested batch size is 3", "equal to 2"}));
}

TEST(StreamSampler, GivesBatchSizesUpToTheEpochSize) {
  samplers::StreamSampler sampler(10);
  EXPECT_EQ(sampler.next(4).value().size(), 4u);
  EXPECT_EQ(static_cast<size_t>(sampler.next(4).value()), 4u);
  EXPECT_EQ(sampler.next(4).value().size(), 2u);
  EXPECT_FALSE(sampler.next(4).has_value());
  sampler.reset(3);
  EXPECT_EQ(sampler.next(4).value().size(), 3u);
}

// Saves `from` to a stream and loads it into `to`.
template <typename S>
void round_trip(const S& from, S& to) {
  std::stringstream stream;
  ember::save(from, stream);
  ember::load(to, stream);
}

TEST(SamplerArchive, SamplersResumeWhereTheyWereSaved) {
  samplers::SequentialSampler sequential(10), sequential_back(10);
  sequential.next(3);
  round_trip(sequential, sequential_back);
  EXPECT_EQ(sequential_back.index(), 3u);
  EXPECT_EQ(sequential_back.next(2), (std::optional<std::vector<size_t>>{{3, 4}}));

  samplers::RandomSampler random(10), random_back(10);
  random.next(4);
  round_trip(random, random_back);
  EXPECT_EQ(random_back.index(), 4u);
  EXPECT_EQ(random_back.next(6), random.next(6));  // the same permutation's rest

  samplers::DistributedRandomSampler distributed(10, 2, 1), distributed_back(10, 2, 1);
  distributed.set_epoch(5);
  distributed.reset();
  distributed.next(2);
  round_trip(distributed, distributed_back);
  EXPECT_EQ(distributed_back.epoch(), 5u);
  EXPECT_EQ(distributed_back.next(3), distributed.next(3));
}

TEST(LoaderInternals, QueueShuttleAndSequencers) {
  detail::Queue<int> queue;
  queue.push(1);
  queue.push(2);
  EXPECT_EQ(queue.pop(), 1);
  EXPECT_EQ(queue.clear(), 1u);
  EXPECT_TRUE(throws_error([&] { queue.pop(std::chrono::milliseconds(1)); }, {"Timeout", "(timeout was 1 ms)"}));

  detail::DataShuttle<int, int> shuttle;
  EXPECT_FALSE(shuttle.pop_result().has_value());
  shuttle.push_job(7);
  EXPECT_EQ(shuttle.pop_job(), 7);
  shuttle.push_result(70);
  EXPECT_EQ(shuttle.in_flight_jobs(), 1u);
  EXPECT_EQ(shuttle.pop_result(), std::optional<int>(70));
  shuttle.push_job(8);
  shuttle.drain();  // the job was never taken
  EXPECT_EQ(shuttle.in_flight_jobs(), 0u);

  struct R {
    size_t sequence_number;
  };
  detail::sequencers::OrderedSequencer<R> ordered(3);
  std::vector<size_t> arrival = {1, 2, 0};
  size_t next = 0;
  auto producer = [&]() -> std::optional<R> {
    if (next == arrival.size()) return std::nullopt;
    return R{arrival[next++]};
  };
  for (size_t expected = 0; expected < 3; ++expected) EXPECT_EQ(ordered.next(producer)->sequence_number, expected);
  EXPECT_FALSE(ordered.next(producer).has_value());
}

TEST(WorkerException, CarriesLibtorchsMessage) {
  struct Failing : datasets::Dataset<Failing, int> {
    int get(size_t) override { throw Error("badness"); }
    std::optional<size_t> size() const override { return 4; }
  };
  auto loader = make_data_loader(Failing(), DataLoaderOptions(2).workers(1));
  try {
    for (auto& batch : *loader) (void)batch;
    FAIL() << "expected a WorkerException";
  } catch (const WorkerException& e) {
    EXPECT_EQ(std::string(e.what()), "Caught exception in DataLoader worker thread. Original message: badness");
  }
}

}  // namespace
}  // namespace ember::data
