// Options objects for modules and functional forms, as libtorch's torch::nn::*Options:
// required values go to the constructor, the rest are chainable setters
// (LinearOptions(4, 8).bias(false)). A functional form with the same knobs uses the same
// class under a *FuncOptions alias.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ember/arg.h"
#include "ember/nn/enums.h"
#include "ember/nn/options/activation.h"
#include "ember/nn/options/distance.h"
#include "ember/nn/options/loss.h"
#include "ember/nn/options/normalization.h"
#include "ember/nn/options/transformer.h"
#include "ember/nn/options/upsampling.h"
#include "ember/nn/options/vision.h"
#include "ember/tensor.h"

namespace ember::nn {

// ---- layers ---------------------------------------------------------------------------------

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  EMBER_ARG(int64_t, in_features);
  EMBER_ARG(int64_t, out_features);
  EMBER_ARG(bool, bias) = true;
};

struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  EMBER_ARG(int64_t, num_embeddings);
  EMBER_ARG(int64_t, embedding_dim);
  // This row stays zero and gets no gradient; negative values count from the end.
  EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  // The weight itself (shape [num_embeddings, embedding_dim]) instead of a random one.
  EMBER_ARG(Tensor, _weight) = {};
};

// Embedding::from_pretrained: freeze keeps the given weight from requiring grad.
struct EmbeddingFromPretrainedOptions {
  EMBER_ARG(bool, freeze) = true;
  EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

struct EmbeddingFuncOptions {
  EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

// EmbeddingBag's reduction of each bag: ember::kSum, kMean or kMax.
class EmbeddingBagMode {
 public:
  enum class Kind { Sum, Mean, Max };
  EmbeddingBagMode(Reduction reduction);  // NOLINT: kSum or kMean
  EmbeddingBagMode(enumtype::kMax) : kind_(Kind::Max) {}  // NOLINT
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// Differs from libtorch: no max_norm / norm_type / scale_grad_by_freq / sparse here.
struct EmbeddingBagFuncOptions {
  // Where each bag starts in a 1-D input; must be unset for a 2-D input (one bag per row).
  EMBER_ARG(Tensor, offsets) = {};
  EMBER_ARG(EmbeddingBagMode, mode) = Reduction::Mean;
  // One weight per input index, multiplying its row (kSum only).
  EMBER_ARG(Tensor, per_sample_weights) = {};
  // offsets has one more value, the end of the last bag.
  EMBER_ARG(bool, include_last_offset) = false;
  // Indices equal to this are left out of their bag (negative values count from the end).
  EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

// y = x1^T W x2 + b with weight [out_features, in1_features, in2_features].
struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {}
  EMBER_ARG(int64_t, in1_features);
  EMBER_ARG(int64_t, in2_features);
  EMBER_ARG(int64_t, out_features);
  EMBER_ARG(bool, bias) = true;
};

// EmbeddingBag: sums, means or maxes of the embeddings of each bag (F::embedding_bag).
struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  EMBER_ARG(int64_t, num_embeddings);
  EMBER_ARG(int64_t, embedding_dim);
  EMBER_ARG(EmbeddingBagMode, mode) = Reduction::Mean;
  EMBER_ARG(bool, include_last_offset) = false;
  EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  // The weight itself (shape [num_embeddings, embedding_dim]) instead of a random one.
  EMBER_ARG(Tensor, _weight) = {};
};

struct EmbeddingBagFromPretrainedOptions {
  EMBER_ARG(bool, freeze) = true;
  EMBER_ARG(EmbeddingBagMode, mode) = Reduction::Mean;
  EMBER_ARG(bool, include_last_offset) = false;
  EMBER_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  EMBER_ARG(std::vector<int64_t>, normalized_shape);
  EMBER_ARG(double, eps) = 1e-5;
  EMBER_ARG(bool, elementwise_affine) = true;
  // Whether the affine transform has a bias (PyTorch's bias=True); needs elementwise_affine.
  EMBER_ARG(bool, bias) = true;
};

struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  EMBER_ARG(std::vector<int64_t>, normalized_shape);
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Tensor, bias) = {};
  EMBER_ARG(double, eps) = 1e-5;
};

struct RMSNormOptions {
  RMSNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  EMBER_ARG(std::vector<int64_t>, normalized_shape);
  // Unset: the machine epsilon of the input's dtype, as PyTorch.
  EMBER_ARG(std::optional<double>, eps) = std::nullopt;
  EMBER_ARG(bool, elementwise_affine) = true;
};

struct RMSNormFuncOptions {
  RMSNormFuncOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}  // NOLINT
  EMBER_ARG(std::vector<int64_t>, normalized_shape);
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(std::optional<double>, eps) = std::nullopt;
};

// inplace: the module writes its result into its input and returns the input.
struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT
  EMBER_ARG(double, p);
  EMBER_ARG(bool, inplace) = false;
};

struct DropoutFuncOptions {
  EMBER_ARG(double, p) = 0.5;
  EMBER_ARG(bool, training) = true;
  // Write the result into the input (in training; the input is returned as it is otherwise).
  EMBER_ARG(bool, inplace) = false;
};
// Alpha dropout keeps a SELU network's zero mean and unit variance; note the default
// training = false, as libtorch's.
struct AlphaDropoutFuncOptions {
  EMBER_ARG(double, p) = 0.5;
  EMBER_ARG(bool, training) = false;
  EMBER_ARG(bool, inplace) = false;
};
using FeatureAlphaDropoutFuncOptions = AlphaDropoutFuncOptions;
// Dropout1d/2d/3d, AlphaDropout and FeatureAlphaDropout take Dropout's options, as in libtorch.
using AlphaDropoutOptions = DropoutOptions;
using FeatureAlphaDropoutOptions = DropoutOptions;
using Dropout1dOptions = DropoutOptions;
using Dropout2dOptions = DropoutOptions;
using Dropout3dOptions = DropoutOptions;
using Dropout1dFuncOptions = DropoutFuncOptions;
using Dropout2dFuncOptions = DropoutFuncOptions;
using Dropout3dFuncOptions = DropoutFuncOptions;

struct FlattenOptions {
  EMBER_ARG(int64_t, start_dim) = 1;
  EMBER_ARG(int64_t, end_dim) = -1;
};

// Differs from libtorch: no named-tensor form (dimname, namedshape); ember has no dim names.
struct UnflattenOptions {
  UnflattenOptions(int64_t dim, std::vector<int64_t> sizes) : dim_(dim), sizes_(std::move(sizes)) {}
  EMBER_ARG(int64_t, dim);
  EMBER_ARG(std::vector<int64_t>, sizes);
};

// ---- activations ---------------------------------------------------------------------------

struct GELUOptions {
  // "none" (exact, with erf) or "tanh".
  EMBER_ARG(std::string, approximate) = "none";
};
using GELUFuncOptions = GELUOptions;

struct SoftmaxOptions {
  SoftmaxOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  EMBER_ARG(int64_t, dim);
};

struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  EMBER_ARG(int64_t, dim);
  // Converts the input to this dtype first.
  EMBER_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};

using LogSoftmaxOptions = SoftmaxOptions;
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;

// ---- recurrent -----------------------------------------------------------------------------

struct RNNOptionsBase {
  RNNOptionsBase(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  EMBER_ARG(int64_t, input_size);
  EMBER_ARG(int64_t, hidden_size);
  EMBER_ARG(int64_t, num_layers) = 1;
  EMBER_ARG(bool, bias) = true;
  // Input and output as [batch, seq, feature] instead of [seq, batch, feature]; the states
  // stay [layers * directions, batch, hidden] either way.
  EMBER_ARG(bool, batch_first) = false;
  // Dropout on the outputs of every layer but the last, in training mode.
  EMBER_ARG(double, dropout) = 0.0;
  EMBER_ARG(bool, bidirectional) = false;
  // LSTM only: the hidden state is projected to proj_size features (weight_hr); 0 for none.
  EMBER_ARG(int64_t, proj_size) = 0;
};

using LSTMOptions = RNNOptionsBase;
using GRUOptions = RNNOptionsBase;

// The options of the Elman RNN: those of RNNOptionsBase and its nonlinearity (ember::kTanh
// or ember::kReLU).
struct RNNOptions {
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  EMBER_ARG(int64_t, input_size);
  EMBER_ARG(int64_t, hidden_size);
  EMBER_ARG(int64_t, num_layers) = 1;
  EMBER_ARG(Nonlinearity, nonlinearity) = Nonlinearity::Tanh;
  EMBER_ARG(bool, bias) = true;
  EMBER_ARG(bool, batch_first) = false;
  EMBER_ARG(double, dropout) = 0.0;
  EMBER_ARG(bool, bidirectional) = false;
};

struct RNNCellOptionsBase {
  RNNCellOptionsBase(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  EMBER_ARG(int64_t, input_size);
  EMBER_ARG(int64_t, hidden_size);
  EMBER_ARG(bool, bias) = true;
};

using LSTMCellOptions = RNNCellOptionsBase;
using GRUCellOptions = RNNCellOptionsBase;

// ---- losses ---------------------------------------------------------------------------------

struct CrossEntropyLossOptions {
  // Per-class weights [C].
  EMBER_ARG(Tensor, weight) = {};
  // Targets equal to this are skipped (class-index targets only).
  EMBER_ARG(int64_t, ignore_index) = -100;
  EMBER_ARG(Reduction, reduction) = kMean;
  EMBER_ARG(double, label_smoothing) = 0.0;
};
using CrossEntropyFuncOptions = CrossEntropyLossOptions;

struct NLLLossOptions {
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(int64_t, ignore_index) = -100;
  EMBER_ARG(Reduction, reduction) = kMean;
};
using NLLLossFuncOptions = NLLLossOptions;

struct MSELossOptions {
  MSELossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  EMBER_ARG(Reduction, reduction);
};
using MSELossFuncOptions = MSELossOptions;


struct L1LossOptions {
  L1LossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  EMBER_ARG(Reduction, reduction);
};
using L1LossFuncOptions = L1LossOptions;

struct BCEWithLogitsLossOptions {
  // Rescales each element's loss; broadcast against the input.
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Reduction, reduction) = kMean;
  // Weight of positive examples, broadcast along the last (class) dimension.
  EMBER_ARG(Tensor, pos_weight) = {};
};
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsLossOptions;

struct KLDivLossOptions {
  KLDivLossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  // kBatchMean divides the sum by the batch size (the mathematically correct KL divergence).
  EMBER_ARG(Reduction, reduction);
  // The target holds log-probabilities.
  EMBER_ARG(bool, log_target) = false;
};
using KLDivFuncOptions = KLDivLossOptions;

// Functional options are also reachable as in libtorch: F::LayerNormFuncOptions(...).
namespace functional {
using nn::BinaryCrossEntropyWithLogitsFuncOptions;
using nn::CrossEntropyFuncOptions;
using nn::Dropout1dFuncOptions;
using nn::Dropout2dFuncOptions;
using nn::Dropout3dFuncOptions;
using nn::AlphaDropoutFuncOptions;
using nn::DropoutFuncOptions;
using nn::FeatureAlphaDropoutFuncOptions;
using nn::EmbeddingBagFuncOptions;
using nn::EmbeddingFuncOptions;
using nn::GELUFuncOptions;
using nn::KLDivFuncOptions;
using nn::L1LossFuncOptions;
using nn::LayerNormFuncOptions;
using nn::LogSoftmaxFuncOptions;
using nn::MSELossFuncOptions;
using nn::NLLLossFuncOptions;
using nn::RMSNormFuncOptions;
using nn::SoftmaxFuncOptions;
}  // namespace functional

}  // namespace ember::nn
