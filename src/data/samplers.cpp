// The index samplers of the data loader (samplers.h).
#include "ember/data/samplers.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "ember/functions.h"
#include "ember/random.h"

namespace ember::data::samplers {
namespace {

// The entries of `indices` from `position` up to batch_size of them, stopping at `end`, and
// `position` moved past them; nullopt when `position` is already at `end`.
std::optional<std::vector<size_t>> take(const std::vector<size_t>& indices, size_t& position, size_t end,
                                        size_t batch_size) {
  if (position == end) return std::nullopt;
  const size_t stop = std::min(end, position + batch_size);
  std::vector<size_t> batch(indices.begin() + static_cast<std::ptrdiff_t>(position),
                            indices.begin() + static_cast<std::ptrdiff_t>(stop));
  position = stop;
  return batch;
}

}  // namespace

SequentialSampler::SequentialSampler(size_t size) : size_(size) {}

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

std::optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  if (index_ == size_) return std::nullopt;
  std::vector<size_t> batch(std::min(batch_size, size_ - index_));
  std::iota(batch.begin(), batch.end(), index_);
  index_ += batch.size();
  return batch;
}

RandomSampler::RandomSampler(int64_t size, ScalarType index_dtype) : indices_(randperm(size, index_dtype)) {}

void RandomSampler::reset(std::optional<size_t> new_size) {
  const int64_t size = new_size ? static_cast<int64_t>(*new_size) : indices_.numel();
  indices_ = randperm(size, indices_.scalar_type());
  index_ = 0;
}

std::optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  const int64_t remaining = indices_.numel() - index_;
  if (remaining == 0) return std::nullopt;
  const int64_t count = std::min(static_cast<int64_t>(batch_size), remaining);
  Tensor slice = indices_.slice(0, index_, index_ + count).to(kInt64).contiguous();
  const int64_t* data = slice.data_ptr<int64_t>();
  std::vector<size_t> batch(data, data + count);
  index_ += count;
  return batch;
}

DistributedRandomSampler::DistributedRandomSampler(size_t size, size_t num_replicas, size_t rank,
                                                   bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  reset(size_);
}

void DistributedRandomSampler::populate_indices() {
  const size_t local = local_sample_count();
  const size_t count = num_replicas_ == 1 ? size_ : local * num_replicas_;
  all_indices_.resize(count);
  // Positions past the dataset repeat its first indices, so every replica gets `local`.
  for (size_t i = 0; i < count; ++i) all_indices_[i] = i < size_ ? i : i - size_;
  begin_index_ = rank_ * local;
  end_index_ = begin_index_ + local;
  sample_index_ = begin_index_;
}

void DistributedRandomSampler::reset(std::optional<size_t> new_size) {
  size_ = new_size.value_or(size_);
  populate_indices();
  for (size_t i = all_indices_.size(); i > 1; --i) {  // Fisher-Yates, seeded by the epoch
    const size_t j = static_cast<size_t>(random_bits(epoch_, i - 1) % i);
    std::swap(all_indices_[i - 1], all_indices_[j]);
  }
  sample_index_ = begin_index_;
}

std::optional<std::vector<size_t>> DistributedRandomSampler::next(size_t batch_size) {
  return take(all_indices_, sample_index_, end_index_, batch_size);
}

DistributedSequentialSampler::DistributedSequentialSampler(size_t size, size_t num_replicas, size_t rank,
                                                           bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  populate_indices();
}

void DistributedSequentialSampler::populate_indices() {
  begin_index_ = rank_ * local_sample_count();
  end_index_ = begin_index_ + local_sample_count();
  sample_index_ = begin_index_;
}

void DistributedSequentialSampler::reset(std::optional<size_t> new_size) {
  size_ = new_size.value_or(size_);
  populate_indices();
}

std::optional<std::vector<size_t>> DistributedSequentialSampler::next(size_t batch_size) {
  if (sample_index_ == end_index_) return std::nullopt;
  const size_t stop = std::min(end_index_, sample_index_ + batch_size);
  std::vector<size_t> batch(stop - sample_index_);
  std::iota(batch.begin(), batch.end(), sample_index_);
  for (size_t& index : batch) index %= size_;  // the padding positions wrap to the start
  sample_index_ = stop;
  return batch;
}

}  // namespace ember::data::samplers
