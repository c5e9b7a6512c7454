// Datasets, as torch::data::datasets: BatchDataset (yields whole batches), Dataset (random
// access by index, CRTP: class MyData : public Dataset<MyData>), MapDataset (a dataset with a
// transform applied to its batches, made by dataset.map(transform)) and TensorDataset.
//
// Differences from libtorch: no stateful (chunk) datasets, so no StreamDataset or
// ChunkDataset.
#pragma once
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "ember/data/example.h"
#include "ember/functions.h"
#include "ember/tensor.h"

namespace ember {
// torch::optional, which datasets' size() returns, is std::optional.
using std::nullopt;
using std::optional;
}  // namespace ember

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
  static constexpr bool is_stateful = false;

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

// A source dataset whose batches pass through a transform (transforms.h).
template <typename Source, typename AppliedTransform>
class MapDataset : public BatchDataset<MapDataset<Source, AppliedTransform>,
                                       typename AppliedTransform::OutputBatchType,
                                       typename Source::BatchRequestType> {
 public:
  using DatasetType = Source;
  using TransformType = AppliedTransform;
  using BatchRequestType = typename Source::BatchRequestType;
  using OutputBatchType = typename AppliedTransform::OutputBatchType;

  MapDataset(DatasetType dataset, TransformType transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}

  OutputBatchType get_batch(BatchRequestType indices) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(indices)));
  }
  std::optional<size_t> size() const noexcept override { return dataset_.size(); }

  const Source& dataset() noexcept { return dataset_; }
  const AppliedTransform& transform() noexcept { return transform_; }

 private:
  Source dataset_;
  AppliedTransform transform_;
};

template <typename DatasetType, typename TransformType>
MapDataset<DatasetType, TransformType> map(DatasetType dataset, TransformType transform) {
  static_assert(std::is_same_v<typename DatasetType::BatchType, typename TransformType::InputBatchType>,
                "BatchType type of dataset does not match input type of transform");
  return {std::move(dataset), std::move(transform)};
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
