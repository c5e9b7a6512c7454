// Datasets, as torch::data::datasets: BatchDataset (yields whole batches), Dataset (random
// access by index, CRTP: class MyData : public Dataset<MyData>), StreamDataset (batches by
// size), StatefulDataset (keeps its own position; get_batch returns nullopt at the end of an
// epoch, reset() starts the next), MapDataset (a dataset with a transform applied to its
// batches, made by dataset.map(transform)), SharedBatchDataset (one dataset behind a
// shared_ptr, made by make_shared_dataset<D>(args...)) and TensorDataset. ChunkDataset is in
// chunk.h.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/data/example.h"
#include "ember/functions.h"
#include "ember/io/archive.h"
#include "ember/tensor.h"

namespace ember {
// torch::optional, which datasets' size() returns, is std::optional.
using std::nullopt;
using std::optional;
}  // namespace ember

namespace ember::data {
namespace detail {
template <typename T>
struct is_optional : std::false_type {};
template <typename T>
struct is_optional<std::optional<T>> : std::true_type {};
// optional<T> when the dataset is stateful (its batches end with nullopt), else T.
template <bool Stateful, typename T>
using optional_if_t = std::conditional_t<Stateful, std::optional<T>, T>;
// T, or the T of an optional<T>.
template <typename T>
struct unwrapped {
  using type = T;
};
template <typename T>
struct unwrapped<std::optional<T>> {
  using type = T;
};
template <typename T>
using unwrapped_t = typename unwrapped<T>::type;
}  // namespace detail
}  // namespace ember::data

namespace ember::data::datasets {

template <typename Source, typename AppliedTransform>
class MapDataset;
template <typename DatasetType, typename TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform);

// A dataset that yields data only in batches, for a request of type BatchRequest.
template <typename Self, typename Batch = std::vector<Example<>>, typename BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  static constexpr bool is_stateful = detail::is_optional<Batch>::value;

  virtual ~BatchDataset() = default;

  virtual Batch get_batch(BatchRequest request) = 0;
  // The number of examples, or nullopt for an unsized dataset.
  virtual std::optional<size_t> size() const = 0;

  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) & {
    return datasets::map(static_cast<Self&>(*this), std::move(transform));
  }
  template <typename TransformType>
  MapDataset<Self, TransformType> map(TransformType transform) && {
    return datasets::map(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

// A dataset with random access to single examples; a batch is get() of each index.
template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;

  virtual ExampleType get(size_t index) = 0;

  std::vector<ExampleType> get_batch(ArrayRef<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (const size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

// A dataset that yields batches of a requested size (a StreamSampler's BatchSize).
template <typename Self, typename Batch = std::vector<Example<>>>
using StreamDataset = BatchDataset<Self, Batch, /*BatchRequest=*/size_t>;

// A dataset that keeps its own position: get_batch returns nullopt once the epoch is over,
// reset() starts the next, save/load write and read its position. The loader reads it through
// one shared instance (its workers too).
template <typename Self, typename Batch = std::vector<Example<>>, typename BatchRequest = size_t>
class StatefulDataset : public BatchDataset<Self, std::optional<Batch>, BatchRequest> {
 public:
  virtual void reset() = 0;
  virtual void save(serialize::OutputArchive& archive) const = 0;
  virtual void load(serialize::InputArchive& archive) = 0;
};

template <typename... Args>
serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const StatefulDataset<Args...>& dataset) {
  dataset.save(archive);
  return archive;
}
template <typename... Args>
serialize::InputArchive& operator>>(serialize::InputArchive& archive, StatefulDataset<Args...>& dataset) {
  dataset.load(archive);
  return archive;
}

// A source dataset whose batches pass through a transform (transforms.h). Over a stateful
// source the batches stay optional (nullopt passes through untransformed) and reset() reaches
// the source.
template <typename Source, typename AppliedTransform>
class MapDataset
    : public BatchDataset<MapDataset<Source, AppliedTransform>,
                          detail::optional_if_t<Source::is_stateful, typename AppliedTransform::OutputBatchType>,
                          typename Source::BatchRequestType> {
 public:
  using DatasetType = Source;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename Source::BatchRequestType;
  using OutputBatchType =
      detail::optional_if_t<Source::is_stateful, typename AppliedTransform::OutputBatchType>;

  MapDataset(DatasetType dataset, TransformType transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType indices) override {
    if constexpr (Source::is_stateful) {
      auto batch = dataset_.get_batch(std::move(indices));
      if (!batch) return std::nullopt;
      return transform_.apply_batch(std::move(*batch));
    } else {
      return transform_.apply_batch(dataset_.get_batch(std::move(indices)));
    }
  }
  std::optional<size_t> size() const noexcept override { return dataset_.size(); }

  // Starts the next epoch of a stateful source.
  template <typename S = Source, typename = std::enable_if_t<S::is_stateful>>
  void reset() {
    dataset_.reset();
  }

  const Source& dataset() noexcept { return dataset_; }
  const AppliedTransform& transform() noexcept { return transform_; }

 private:
  Source dataset_;
  AppliedTransform transform_;
};

template <typename DatasetType, typename TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform) {
  static_assert(std::is_same_v<detail::unwrapped_t<typename DatasetType::BatchType>,
                               typename TransformType::InputBatchType>,
                "BatchType type of dataset does not match input type of transform");
  return {std::move(dataset), std::move(transform)};
}

// One dataset behind a shared_ptr: copies of it (the loader's, its workers') read the same
// instance. operator-> and operator* reach the dataset.
template <typename UnderlyingDataset>
class SharedBatchDataset
    : public BatchDataset<SharedBatchDataset<UnderlyingDataset>, typename UnderlyingDataset::BatchType,
                          typename UnderlyingDataset::BatchRequestType> {
 public:
  using BatchType = typename UnderlyingDataset::BatchType;
  using BatchRequestType = typename UnderlyingDataset::BatchRequestType;

  SharedBatchDataset(std::shared_ptr<UnderlyingDataset> shared_dataset)  // NOLINT: implicit, as in libtorch
      : dataset_(std::move(shared_dataset)) {}

  BatchType get_batch(BatchRequestType request) override { return dataset_->get_batch(std::move(request)); }
  std::optional<size_t> size() const override { return dataset_->size(); }

  UnderlyingDataset& operator*() { return *dataset_; }
  const UnderlyingDataset& operator*() const { return *dataset_; }
  UnderlyingDataset* operator->() { return dataset_.get(); }
  const UnderlyingDataset* operator->() const { return dataset_.get(); }

  // Starts the next epoch of a stateful dataset.
  void reset() { dataset_->reset(); }

 private:
  std::shared_ptr<UnderlyingDataset> dataset_;
};

// A SharedBatchDataset of a new UnderlyingDataset(args...).
template <typename UnderlyingDataset, typename... Args>
SharedBatchDataset<UnderlyingDataset> make_shared_dataset(Args&&... args) {
  return std::make_shared<UnderlyingDataset>(std::forward<Args>(args)...);
}

// The rows (dim 0) of one tensor; each example is a row without a target.
struct TensorDataset : public Dataset<TensorDataset, TensorExample> {
  explicit TensorDataset(const std::vector<Tensor>& tensors) : TensorDataset(ember::stack(tensors)) {}
  explicit TensorDataset(Tensor tensor);

  TensorExample get(size_t index) override;
  std::optional<size_t> size() const override;

  Tensor tensor;
};

}  // namespace ember::data::datasets
