// Linear and Embedding layers.
#pragma once
#include "ember/nn/module.h"
#include "ember/nn/modules/any_value.h"
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
// The holder, with libtorch's from_pretrained: an Embedding over the 2-D `embeddings`.
class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder<EmbeddingImpl>::ModuleHolder;
  using Impl = EmbeddingImpl;
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});
};

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

// Parameters weight [out, in1, in2] and bias [out], both ~ U(+-1/sqrt(in1_features)).
class BilinearImpl : public Module {
 public:
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : BilinearImpl(BilinearOptions(in1_features, in2_features, out_features)) {}
  explicit BilinearImpl(const BilinearOptions& options);
  Tensor forward(const Tensor& input1, const Tensor& input2);
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  BilinearOptions options;
  Tensor weight;
  Tensor bias;
};
EMBER_MODULE(Bilinear);

// weight [num_embeddings, embedding_dim] ~ N(0, 1); input [B, L] (one bag per row) or 1-D with
// offsets (bag starts).
class EmbeddingBagImpl : public Module {
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingBagImpl(EmbeddingBagOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingBagImpl(const EmbeddingBagOptions& options);
  Tensor forward(const Tensor& input, const Tensor& offsets = {}, const Tensor& per_sample_weights = {});
  EMBER_FORWARD_HAS_DEFAULT_ARGS({1, AnyValue(Tensor())}, {2, AnyValue(Tensor())})
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  EmbeddingBagOptions options;
  Tensor weight;
};

class EmbeddingBag : public ModuleHolder<EmbeddingBagImpl> {
 public:
  using ModuleHolder<EmbeddingBagImpl>::ModuleHolder;
  using Impl = EmbeddingBagImpl;
  static EmbeddingBag from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options = {});
};

}  // namespace ember::nn
