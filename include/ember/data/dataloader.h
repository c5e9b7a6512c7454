// The data loader, as torch::data::make_data_loader: batches of a dataset in the order a
// sampler gives, read on the calling thread (workers = 0) or prefetched by worker threads
// that each hold a copy of the dataset.
//
//   auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
//       std::move(dataset), data::DataLoaderOptions(64).workers(2));
//   for (auto& batch : *loader) { ... batch.data ... batch.target ... }
//
// A stateful dataset (datasets::StatefulDataset, ChunkDataset) gets a StatefulDataLoader: no
// sampler, every request is the batch size, and the epoch ends when the dataset returns
// nullopt.
//
// Differences from libtorch: batch_size 0 is an ember::Error; an exception in a worker is
// rethrown on the caller as a WorkerException, which is an ember::Error.
#pragma once
#include <chrono>
#include <algorithm>
#include <atomic>
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
#include "ember/data/datasets.h"
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

// An exception thrown by a dataset in a worker thread, rethrown on the loader's thread. Its
// message is libtorch's: "Caught exception in DataLoader worker thread. Original message: ...".
class WorkerException : public Error {
 public:
  explicit WorkerException(std::exception_ptr original)
      : Error("Caught exception in DataLoader worker thread. Original message: " + message_of(original)),
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

// A thread-safe FIFO queue: pop() waits for an element (at most `timeout`, then an
// ember::Error "Timeout in DataLoader queue ...").
template <typename T>
class Queue {
 public:
  void push(T value) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(value));
    }
    cv_.notify_one();
  }

  T pop(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto ready = [this] { return !queue_.empty(); };
    if (timeout) {
      EMBER_CHECK(cv_.wait_for(lock, *timeout, ready), "DataLoader",
                  "Timeout in DataLoader queue while waiting for next batch (timeout was ", timeout->count(), " ms)");
    } else {
      cv_.wait(lock, ready);
    }
    T value = std::move(queue_.front());
    queue_.pop_front();
    return value;
  }

  // Empties the queue and returns how many elements it held.
  size_t clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t size = queue_.size();
    queue_.clear();
    return size;
  }

 private:
  std::deque<T> queue_;
  std::mutex mutex_;
  std::condition_variable cv_;
};

// Jobs go to the workers and results come back through two queues; `in_flight_jobs` counts
// the jobs whose result has not been taken yet.
template <typename Job, typename Result>
class DataShuttle {
 public:
  void push_job(Job job) {
    new_jobs_.push(std::move(job));
    ++in_flight_jobs_;
  }
  void push_result(Result result) { results_.push(std::move(result)); }
  Job pop_job() { return new_jobs_.pop(); }

  // The next result, or nullopt when no job is in flight.
  std::optional<Result> pop_result(std::optional<std::chrono::milliseconds> timeout = std::nullopt) {
    if (in_flight_jobs_ > 0) {
      auto result = results_.pop(timeout);
      --in_flight_jobs_;
      return result;
    }
    return std::nullopt;
  }

  // Drops the jobs not yet taken and waits out (and drops) the results of the others.
  void drain() {
    in_flight_jobs_ -= new_jobs_.clear();
    while (in_flight_jobs_ > 0) pop_result();
  }

  size_t in_flight_jobs() const noexcept { return in_flight_jobs_; }

 private:
  Queue<Job> new_jobs_;
  Queue<Result> results_;
  std::atomic<size_t> in_flight_jobs_{0};
};

namespace sequencers {

// Hands out the results of the workers: as they come (NoSequencer) or in the order of their
// sequence numbers (OrderedSequencer).
template <typename Result>
struct Sequencer {
  using ResultProducer = std::function<std::optional<Result>()>;
  virtual ~Sequencer() = default;
  virtual std::optional<Result> next(ResultProducer next_result) = 0;
};

template <typename Result>
struct NoSequencer final : public Sequencer<Result> {
  using typename Sequencer<Result>::ResultProducer;
  std::optional<Result> next(ResultProducer next_result) override { return next_result(); }
};

// Results that come early wait in a ring buffer of max_jobs slots (the most that can be in
// flight) until their turn.
template <typename Result>
struct OrderedSequencer : public Sequencer<Result> {
  using typename Sequencer<Result>::ResultProducer;

  explicit OrderedSequencer(size_t max_jobs) : buffer_(max_jobs) {}

  std::optional<Result> next(ResultProducer next_result) override {
    if (auto& waiting = buffer(next_sequence_number_)) {
      std::optional<Result> result = std::move(waiting);
      waiting.reset();
      ++next_sequence_number_;
      return result;
    }
    while (true) {
      std::optional<Result> result = next_result();
      if (!result) break;
      if (result->sequence_number == next_sequence_number_) {
        ++next_sequence_number_;
        return result;
      }
      buffer(result->sequence_number) = std::move(result);
    }
    return std::nullopt;
  }

  std::optional<Result>& buffer(size_t sequence_number) { return buffer_.at(sequence_number % buffer_.size()); }

  size_t next_sequence_number_ = 0;
  std::vector<std::optional<Result>> buffer_;
};

}  // namespace sequencers

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
    EMBER_CHECK(!is_sentinel(), "DataLoader", "Incrementing the DataLoader's past-the-end iterator is not allowed");
    lazy_initialize();
    EMBER_CHECK(batch_.has_value(), "DataLoader", "Attempted to increment iterator past the end");
    batch_ = next_batch_();
  }
  Batch& get() {
    EMBER_CHECK(!is_sentinel(), "DataLoader", "Dereferencing the DataLoader's past-the-end iterator is not allowed");
    lazy_initialize();
    EMBER_CHECK(batch_.has_value(), "DataLoader", "Attempted to dereference iterator that was past the end");
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

// What the stateless and the stateful loaders share: the workers, the jobs in flight, the
// order results are handed out in, the iterators.
template <typename Dataset, typename Batch, typename BatchRequest>
class DataLoaderBase {
 public:
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;

  DataLoaderBase(DataLoaderOptions options, std::unique_ptr<Dataset> main_thread_dataset = nullptr)
      : options_(std::move(options)), main_thread_dataset_(std::move(main_thread_dataset)) {}

  DataLoaderBase(const DataLoaderBase&) = delete;
  DataLoaderBase& operator=(const DataLoaderBase&) = delete;
  virtual ~DataLoaderBase() { join(); }

  // Starts an epoch (resets the sampler or the dataset, prefetches) and returns its first
  // position.
  Iterator<Batch> begin() {
    EMBER_CHECK(shuttle_.in_flight_jobs() == 0, "DataLoader",
                "Attempted to get a new DataLoader iterator while another iterator is not yet exhausted");
    reset();
    return Iterator<Batch>(std::make_shared<detail::IteratorImpl<Batch>>([this] { return next(); }));
  }
  Iterator<Batch> end() { return Iterator<Batch>(std::make_shared<detail::IteratorImpl<Batch>>()); }

  // Stops the workers (after the batches they are on). Called by the destructor.
  void join() {
    if (joined_) return;
    shuttle_.drain();
    for (size_t w = 0; w < workers_.size(); ++w) shuttle_.push_job(Job{});
    for (auto& worker : workers_) worker.join();
    joined_ = true;
  }

  const FullDataLoaderOptions& options() const noexcept { return options_; }

 protected:
  struct Job {
    std::optional<BatchRequest> request;  // nullopt: the worker quits
    size_t sequence_number = 0;
  };
  struct Result {
    std::optional<Batch> batch;  // nullopt: a stateful dataset's epoch is over
    std::exception_ptr exception;
    size_t sequence_number = 0;
  };

  // The next request, or nullopt when the epoch has no more.
  virtual std::optional<BatchRequest> get_batch_request() = 0;

  virtual void reset() {
    shuttle_.drain();
    sequence_number_ = 0;
    if (options_.enforce_ordering)
      sequencer_ = std::make_unique<detail::sequencers::OrderedSequencer<Result>>(std::max<size_t>(options_.max_jobs, 1));
    else
      sequencer_ = std::make_unique<detail::sequencers::NoSequencer<Result>>();
    prefetch(options_.max_jobs);
  }

  void prefetch(size_t requested_jobs) {
    if (options_.workers == 0) return;
    for (size_t r = 0; r < requested_jobs; ++r) {
      auto request = get_batch_request();
      if (!request) break;
      shuttle_.push_job(Job{std::move(request), sequence_number_++});
    }
  }

  std::optional<Batch> next() {
    if (options_.workers > 0) {
      while (std::optional<Result> result =
                 sequencer_->next([this] { return shuttle_.pop_result(options_.timeout); })) {
        if (result->exception) throw WorkerException(result->exception);
        if (result->batch) {
          prefetch(1);
          return std::move(result->batch);
        }
      }
      return std::nullopt;
    }
    auto request = get_batch_request();
    if (!request) return std::nullopt;
    return main_thread_dataset_->get_batch(std::move(*request));
  }

  // Starts a worker that reads through `dataset` (which must outlive it).
  template <typename WorkerDataset>
  void start_worker(WorkerDataset dataset_for_worker) {
    workers_.emplace_back([this, dataset = std::move(dataset_for_worker)]() mutable {
      while (true) {
        Job job = shuttle_.pop_job();
        if (!job.request) break;
        Result result;
        result.sequence_number = job.sequence_number;
        try {
          result.batch = deref(dataset).get_batch(std::move(*job.request));
        } catch (...) {
          result.exception = std::current_exception();
        }
        shuttle_.push_result(std::move(result));
      }
    });
  }

  const FullDataLoaderOptions options_;
  std::unique_ptr<Dataset> main_thread_dataset_;

 private:
  template <typename D>
  static D& deref(D& dataset) {
    return dataset;
  }
  template <typename D>
  static D& deref(D* dataset) {
    return *dataset;
  }

  std::vector<std::thread> workers_;
  detail::DataShuttle<Job, Result> shuttle_;
  std::unique_ptr<detail::sequencers::Sequencer<Result>> sequencer_;
  size_t sequence_number_ = 0;
  bool joined_ = false;
};

// The loader of a dataset with random access (BatchDataset) and a sampler; each worker reads
// through its own copy of the dataset, as in libtorch.
template <typename Dataset, typename Sampler>
class StatelessDataLoader
    : public DataLoaderBase<Dataset, typename Dataset::BatchType, typename Sampler::BatchRequestType> {
  using Base = DataLoaderBase<Dataset, typename Dataset::BatchType, typename Sampler::BatchRequestType>;

 public:
  using typename Base::BatchRequestType;
  using typename Base::BatchType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : Base(std::move(options)), sampler_(std::move(sampler)) {
    for (size_t w = 0; w < this->options_.workers; ++w) this->start_worker(dataset);
    if (this->options_.workers == 0) this->main_thread_dataset_ = std::make_unique<Dataset>(std::move(dataset));
  }
  ~StatelessDataLoader() override { this->join(); }

 private:
  void reset() override {
    sampler_.reset(std::nullopt);
    Base::reset();
  }

  std::optional<BatchRequestType> get_batch_request() override {
    auto indices = sampler_.next(this->options_.batch_size);
    if (!indices || (indices->size() < this->options_.batch_size && this->options_.drop_last)) return std::nullopt;
    return indices;
  }

  Sampler sampler_;
};

// The loader of a stateful dataset: every request is the batch size, the dataset says when
// the epoch is over (nullopt), and the workers all read through the one dataset.
template <typename Dataset>
class StatefulDataLoader
    : public DataLoaderBase<Dataset, typename Dataset::BatchType::value_type, typename Dataset::BatchRequestType> {
  using Base =
      DataLoaderBase<Dataset, typename Dataset::BatchType::value_type, typename Dataset::BatchRequestType>;

 public:
  using typename Base::BatchRequestType;
  using typename Base::BatchType;

  StatefulDataLoader(Dataset dataset, DataLoaderOptions options)
      : Base(std::move(options), std::make_unique<Dataset>(std::move(dataset))) {
    for (size_t w = 0; w < this->options_.workers; ++w) this->start_worker(this->main_thread_dataset_.get());
  }
  ~StatefulDataLoader() override { this->join(); }

 private:
  void reset() override {
    this->main_thread_dataset_->reset();
    Base::reset();
  }

  std::optional<BatchRequestType> get_batch_request() override { return this->options_.batch_size; }
};

template <typename Dataset, typename Sampler>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset, Sampler sampler,
                                                                        DataLoaderOptions options) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler),
                                                                 std::move(options));
}

// A loader whose sampler (RandomSampler unless named) is built from the dataset's size.
template <typename Sampler = samplers::RandomSampler, typename Dataset,
          typename = std::enable_if_t<std::is_constructible_v<Sampler, size_t> && !Dataset::is_stateful>>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset,
                                                                        DataLoaderOptions options = DataLoaderOptions()) {
  const std::optional<size_t> size = dataset.size();
  EMBER_CHECK(size.has_value(), "make_data_loader",
              "Expected the dataset to be sized in order to construct the Sampler");
  return make_data_loader(std::move(dataset), Sampler(*size), std::move(options));
}

// The loader of a stateful dataset (StatefulDataset, ChunkDataset).
template <typename Dataset, typename = std::enable_if_t<Dataset::is_stateful>, typename = void>
std::unique_ptr<StatefulDataLoader<Dataset>> make_data_loader(Dataset dataset,
                                                              DataLoaderOptions options = DataLoaderOptions()) {
  return std::make_unique<StatefulDataLoader<Dataset>>(std::move(dataset), std::move(options));
}

}  // namespace ember::data
