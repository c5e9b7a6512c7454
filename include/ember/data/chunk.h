// ChunkDataset, as torch::data::datasets::ChunkDataset: a stateful dataset over data stored in
// chunks (files, shards). A ChunkDataReader reads whole chunks; the chunk sampler picks which
// chunk comes next, preloader threads read chunks ahead into a bounded cache, and the example
// sampler orders the examples of each loaded chunk into batches.
//
//   auto dataset = data::datasets::make_shared_dataset<data::datasets::ChunkDataset<MyReader>>(
//       reader, data::samplers::RandomSampler(0), data::samplers::RandomSampler(0),
//       data::datasets::ChunkDatasetOptions(/*preloader_count=*/2, /*batch_size=*/32));
//   auto loader = data::make_data_loader(dataset, data::DataLoaderOptions(32));
//
// With cross_chunk_shuffle_count n > 1, n chunks are read together and their examples
// shuffled as one. save/load write and read the chunk sampler's position, so a loaded dataset
// resumes at the chunk after the last one read.
#pragma once
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "ember/arg.h"
#include "ember/data/dataloader.h"
#include "ember/data/datasets.h"
#include "ember/data/samplers.h"
#include "ember/error.h"
#include "ember/io/archive.h"

namespace ember::data::datasets {

// Reads whole chunks; a chunk is a vector of examples unless ChunkType says otherwise.
template <typename ExampleType_, typename ChunkType_ = std::vector<ExampleType_>>
class ChunkDataReader {
 public:
  using ChunkType = ChunkType_;
  using ExampleType = ExampleType_;
  // What ChunkDataset's batches are (libtorch's readers declare it themselves).
  using BatchType = ChunkType_;

  virtual ~ChunkDataReader() = default;
  virtual ChunkType read_chunk(size_t chunk_index) = 0;
  virtual size_t chunk_count() = 0;
  // Clears any state the reader keeps between epochs.
  virtual void reset() = 0;
};

namespace detail {

// The cache between the preloaders and get_batch: loaded chunks cut into batches (the last
// batch of a chunk is topped up by the next chunk's examples), at most about queue_capacity
// examples at a time.
template <typename UnwrappedBatch, typename ExampleSampler>
class BatchDataBuffer {
 public:
  using UnwrappedBatchType = UnwrappedBatch;
  using BatchType = std::optional<UnwrappedBatchType>;

  BatchDataBuffer(size_t batch_size, ExampleSampler& example_sampler, size_t queue_capacity)
      : batch_size_(batch_size), example_sampler_(example_sampler), queue_capacity_(queue_capacity) {}

  // The next batch; waits for a full batch unless loading has stopped, then returns what is
  // left and nullopt once the cache is empty.
  BatchType get_batch() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_read_.wait(lock, [this] { return examples_in_queue_ >= batch_size_ || stop_; });
    if (queue_.empty()) return std::nullopt;
    Entry entry = std::move(queue_.front());
    queue_.pop_front();
    if (entry.exception) throw WorkerException(entry.exception);
    examples_in_queue_ -= entry.batch.size();
    lock.unlock();
    cv_write_.notify_all();
    return std::move(entry.batch);
  }

  // Called by a preloader with a loaded chunk: waits while the cache is full.
  void add_chunk_data(UnwrappedBatchType data) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_write_.wait(lock, [this] { return examples_in_queue_ < queue_capacity_ || stop_; });
    if (stop_) return;
    const size_t data_size = data.size();
    size_t remaining = data_size;
    example_sampler_.reset(data_size);
    auto fill = [&](size_t count, UnwrappedBatchType& batch) {
      auto indices = example_sampler_.next(count);
      EMBER_CHECK(indices && indices->size() == count, "ChunkDataset",
                  "the example sampler gave fewer than the ", count, " examples asked for");
      for (size_t i : *indices) {
        EMBER_CHECK(i < data_size, "ChunkDataset", "the example sampler gave index ", i, " for a chunk of ",
                    data_size, " examples");
        batch.emplace_back(std::move(data[i]));
      }
      remaining -= count;
    };
    if (!queue_.empty() && !queue_.back().exception && queue_.back().batch.size() < batch_size_)
      fill(std::min(remaining, batch_size_ - queue_.back().batch.size()), queue_.back().batch);
    while (remaining > 0) {
      Entry entry;
      entry.batch.reserve(batch_size_);
      fill(std::min(remaining, batch_size_), entry.batch);
      queue_.push_back(std::move(entry));
    }
    examples_in_queue_ += data_size;
    lock.unlock();
    cv_read_.notify_all();
  }

  // Called by a preloader whose read failed: get_batch rethrows it in turn.
  void add_chunk_data(std::exception_ptr exception) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_write_.wait(lock, [this] { return examples_in_queue_ < queue_capacity_ || stop_; });
    if (stop_) return;
    Entry entry;
    entry.exception = std::move(exception);
    queue_.push_back(std::move(entry));
    lock.unlock();
    cv_read_.notify_all();
  }

  // No more chunks come: wakes the waiting preloaders (which then return) and readers.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_write_.notify_all();
    cv_read_.notify_all();
  }

 private:
  struct Entry {
    UnwrappedBatchType batch;
    std::exception_ptr exception;
  };

  size_t batch_size_;
  ExampleSampler& example_sampler_;
  size_t queue_capacity_;
  size_t examples_in_queue_ = 0;
  std::deque<Entry> queue_;
  std::mutex mutex_;
  std::condition_variable cv_read_, cv_write_;
  bool stop_ = false;
};

}  // namespace detail

struct ChunkDatasetOptions {
  ChunkDatasetOptions() = delete;
  ChunkDatasetOptions(size_t preloader_count, size_t batch_size, size_t cache_size = 2048,
                      size_t cross_chunk_shuffle_count = 1)
      : preloader_count_(preloader_count),
        batch_size_(batch_size),
        cache_size_(cache_size),
        cross_chunk_shuffle_count_(cross_chunk_shuffle_count) {
    EMBER_CHECK(preloader_count > 0, "ChunkDatasetOptions",
                "Preloader count is 0. At least one preloader needs to be specified.");
    EMBER_CHECK(batch_size > 0, "ChunkDatasetOptions",
                "Batch size is 0. A positive batch size needs to be specified.");
    EMBER_CHECK(cache_size > 0, "ChunkDatasetOptions",
                "Cache size is 0. A positive cache size needs to be specified.");
    EMBER_CHECK(cache_size >= batch_size, "ChunkDatasetOptions",
                "Cache size is less than batch size. Cache needs to be large enough to hold at least one batch.");
    EMBER_CHECK(cross_chunk_shuffle_count > 0, "ChunkDatasetOptions",
                "cross_chunk_shuffle_count needs to be greater than 0.");
  }

  // Threads that read chunks ahead.
  EMBER_ARG(size_t, preloader_count);
  EMBER_ARG(size_t, batch_size);
  // How many examples the cache holds before the preloaders wait.
  EMBER_ARG(size_t, cache_size) = 2048;
  // Chunks read together and shuffled as one.
  EMBER_ARG(size_t, cross_chunk_shuffle_count) = 1;
};

template <typename ChunkReader, typename ChunkSampler = samplers::RandomSampler,
          typename ExampleSampler = samplers::RandomSampler>
class ChunkDataset final : public StatefulDataset<ChunkDataset<ChunkReader, ChunkSampler, ExampleSampler>,
                                                  typename ChunkReader::BatchType, size_t> {
 public:
  using BatchType = std::optional<typename ChunkReader::BatchType>;
  using UnwrappedBatchType = typename ChunkReader::BatchType;
  using BatchRequestType = size_t;
  using ChunkSamplerType = ChunkSampler;
  using ExampleSamplerType = ExampleSampler;

  // preprocessing_policy, when given, runs on each loaded chunk (or group of chunks) before
  // its examples are sampled into batches.
  ChunkDataset(ChunkReader chunk_reader, ChunkSampler chunk_sampler, ExampleSampler example_sampler,
               ChunkDatasetOptions options,
               std::function<void(UnwrappedBatchType&)> preprocessing_policy = {})
      : chunk_reader_(std::move(chunk_reader)),
        chunk_sampler_(std::move(chunk_sampler)),
        example_sampler_(std::move(example_sampler)),
        options_(std::move(options)),
        preprocessing_policy_(std::move(preprocessing_policy)) {}

  ~ChunkDataset() override {
    if (batch_buffer_) batch_buffer_->stop();
    free_workers();
  }

  BatchType get_batch(size_t batch_size) override {
    EMBER_CHECK(batch_buffer_ != nullptr, "ChunkDataset",
                "Dataset needs to call reset() before calling get_batch().");
    EMBER_CHECK(batch_size == options_.batch_size(), "ChunkDataset",
                "The requested batch size does not match with the initialized batch size.\n The requested batch "
                "size is ",
                batch_size, ", while the dataset is created with batch size equal to ", options_.batch_size());
    return batch_buffer_->get_batch();
  }
  BatchType get_batch() { return get_batch(options_.batch_size()); }

  // Starts an epoch: stops the preloaders of the last one, resets the reader and the chunk
  // sampler (unless a load() just set its position) and starts new preloaders.
  void reset() override {
    if (batch_buffer_) batch_buffer_->stop();
    free_workers();
    if (!load_checkpoint_) {
      chunk_reader_.reset();
      chunk_sampler_.reset(chunk_reader_.chunk_count());
    }
    load_checkpoint_ = false;
    batch_buffer_ = std::make_unique<detail::BatchDataBuffer<UnwrappedBatchType, ExampleSampler>>(
        options_.batch_size(), example_sampler_, options_.cache_size());
    quit_worker_ = false;
    running_preloaders_ = options_.preloader_count();
    for (size_t i = 0; i < options_.preloader_count(); ++i) preload_threads_.emplace_back([this] { preloader(); });
  }

  // Unsized: the number of examples is known only once every chunk is read.
  std::optional<size_t> size() const override { return std::nullopt; }

  ChunkSamplerType& chunk_sampler() { return chunk_sampler_; }

  void save(serialize::OutputArchive& archive) const override {
    std::lock_guard<std::mutex> lock(chunk_index_guard_);
    chunk_sampler_.save(archive);
  }
  void load(serialize::InputArchive& archive) override {
    std::lock_guard<std::mutex> lock(chunk_index_guard_);
    chunk_sampler_.load(archive);
    load_checkpoint_ = true;
  }

 private:
  void preloader() {
    while (!quit_worker_.load()) {
      try {
        std::vector<size_t> chunk_indices;
        {
          std::lock_guard<std::mutex> lock(chunk_index_guard_);
          auto next = chunk_sampler_.next(options_.cross_chunk_shuffle_count());
          if (!next) break;
          chunk_indices = std::move(*next);
        }
        if (chunk_indices.empty()) break;
        UnwrappedBatchType data = chunk_reader_.read_chunk(chunk_indices[0]);
        for (size_t i = 1; i < chunk_indices.size(); ++i) {
          UnwrappedBatchType more = chunk_reader_.read_chunk(chunk_indices[i]);
          std::move(more.begin(), more.end(), std::back_inserter(data));
        }
        if (preprocessing_policy_) preprocessing_policy_(data);
        if (!data.empty()) batch_buffer_->add_chunk_data(std::move(data));
      } catch (...) {
        batch_buffer_->add_chunk_data(std::current_exception());
      }
    }
    if (--running_preloaders_ == 0) batch_buffer_->stop();  // the last one done: no more chunks
  }

  void free_workers() {
    quit_worker_ = true;
    for (auto& thread : preload_threads_) thread.join();
    preload_threads_.clear();
  }

  ChunkReader chunk_reader_;
  ChunkSamplerType chunk_sampler_;
  ExampleSamplerType example_sampler_;
  std::unique_ptr<detail::BatchDataBuffer<UnwrappedBatchType, ExampleSampler>> batch_buffer_;
  std::vector<std::thread> preload_threads_;
  const ChunkDatasetOptions options_;
  std::function<void(UnwrappedBatchType&)> preprocessing_policy_;
  std::atomic<bool> quit_worker_{false};
  std::atomic<size_t> running_preloaders_{0};
  mutable std::mutex chunk_index_guard_;
  bool load_checkpoint_ = false;  // load() set the chunk sampler's position for the next epoch
};

}  // namespace ember::data::datasets
