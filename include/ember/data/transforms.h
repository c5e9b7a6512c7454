// Transforms, as torch::data::transforms: a BatchTransform maps a batch to a batch; a
// Transform maps single examples (its batch form maps each one). Lambda/BatchLambda wrap a
// function, Collation/Collate turn a vector of examples into one batch, Stack<> stacks data
// and targets, TensorTransform/TensorLambda/Normalize<> act on an Example's data tensor.
#pragma once
#include <functional>
#include <utility>
#include <vector>

#include "ember/data/datasets.h"
#include "ember/data/example.h"
#include "ember/functions.h"
#include "ember/tensor.h"

namespace ember::data::transforms {

template <typename InputBatch, typename OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;

  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

template <typename Input, typename Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;

  virtual OutputType apply(InputType input) = 0;

  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> output_batch;
    output_batch.reserve(input_batch.size());
    for (auto&& input : input_batch) output_batch.push_back(apply(std::move(input)));
    return output_batch;
  }
};

template <typename Input, typename Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using typename BatchTransform<Input, Output>::InputBatchType;
  using typename BatchTransform<Input, Output>::OutputBatchType;
  using FunctionType = std::function<OutputBatchType(InputBatchType)>;

  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  OutputBatchType apply_batch(InputBatchType input_batch) override { return function_(std::move(input_batch)); }

 private:
  FunctionType function_;
};

template <typename Input, typename Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using typename Transform<Input, Output>::InputType;
  using typename Transform<Input, Output>::OutputType;
  using FunctionType = std::function<Output(Input)>;

  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  OutputType apply(InputType input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// A transform from a vector of examples to one batch.
template <typename T, typename BatchType = std::vector<T>>
using Collation = BatchTransform<BatchType, T>;
template <typename T, typename BatchType = std::vector<T>>
using Collate = BatchLambda<BatchType, T>;

template <typename T = Example<>>
struct Stack;

// Stacks the data tensors into one tensor and the targets into another (new dim 0).
template <>
struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override {
    std::vector<Tensor> data, targets;
    data.reserve(examples.size());
    targets.reserve(examples.size());
    for (auto& example : examples) {
      data.push_back(std::move(example.data));
      targets.push_back(std::move(example.target));
    }
    return {ember::stack(data), ember::stack(targets)};
  }
};

template <>
struct Stack<TensorExample> : public Collation<Example<Tensor, example::NoTarget>> {
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    std::vector<Tensor> data;
    data.reserve(examples.size());
    for (auto& example : examples) data.push_back(std::move(example.data));
    return ember::stack(data);
  }
};

// A transform of an Example's data tensor; the target passes through.
template <typename Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  using typename Transform<E, E>::InputType;
  using typename Transform<E, E>::OutputType;

  virtual Tensor operator()(Tensor input) = 0;

  OutputType apply(InputType input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

template <typename Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;

  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// (input - mean) / stddev, with mean and stddev float32 tensors of shape [n, 1, 1] made of the
// n given values, as libtorch's: n values normalize the n channels of a [n, H, W] image, and a
// 2-d [H, W] sample broadcasts to [n, H, W]. Differs from libtorch: a zero stddev is an
// ember::Error.
template <typename Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  Normalize(ArrayRef<double> mean, ArrayRef<double> stddev)
      : mean(channel_values(mean)), stddev(channel_values(stddev)) {
    for (const double s : stddev) EMBER_CHECK(s != 0, "Normalize", "stddev must be non-zero, got ", stddev.vec());
  }
  Normalize(double mean, double stddev) : Normalize(ArrayRef<double>(mean), ArrayRef<double>(stddev)) {}

  Tensor operator()(Tensor input) override { return input.sub(mean).div(stddev); }

  Tensor mean, stddev;

 private:
  static Tensor channel_values(ArrayRef<double> values) {
    return ember::tensor(values.vec(), kFloat32).view({-1, 1, 1});
  }
};

}  // namespace ember::data::transforms
