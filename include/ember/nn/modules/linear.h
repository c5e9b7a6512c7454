// Linear and Embedding layers.
#pragma once
#include "ember/nn/module.h"
#include "ember/nn/options.h"

namespace ember::nn {

// y = x @ weight^T + bias. weight [out, in] ~ kaiming_uniform(a=sqrt(5)), i.e.
// U(+-1/sqrt(in)); bias ~ U(+-1/sqrt(in)), as PyTorch.
class LinearImpl : public Cloneable<LinearImpl> {
 public:
  LinearImpl(int64_t in_features, int64_t out_features) : LinearImpl(LinearOptions(in_features, out_features)) {}
  explicit LinearImpl(const LinearOptions& options);

  // input [*, in] -> [*, out].
  Tensor forward(const Tensor& input);
  // Registers the parameters and initialises them.
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  LinearOptions options;
  Tensor weight;
  Tensor bias;  // undefined when options.bias() is false
};
EMBER_MODULE(Linear);

// A lookup table: row i of weight [num_embeddings, embedding_dim] ~ N(0, 1) for index i;
// the padding_idx row starts at zero and gets no gradient.
class EmbeddingImpl : public Cloneable<EmbeddingImpl> {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(const EmbeddingOptions& options);

  // indices (integer, any shape) -> [*indices, embedding_dim].
  Tensor forward(const Tensor& indices);
  // Registers the parameters and initialises them.
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  EmbeddingOptions options;
  Tensor weight;
};
EMBER_MODULE(Embedding);

// Returns its input (libtorch's takes no constructor arguments, unlike Python's).
class IdentityImpl : public Cloneable<IdentityImpl> {
 public:
  void reset() override {}
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
};
EMBER_MODULE(Identity);

// input.flatten(start_dim, end_dim); defaults keep the batch dim: [N, *] -> [N, prod(*)].
class FlattenImpl : public Cloneable<FlattenImpl> {
 public:
  void reset() override {}
  explicit FlattenImpl(const FlattenOptions& options = {});
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  FlattenOptions options;
};
EMBER_MODULE(Flatten);

// input.unflatten(dim, sizes): dim becomes `sizes` (one entry may be -1, inferred).
class UnflattenImpl : public Cloneable<UnflattenImpl> {
 public:
  void reset() override {}
  UnflattenImpl(int64_t dim, std::vector<int64_t> sizes) : UnflattenImpl(UnflattenOptions(dim, std::move(sizes))) {}
  explicit UnflattenImpl(UnflattenOptions options);
  Tensor forward(const Tensor& input);
  void pretty_print(std::ostream& stream) const override;
  UnflattenOptions options;
};
EMBER_MODULE(Unflatten);

}  // namespace ember::nn
