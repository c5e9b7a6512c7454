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

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options_) : options(options_) {
  const int64_t rows = options.num_embeddings();
  EMBER_CHECK(rows >= 0 && options.embedding_dim() >= 0, "Embedding", "num_embeddings (", rows,
              ") and embedding_dim (", options.embedding_dim(), ") must be non-negative");
  if (auto padding = options.padding_idx()) {
    EMBER_CHECK(*padding >= -rows && *padding < rows, "Embedding", "padding_idx ", *padding, " must be within [",
                -rows, ", ", rows, ")");
    if (*padding < 0) options.padding_idx(*padding + rows);
  }
  reset();
}

void EmbeddingImpl::reset() {
  weight = register_parameter("weight", empty({options.num_embeddings(), options.embedding_dim()}));
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (auto padding = options.padding_idx()) {
    NoGradGuard no_grad;
    weight[*padding].fill_(0);
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return functional::embedding(indices, weight, EmbeddingFuncOptions().padding_idx(options.padding_idx()));
}

void EmbeddingImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Embedding(num_embeddings=" << options.num_embeddings() << ", embedding_dim=" << options.embedding_dim();
  if (options.padding_idx()) stream << ", padding_idx=" << *options.padding_idx();
  stream << ")";
}

}  // namespace ember::nn
