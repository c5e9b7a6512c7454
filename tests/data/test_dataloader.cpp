// The data loader: batches in sampler order on the caller's thread and with prefetching
// worker threads (ordered and unordered), drop_last, epochs, worker errors, bad options.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/testing.h"
#include "ember/data.h"
#include "ember/ember.h"

namespace ember::data {
namespace {

using testutil::element;

// Example i: data [i, 10 i], target i. Records which threads read it; index `fail_at` throws.
struct Recorded : datasets::Dataset<Recorded> {
  explicit Recorded(size_t n, size_t fail_at = SIZE_MAX) : n(n), fail_at(fail_at) {}
  Example<> get(size_t index) override {
    {
      std::lock_guard<std::mutex> lock(log->mutex);
      log->threads.insert(std::this_thread::get_id());
    }
    EMBER_CHECK(index != fail_at, "Recorded", "cannot read example ", index);
    const double value = static_cast<double>(index);
    return {tensor({value, 10 * value}, kFloat64), tensor(static_cast<int64_t>(index))};
  }
  std::optional<size_t> size() const override { return n; }

  struct Log {
    std::mutex mutex;
    std::set<std::thread::id> threads;
  };
  size_t n, fail_at;
  std::shared_ptr<Log> log = std::make_shared<Log>();  // shared by the workers' copies
};

// The targets of each batch, checking that its data rows belong to them.
template <typename Loader>
std::vector<std::vector<int64_t>> batch_targets(Loader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) {
    std::vector<int64_t> targets;
    for (int64_t i = 0; i < batch.target.size(0); ++i) {
      const int64_t t = static_cast<int64_t>(element(batch.target, i));
      EXPECT_EQ(element(batch.data, 2 * i), t);
      EXPECT_EQ(element(batch.data, 2 * i + 1), 10 * t);
      targets.push_back(t);
    }
    out.push_back(targets);
  }
  return out;
}

using Targets = std::vector<std::vector<int64_t>>;

TEST(DataLoader, SequentialBatchesOnTheCallersThread) {
  Recorded dataset(5);
  auto log = dataset.log;
  auto loader = make_data_loader<samplers::SequentialSampler>(dataset.map(transforms::Stack<>()), 2);
  EXPECT_EQ(batch_targets(*loader), (Targets{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(batch_targets(*loader), (Targets{{0, 1}, {2, 3}, {4}}));  // a second epoch
  EXPECT_EQ(log->threads, std::set<std::thread::id>{std::this_thread::get_id()});

  auto dropping = make_data_loader<samplers::SequentialSampler>(Recorded(5).map(transforms::Stack<>()),
                                                                DataLoaderOptions(2).drop_last(true));
  EXPECT_EQ(batch_targets(*dropping), (Targets{{0, 1}, {2, 3}}));
  EXPECT_EQ(dropping->options().batch_size, 2u);
  EXPECT_EQ(dropping->options().max_jobs, 0u);
}

TEST(DataLoader, WorkersPrefetchInSamplerOrder) {
  Recorded dataset(23);
  auto log = dataset.log;
  auto loader = make_data_loader<samplers::SequentialSampler>(dataset.map(transforms::Stack<>()),
                                                              DataLoaderOptions(4).workers(3));
  EXPECT_EQ(loader->options().max_jobs, 6u);
  Targets expected;
  for (int64_t start = 0; start < 23; start += 4) {
    std::vector<int64_t> batch;
    for (int64_t i = start; i < std::min<int64_t>(start + 4, 23); ++i) batch.push_back(i);
    expected.push_back(batch);
  }
  for (int epoch = 0; epoch < 3; ++epoch) EXPECT_EQ(batch_targets(*loader), expected);
  EXPECT_EQ(log->threads.count(std::this_thread::get_id()), 0u);  // only workers read
  EXPECT_GE(log->threads.size(), 1u);
}

TEST(DataLoader, UnorderedWorkersDeliverEveryBatchOnce) {
  auto loader = make_data_loader<samplers::SequentialSampler>(
      Recorded(20).map(transforms::Stack<>()), DataLoaderOptions(3).workers(4).enforce_ordering(false).max_jobs(2));
  Targets batches = batch_targets(*loader);
  std::sort(batches.begin(), batches.end());
  Targets expected;
  for (int64_t start = 0; start < 20; start += 3) {
    std::vector<int64_t> batch;
    for (int64_t i = start; i < std::min<int64_t>(start + 3, 20); ++i) batch.push_back(i);
    expected.push_back(batch);
  }
  EXPECT_EQ(batches, expected);
}

TEST(DataLoader, DefaultRandomSamplerIsSeededByManualSeed) {
  // The sampler draws a permutation when built and, as in libtorch, another when begin()
  // resets it for the epoch: the epoch reads the second.
  manual_seed(3);
  randperm(9);
  Tensor order = randperm(9);
  manual_seed(3);
  auto loader = make_data_loader(Recorded(9).map(transforms::Stack<>()), DataLoaderOptions(4).workers(2));
  Targets batches = batch_targets(*loader);
  ASSERT_EQ(batches.size(), 3u);
  std::vector<int64_t> seen;
  for (const auto& b : batches) seen.insert(seen.end(), b.begin(), b.end());
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], order[i].item<int64_t>());
}

TEST(DataLoader, DistributedSamplerThroughTheLoader) {
  auto loader = make_data_loader(Recorded(5).map(transforms::Stack<>()), samplers::DistributedSequentialSampler(5, 2, 1),
                                 DataLoaderOptions(2));
  EXPECT_EQ(batch_targets(*loader), (Targets{{3, 4}, {0}}));
}

TEST(DataLoader, ErrorsReachTheCaller) {
  for (size_t workers : {0u, 2u}) {
    auto loader = make_data_loader<samplers::SequentialSampler>(Recorded(8, /*fail_at=*/5).map(transforms::Stack<>()),
                                                                DataLoaderOptions(2).workers(workers));
    try {
      for (auto& batch : *loader) (void)batch;
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("[Recorded] cannot read example 5"), std::string::npos) << message;
      if (workers > 0) {
        EXPECT_NE(message.find("Caught exception in DataLoader worker thread. Original message: "), std::string::npos) << message;
      }
    }
  }
  try {
    make_data_loader(Recorded(4), DataLoaderOptions(0));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[DataLoader] batch_size must be positive, got 0"), std::string::npos);
  }
  EXPECT_THROW(make_data_loader(Recorded(4), DataLoaderOptions(1).workers(1).max_jobs(0)), Error);
}

TEST(DataLoader, IteratorsStopAtTheEnd) {
  auto loader = make_data_loader<samplers::SequentialSampler>(Recorded(2).map(transforms::Stack<>()), 2);
  auto it = loader->begin();
  ASSERT_TRUE(it != loader->end());
  EXPECT_EQ(it->target.size(0), 2);
  ++it;
  EXPECT_TRUE(it == loader->end());
  EXPECT_THROW(*it, Error);
  EXPECT_THROW(++it, Error);
  EXPECT_THROW(*loader->end(), Error);
}

// Sleeps before each example, longer than the loader waits.
struct Slow : datasets::Dataset<Slow> {
  Example<> get(size_t index) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return {zeros({1}), tensor(static_cast<int64_t>(index))};
  }
  std::optional<size_t> size() const override { return 2; }
};

TEST(DataLoader, TimeoutIsAnError) {
  auto loader = make_data_loader<samplers::SequentialSampler>(
      Slow().map(transforms::Stack<>()), DataLoaderOptions(1).workers(1).timeout(std::chrono::milliseconds(5)));
  try {
    for (auto& batch : *loader) (void)batch;
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Timeout in DataLoader queue while waiting for next batch (timeout was 5 ms)"),
              std::string::npos);
  }
}

TEST(DataLoader, MnistLikePipeline) {
  // Normalize then Stack, as in PyTorch's MNIST example.
  datasets::TensorDataset images(arange(12, kFloat32).view({3, 1, 2, 2}));
  auto dataset = images.map(transforms::Lambda<TensorExample, Example<>>([](TensorExample e) {
                           return Example<>(e.data, e.data.sum().to(kInt64));
                         }))
                     .map(transforms::Normalize<>(0.5, 0.25))
                     .map(transforms::Stack<>());
  auto loader = make_data_loader<samplers::SequentialSampler>(std::move(dataset), DataLoaderOptions(3).workers(1));
  int batches = 0;
  for (auto& batch : *loader) {
    ++batches;
    ASSERT_EQ(batch.data.sizes(), (std::vector<int64_t>{3, 1, 2, 2}));
    for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(element(batch.data, i), (i - 0.5f) / 0.25f);
    EXPECT_EQ(element(batch.target, 2), 8 + 9 + 10 + 11);
  }
  EXPECT_EQ(batches, 1);
}

}  // namespace
}  // namespace ember::data
