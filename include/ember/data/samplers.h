// Samplers, as torch::data::samplers: each yields batches of indices into a dataset, one
// epoch at a time (reset() starts the next).
//
// Each saves its position (and RandomSampler its permutation) into a serialize archive, so
// ember::save(sampler, path) / ember::load(sampler, path) resume an epoch.
//
// Differences from libtorch: DistributedRandomSampler shuffles with ember's Philox stream seeded by the
// epoch (Fisher-Yates, random_bits(epoch, i)) where libtorch uses std::mt19937(epoch) and
// std::shuffle, so its orders differ from libtorch's but are the same on every platform.
// Bad arguments (num_replicas 0, rank >= num_replicas) are an ember::Error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "ember/dtype.h"
#include "ember/io/archive.h"
#include "ember/tensor.h"

namespace ember::data::samplers {

template <typename BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;

  virtual ~Sampler() = default;
  // Starts a new epoch, optionally over a dataset of a new size.
  virtual void reset(std::optional<size_t> new_size) = 0;
  // The next batch of at most batch_size indices, or nullopt when the epoch is over.
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
  // Writes (reads) the sampler's state: where it is in the epoch.
  virtual void save(serialize::OutputArchive& archive) const = 0;
  virtual void load(serialize::InputArchive& archive) = 0;
};

template <typename BatchRequest>
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Sampler<BatchRequest>& sampler) {
  sampler.save(archive);
  return archive;
}
template <typename BatchRequest>
serialize::InputArchive& operator>>(serialize::InputArchive& archive, Sampler<BatchRequest>& sampler) {
  sampler.load(archive);
  return archive;
}

// The base of a batch request type other than a vector of indices: the loader asks its size()
// (drop_last compares it with the batch size).
struct CustomBatchRequest {
  CustomBatchRequest() = default;
  CustomBatchRequest(const CustomBatchRequest&) = default;
  CustomBatchRequest(CustomBatchRequest&&) noexcept = default;
  virtual ~CustomBatchRequest() = default;

  // The number of elements the request asks for.
  virtual size_t size() const = 0;
};

// 0, 1, ..., size - 1.
class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(serialize::OutputArchive& archive) const override;
  void load(serialize::InputArchive& archive) override;
  size_t index() const noexcept { return index_; }

 private:
  size_t size_;
  size_t index_ = 0;
};

// A permutation of 0 .. size - 1 drawn by ember::randperm from the default generator
// (ember::manual_seed makes it reproducible); each reset() draws a new one.
class RandomSampler : public Sampler<> {
 public:
  explicit RandomSampler(int64_t size, ScalarType index_dtype = kInt64);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(serialize::OutputArchive& archive) const override;
  void load(serialize::InputArchive& archive) override;
  size_t index() const noexcept { return static_cast<size_t>(index_); }

 private:
  Tensor indices_;
  int64_t index_ = 0;
};

// The share of replica `rank` out of `num_replicas`. With allow_duplicates each replica gets
// ceil(size / num_replicas) indices (the first ones repeat to fill the last replica); without,
// floor(size / num_replicas) (the tail is left out).
template <typename BatchRequest = std::vector<size_t>>
class DistributedSampler : public Sampler<BatchRequest> {
 public:
  DistributedSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true)
      : size_(size), num_replicas_(num_replicas), rank_(rank), epoch_(0), allow_duplicates_(allow_duplicates) {
    check_replicas(num_replicas, rank);
  }

  // Sets the epoch the next reset() shuffles for (every replica must set the same one).
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  size_t epoch() const { return epoch_; }
  // The position of the next index in this replica's share.
  size_t index() const noexcept { return sample_index_; }

 protected:
  size_t local_sample_count() const {
    return allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
  }

  size_t size_;
  size_t num_replicas_;
  size_t rank_;
  size_t epoch_;
  bool allow_duplicates_;
  // This replica's share is positions [begin_index_, end_index_); sample_index_ is the next.
  size_t begin_index_ = 0;
  size_t end_index_ = 0;
  size_t sample_index_ = 0;

 private:
  static void check_replicas(size_t num_replicas, size_t rank) {
    EMBER_CHECK(num_replicas > 0, "DistributedSampler", "num_replicas must be positive, got ", num_replicas);
    EMBER_CHECK(rank < num_replicas, "DistributedSampler", "rank must be < num_replicas, got rank ", rank,
                " and num_replicas ", num_replicas);
  }
};

// Every replica shuffles the same padded index list with the epoch as seed and takes its
// contiguous share: rank r reads positions [r * n, (r + 1) * n) of the shuffled list.
class DistributedRandomSampler : public DistributedSampler<> {
 public:
  DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  // The epoch and the position: loading shuffles for that epoch again.
  void save(serialize::OutputArchive& archive) const override;
  void load(serialize::InputArchive& archive) override;

 private:
  void populate_indices();

  std::vector<size_t> all_indices_;
};

// Replica r reads indices [r * n, (r + 1) * n), wrapped modulo size where they run past it.
class DistributedSequentialSampler : public DistributedSampler<> {
 public:
  DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(serialize::OutputArchive& archive) const override;
  void load(serialize::InputArchive& archive) override;

 private:
  void populate_indices();
};

// The batch request of a stream: how many examples to produce; converts to its size_t.
struct BatchSize : public CustomBatchRequest {
  explicit BatchSize(size_t size) : size_(size) {}
  size_t size() const noexcept override { return size_; }
  operator size_t() const noexcept { return size_; }  // NOLINT: implicit, as in libtorch
  size_t size_;
};

// The sampler of a stream dataset (StreamDataset): batch sizes until epoch_size examples have
// been asked for, the last one smaller when batch_size does not divide epoch_size.
class StreamSampler : public Sampler<BatchSize> {
 public:
  explicit StreamSampler(size_t epoch_size) : epoch_size_(epoch_size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<BatchSize> next(size_t batch_size) override;
  void save(serialize::OutputArchive& archive) const override;
  void load(serialize::InputArchive& archive) override;

 private:
  size_t examples_retrieved_so_far_ = 0;
  size_t epoch_size_;
};

}  // namespace ember::data::samplers
