// The data loader, as torch::data::make_data_loader: batches of a dataset in the order a
// sampler gives, read on the calling thread (workers = 0) or prefetched by worker threads
// that each hold a copy of the dataset.
//
//   auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
//       std::move(dataset), data::DataLoaderOptions(64).workers(2));
//   for (auto& batch : *loader) { ... batch.data ... batch.target ... }
//
// Differences from libtorch: no stateful datasets (StatefulDataLoader); batch_size 0 is an
// ember::Error; an exception in a worker is rethrown on the caller as a WorkerException,
// which is an ember::Error naming the original message.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/arg.h"
#include "ember/data/samplers.h"
#include "ember/error.h"

namespace ember::data {

struct DataLoaderOptions {
  DataLoaderOptions() = default;
  DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}  // NOLINT: implicit, as in libtorch

  EMBER_ARG(size_t, batch_size) = 1;
  // Threads that fetch batches ahead; 0 reads each batch on the caller's thread when asked.
  EMBER_ARG(size_t, workers) = 0;
  // Batches requested ahead of the one being consumed; default 2 * workers.
  EMBER_ARG(std::optional<size_t>, max_jobs);
  // How long to wait for a worker's batch before an ember::Error.
  EMBER_ARG(std::optional<std::chrono::milliseconds>, timeout);
  // With workers: hand batches out in sampler order (else in the order they finish).
  EMBER_ARG(bool, enforce_ordering) = true;
  // Leave out a last batch smaller than batch_size.
  EMBER_ARG(bool, drop_last) = false;
};

// DataLoaderOptions with the defaults that depend on other options filled in.
struct FullDataLoaderOptions {
  explicit FullDataLoaderOptions(DataLoaderOptions options)
      : batch_size(options.batch_size()),
        workers(options.workers()),
        max_jobs(options.max_jobs().value_or(2 * options.workers())),
        timeout(options.timeout()),
        enforce_ordering(options.enforce_ordering()),
        drop_last(options.drop_last()) {
    EMBER_CHECK(batch_size > 0, "DataLoader", "batch_size must be positive, got ", batch_size);
    EMBER_CHECK(workers == 0 || max_jobs > 0, "DataLoader", "max_jobs must be positive with ", workers,
                " workers, got ", max_jobs);
  }

  size_t batch_size;
  size_t workers;
  size_t max_jobs;
  std::optional<std::chrono::milliseconds> timeout;
  bool enforce_ordering;
  bool drop_last;
};

// An exception thrown by a dataset in a worker thread, rethrown on the loader's thread.
class WorkerException : public Error {
 public:
  explicit WorkerException(std::exception_ptr original)
      : Error("[DataLoader] exception in a worker thread: " + message_of(original)),
        original_exception(std::move(original)) {}

  std::exception_ptr original_exception;

 private:
  static std::string message_of(const std::exception_ptr& original) {
    try {
      std::rethrow_exception(original);
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "unknown exception";
    }
  }
};

namespace detail {

// Jobs go to the workers and results come back through two queues; `in_flight` counts the
// jobs whose result has not been taken yet.
template <typename Job, typename Result>
class DataShuttle {
 public:
  void push_job(Job job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
      ++in_flight_;
    }
    job_ready_.notify_one();
  }
  void push_quit(Job job) {  // not counted: no result comes back
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    job_ready_.notify_one();
  }
  Job pop_job() {
    std::unique_lock<std::mutex> lock(mutex_);
    job_ready_.wait(lock, [&] { return !jobs_.empty(); });
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    return job;
  }
  void push_result(Result result) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      results_.push_back(std::move(result));
    }
    result_ready_.notify_one();
  }
  // The next finished result, or nullopt when no job is in flight.
  std::optional<Result> pop_result(std::optional<std::chrono::milliseconds> timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (in_flight_ == 0) return std::nullopt;
    auto ready = [&] { return !results_.empty(); };
    if (timeout) {
      EMBER_CHECK(result_ready_.wait_for(lock, *timeout, ready), "DataLoader",
                  "timed out waiting for the next batch (timeout was ", timeout->count(), " ms)");
    } else {
      result_ready_.wait(lock, ready);
    }
    Result result = std::move(results_.front());
    results_.pop_front();
    --in_flight_;
    return result;
  }
  // Drops queued jobs and waits out (and drops) the results of the ones being worked on.
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    in_flight_ -= jobs_.size();
    jobs_.clear();
    result_ready_.wait(lock, [&] { return results_.size() == in_flight_; });
    results_.clear();
    in_flight_ = 0;
  }
  size_t in_flight_jobs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return in_flight_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable job_ready_, result_ready_;
  std::deque<Job> jobs_;
  std::deque<Result> results_;
  size_t in_flight_ = 0;
};

// An iterator over a loader's batches: a ValidIterator yields batches until the loader is
// exhausted, then compares equal to the SentinelIterator (end()).
template <typename Batch>
class IteratorImpl {
 public:
  using BatchProducer = std::function<std::optional<Batch>()>;

  IteratorImpl() = default;  // the sentinel
  explicit IteratorImpl(BatchProducer next_batch) : next_batch_(std::move(next_batch)) {}

  bool is_sentinel() const { return !next_batch_; }
  bool exhausted() const {
    lazy_initialize();
    return !batch_.has_value();
  }
  void next() {
    EMBER_CHECK(!is_sentinel(), "DataLoader", "incrementing the past-the-end iterator is not allowed");
    lazy_initialize();
    EMBER_CHECK(batch_.has_value(), "DataLoader", "attempted to increment the iterator past the end");
    batch_ = next_batch_();
  }
  Batch& get() {
    EMBER_CHECK(!is_sentinel(), "DataLoader", "dereferencing the past-the-end iterator is not allowed");
    lazy_initialize();
    EMBER_CHECK(batch_.has_value(), "DataLoader", "attempted to dereference the iterator past the end");
    return *batch_;
  }

 private:
  void lazy_initialize() const {
    if (!initialized_ && next_batch_) {
      batch_ = next_batch_();
      initialized_ = true;
    }
  }

  BatchProducer next_batch_;
  mutable std::optional<Batch> batch_;
  mutable bool initialized_ = false;
};

}  // namespace detail

template <typename Batch>
class Iterator {
 public:
  using difference_type = std::ptrdiff_t;
  using value_type = Batch;
  using pointer = Batch*;
  using reference = Batch&;
  using iterator_category = std::input_iterator_tag;

  explicit Iterator(std::shared_ptr<detail::IteratorImpl<Batch>> impl) : impl_(std::move(impl)) {}

  Iterator& operator++() {
    impl_->next();
    return *this;
  }
  Batch& operator*() { return impl_->get(); }
  Batch* operator->() { return &impl_->get(); }
  // Two valid iterators are equal when they are the same; a valid one equals the sentinel
  // once the loader is exhausted.
  bool operator==(const Iterator& other) const {
    const bool a = impl_->is_sentinel(), b = other.impl_->is_sentinel();
    if (a && b) return true;
    if (a) return other.impl_->exhausted();
    if (b) return impl_->exhausted();
    return impl_ == other.impl_;
  }
  bool operator!=(const Iterator& other) const { return !(*this == other); }

 private:
  std::shared_ptr<detail::IteratorImpl<Batch>> impl_;
};

// The loader of a dataset with random access (BatchDataset) and a sampler.
template <typename Dataset, typename Sampler>
class StatelessDataLoader {
 public:
  using BatchType = typename Dataset::BatchType;
  using BatchRequestType = typename Sampler::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : options_(std::move(options)), sampler_(std::move(sampler)) {
    if (options_.workers == 0) {
      main_thread_dataset_ = std::make_unique<Dataset>(std::move(dataset));
      return;
    }
    // Each worker reads through its own copy of the dataset, as in libtorch.
    for (size_t w = 0; w < options_.workers; ++w)
      workers_.emplace_back([this, dataset]() mutable { worker_thread(dataset); });
  }

  StatelessDataLoader(const StatelessDataLoader&) = delete;
  StatelessDataLoader& operator=(const StatelessDataLoader&) = delete;
  ~StatelessDataLoader() { join(); }

  // Starts an epoch (resets the sampler, prefetches) and returns its first position.
  Iterator<BatchType> begin() {
    EMBER_CHECK(shuttle_.in_flight_jobs() == 0, "DataLoader",
                "attempted to get a new iterator while another iterator is not yet exhausted");
    reset();
    return Iterator<BatchType>(std::make_shared<detail::IteratorImpl<BatchType>>([this] { return next(); }));
  }
  Iterator<BatchType> end() { return Iterator<BatchType>(std::make_shared<detail::IteratorImpl<BatchType>>()); }

  // Stops the workers (after the batches they are on). Called by the destructor.
  void join() {
    if (joined_) return;
    shuttle_.drain();
    for (size_t w = 0; w < workers_.size(); ++w) shuttle_.push_quit(Job{});
    for (auto& worker : workers_) worker.join();
    joined_ = true;
  }

  const FullDataLoaderOptions& options() const noexcept { return options_; }

 private:
  struct Job {
    std::optional<BatchRequestType> request;  // nullopt: the worker quits
    size_t sequence_number = 0;
  };
  struct Result {
    std::optional<BatchType> batch;
    std::exception_ptr exception;
    size_t sequence_number = 0;
  };

  void reset() {
    shuttle_.drain();
    sampler_.reset(std::nullopt);
    sequence_number_ = 0;
    next_to_hand_out_ = 0;
    early_results_.clear();
    prefetch(options_.max_jobs);
  }

  std::optional<BatchRequestType> get_batch_request() {
    auto indices = sampler_.next(options_.batch_size);
    if (!indices || (indices->size() < options_.batch_size && options_.drop_last)) return std::nullopt;
    return indices;
  }

  void prefetch(size_t requested_jobs) {
    if (options_.workers == 0) return;
    for (size_t r = 0; r < requested_jobs; ++r) {
      auto request = get_batch_request();
      if (!request) break;
      shuttle_.push_job(Job{std::move(request), sequence_number_++});
    }
  }

  // The next result in sampler order (enforce_ordering) or in finishing order.
  std::optional<Result> pop_result() {
    if (!options_.enforce_ordering) return shuttle_.pop_result(options_.timeout);
    while (true) {
      auto early = early_results_.find(next_to_hand_out_);
      if (early != early_results_.end()) {
        Result result = std::move(early->second);
        early_results_.erase(early);
        ++next_to_hand_out_;
        return result;
      }
      std::optional<Result> result = shuttle_.pop_result(options_.timeout);
      if (!result) return std::nullopt;
      if (result->sequence_number == next_to_hand_out_) {
        ++next_to_hand_out_;
        return result;
      }
      early_results_.emplace(result->sequence_number, std::move(*result));
    }
  }

  std::optional<BatchType> next() {
    if (options_.workers == 0) {
      auto request = get_batch_request();
      if (!request) return std::nullopt;
      return main_thread_dataset_->get_batch(std::move(*request));
    }
    std::optional<Result> result = pop_result();
    if (!result) return std::nullopt;
    if (result->exception) throw WorkerException(result->exception);
    prefetch(1);
    return std::move(result->batch);
  }

  void worker_thread(Dataset& dataset) {
    while (true) {
      Job job = shuttle_.pop_job();
      if (!job.request) break;
      Result result;
      result.sequence_number = job.sequence_number;
      try {
        result.batch = dataset.get_batch(std::move(*job.request));
      } catch (...) {
        result.exception = std::current_exception();
      }
      shuttle_.push_result(std::move(result));
    }
  }

  const FullDataLoaderOptions options_;
  Sampler sampler_;
  std::unique_ptr<Dataset> main_thread_dataset_;
  std::vector<std::thread> workers_;
  detail::DataShuttle<Job, Result> shuttle_;
  size_t sequence_number_ = 0;
  size_t next_to_hand_out_ = 0;
  std::map<size_t, Result> early_results_;
  bool joined_ = false;
};

template <typename Dataset, typename Sampler>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset, Sampler sampler,
                                                                        DataLoaderOptions options) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler),
                                                                 std::move(options));
}

// A loader whose sampler (RandomSampler unless named) is built from the dataset's size.
template <typename Sampler = samplers::RandomSampler, typename Dataset,
          typename = std::enable_if_t<std::is_constructible_v<Sampler, size_t>>>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset,
                                                                        DataLoaderOptions options = DataLoaderOptions()) {
  const std::optional<size_t> size = dataset.size();
  EMBER_CHECK(size.has_value(), "make_data_loader", "expected a sized dataset to construct the sampler");
  return make_data_loader(std::move(dataset), Sampler(*size), std::move(options));
}

}  // namespace ember::data
