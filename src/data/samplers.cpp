// The index samplers of the data loader (samplers.h).
#include "ember/data/samplers.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "ember/error.h"
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

// The int64 scalar tensor at `key`, as a size_t.
size_t read_count(serialize::InputArchive& archive, const std::string& key) {
  Tensor value;
  archive.read(key, value, /*is_buffer=*/true);
  const int64_t count = value.item<int64_t>();
  EMBER_CHECK(count >= 0, "Sampler::load", "'", key, "' must not be negative, got ", count);
  return static_cast<size_t>(count);
}

void write_count(serialize::OutputArchive& archive, const std::string& key, size_t count) {
  archive.write(key, ember::tensor(static_cast<int64_t>(count)), /*is_buffer=*/true);
}

}  // namespace

SequentialSampler::SequentialSampler(size_t size) : size_(size) {}

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

std::optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  if (index_ >= size_) return std::nullopt;  // a loaded index may lie past a smaller size
  std::vector<size_t> batch(std::min(batch_size, size_ - index_));
  std::iota(batch.begin(), batch.end(), index_);
  index_ += batch.size();
  return batch;
}

void SequentialSampler::save(serialize::OutputArchive& archive) const { write_count(archive, "index", index_); }

void SequentialSampler::load(serialize::InputArchive& archive) { index_ = read_count(archive, "index"); }

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

void RandomSampler::save(serialize::OutputArchive& archive) const {
  write_count(archive, "index", static_cast<size_t>(index_));
  archive.write("indices", indices_, /*is_buffer=*/true);
}

void RandomSampler::load(serialize::InputArchive& archive) {
  Tensor indices;
  archive.read("indices", indices, /*is_buffer=*/true);
  const size_t index = read_count(archive, "index");
  EMBER_CHECK(indices.dim() == 1 && index <= static_cast<size_t>(indices.numel()), "RandomSampler::load",
              "expected a 1-d 'indices' with at least 'index' (", index, ") entries, got shape ", indices.sizes().vec());
  indices_ = indices.to(indices_.scalar_type());
  index_ = static_cast<int64_t>(index);
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

void DistributedRandomSampler::save(serialize::OutputArchive& archive) const {
  write_count(archive, "epoch_", epoch_);
  write_count(archive, "sample_index_", sample_index_);
}

void DistributedRandomSampler::load(serialize::InputArchive& archive) {
  const size_t sample_index = read_count(archive, "sample_index_");
  epoch_ = read_count(archive, "epoch_");
  reset(size_);
  EMBER_CHECK(sample_index >= begin_index_ && sample_index <= end_index_, "DistributedRandomSampler::load",
              "'sample_index_' ", sample_index, " is outside this replica's range [", begin_index_, ", ", end_index_,
              "]");
  sample_index_ = sample_index;
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

void DistributedSequentialSampler::save(serialize::OutputArchive& archive) const {
  write_count(archive, "sample_index_", sample_index_);
}

void DistributedSequentialSampler::load(serialize::InputArchive& archive) {
  const size_t sample_index = read_count(archive, "sample_index_");
  EMBER_CHECK(sample_index >= begin_index_ && sample_index <= end_index_, "DistributedSequentialSampler::load",
              "'sample_index_' ", sample_index, " is outside this replica's range [", begin_index_, ", ", end_index_,
              "]");
  sample_index_ = sample_index;
}

void StreamSampler::reset(std::optional<size_t> new_size) {
  if (new_size) epoch_size_ = *new_size;
  examples_retrieved_so_far_ = 0;
}

std::optional<BatchSize> StreamSampler::next(size_t batch_size) {
  if (examples_retrieved_so_far_ == epoch_size_) return std::nullopt;
  const size_t count = std::min(batch_size, epoch_size_ - examples_retrieved_so_far_);
  examples_retrieved_so_far_ += count;
  return BatchSize(count);
}

void StreamSampler::save(serialize::OutputArchive& archive) const {
  write_count(archive, "examples_retrieved_so_far", examples_retrieved_so_far_);
}

void StreamSampler::load(serialize::InputArchive& archive) {
  const size_t retrieved = read_count(archive, "examples_retrieved_so_far");
  EMBER_CHECK(retrieved <= epoch_size_, "StreamSampler::load", "'examples_retrieved_so_far' ", retrieved,
              " is past the epoch size ", epoch_size_);
  examples_retrieved_so_far_ = retrieved;
}

}  // namespace ember::data::samplers
