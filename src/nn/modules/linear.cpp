// Linear and Embedding.
#include "ember/nn/modules/linear.h"

#include <cmath>

#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"

namespace ember::nn {

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
  EMBER_CHECK(options.in_features() >= 0 && options.out_features() >= 0, "Linear", "in_features (",
              options.in_features(), ") and out_features (", options.out_features(), ") must be non-negative");
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter("weight", empty({options.out_features(), options.in_features()}));
  bias = register_parameter("bias", options.bias() ? empty({options.out_features()}) : Tensor(), options.bias());
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = options.in_features();
    const double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor LinearImpl::forward(const Tensor& input) { return functional::linear(input, weight, bias); }

void LinearImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Linear(in_features=" << options.in_features() << ", out_features=" << options.out_features()
         << ", bias=" << (options.bias() ? "true" : "false") << ")";
}

namespace {

// The sizes and padding_idx of an embedding table checked; padding_idx counted from the start.
std::optional<int64_t> checked_padding_idx(const char* op, int64_t rows, int64_t dim, std::optional<int64_t> padding) {
  EMBER_CHECK(rows >= 0 && dim >= 0, op, "num_embeddings (", rows, ") and embedding_dim (", dim,
              ") must be non-negative");
  if (!padding) return padding;
  EMBER_CHECK(*padding >= -rows && *padding < rows, op, "padding_idx ", *padding, " must be within [", -rows, ", ",
              rows, ")");
  return *padding < 0 ? *padding + rows : *padding;
}

// The given table (options._weight()) after a shape check, or a new uninitialised one.
Tensor table_weight(const char* op, int64_t rows, int64_t dim, const Tensor& given) {
  if (!given.defined()) return empty({rows, dim});
  EMBER_CHECK((given.sizes() == std::vector<int64_t>{rows, dim}), op, "_weight of shape ", given.sizes(),
              " must be [num_embeddings, embedding_dim] = [", rows, ", ", dim, "]");
  return given;
}

// N(0, 1) entries, the padding row zero.
void reset_table(const Tensor& weight, std::optional<int64_t> padding) {
  init::normal_(weight);
  if (padding) {
    NoGradGuard no_grad;
    weight[*padding].fill_(0);
  }
}

}  // namespace

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options_) : options(options_) {
  options.padding_idx(
      checked_padding_idx("Embedding", options.num_embeddings(), options.embedding_dim(), options.padding_idx()));
  reset();
}

void EmbeddingImpl::reset() {
  const int64_t rows = options.num_embeddings(), dim = options.embedding_dim();
  weight = register_parameter("weight", table_weight("Embedding", rows, dim, options._weight()));
  if (!options._weight().defined()) reset_parameters();
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options) {
  EMBER_CHECK(embeddings.dim() == 2, "Embedding::from_pretrained", "embeddings must be 2-D, got shape ",
              embeddings.sizes());
  Embedding embedding(EmbeddingOptions(embeddings.size(0), embeddings.size(1))
                          ._weight(embeddings)
                          .padding_idx(options.padding_idx()));
  embedding->weight.requires_grad_(!options.freeze());
  return embedding;
}

void EmbeddingImpl::reset_parameters() { reset_table(weight, options.padding_idx()); }

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return functional::embedding(indices, weight, EmbeddingFuncOptions().padding_idx(options.padding_idx()));
}

void EmbeddingImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Embedding(num_embeddings=" << options.num_embeddings() << ", embedding_dim=" << options.embedding_dim();
  if (options.padding_idx()) stream << ", padding_idx=" << *options.padding_idx();
  stream << ")";
}

BilinearImpl::BilinearImpl(const BilinearOptions& options_) : options(options_) {
  weight = register_parameter("weight",
                              empty({options.out_features(), options.in1_features(), options.in2_features()}));
  bias = register_parameter("bias", options.bias() ? empty({options.out_features()}) : Tensor(), options.bias());
  reset_parameters();
}

void BilinearImpl::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(weight.size(1)));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor BilinearImpl::forward(const Tensor& input1, const Tensor& input2) {
  return functional::bilinear(input1, input2, weight, bias);
}

void BilinearImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Bilinear(in1_features=" << options.in1_features() << ", in2_features=" << options.in2_features()
         << ", out_features=" << options.out_features() << ", bias=" << (options.bias() ? "true" : "false") << ")";
}

EmbeddingBagImpl::EmbeddingBagImpl(const EmbeddingBagOptions& options_) : options(options_) {
  const int64_t rows = options.num_embeddings(), dim = options.embedding_dim();
  options.padding_idx(checked_padding_idx("EmbeddingBag", rows, dim, options.padding_idx()));
  weight = register_parameter("weight", table_weight("EmbeddingBag", rows, dim, options._weight()));
  if (!options._weight().defined()) reset_parameters();
}

void EmbeddingBagImpl::reset_parameters() { reset_table(weight, options.padding_idx()); }

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  return functional::embedding_bag(input, weight,
                                   EmbeddingBagFuncOptions()
                                       .offsets(offsets)
                                       .mode(options.mode())
                                       .per_sample_weights(per_sample_weights)
                                       .include_last_offset(options.include_last_offset())
                                       .padding_idx(options.padding_idx()));
}

void EmbeddingBagImpl::pretty_print(std::ostream& stream) const {
  static const char* const modes[] = {"kSum", "kMean", "kMax"};
  stream << "ember::nn::EmbeddingBag(num_embeddings=" << options.num_embeddings() << ", embedding_dim=" << options.embedding_dim();
  if (options.mode().kind() != EmbeddingBagMode::Kind::Mean)
    stream << ", mode=" << modes[static_cast<int>(options.mode().kind())];
  if (options.include_last_offset()) stream << ", include_last_offset=true";
  if (options.padding_idx()) stream << ", padding_idx=" << *options.padding_idx();
  stream << ")";
}

EmbeddingBag EmbeddingBag::from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options) {
  EMBER_CHECK(embeddings.dim() == 2, "EmbeddingBag::from_pretrained", "embeddings must be 2-D, got shape ",
              embeddings.sizes());
  EmbeddingBag bag(EmbeddingBagOptions(embeddings.size(0), embeddings.size(1))
                       ._weight(embeddings)
                       .mode(options.mode())
                       .include_last_offset(options.include_last_offset())
                       .padding_idx(options.padding_idx()));
  bag->weight.requires_grad_(!options.freeze());
  return bag;
}

}  // namespace ember::nn
