// Loss modules over the functional losses.
#include "ember/nn/modules/loss.h"

#include "ember/nn/functional.h"

namespace ember::nn {

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& options_) : options(options_) {
  weight = register_buffer("weight", options.weight());
}
Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::cross_entropy(input, target, CrossEntropyFuncOptions(options).weight(weight));
}

NLLLossImpl::NLLLossImpl(const NLLLossOptions& options_) : options(options_) {
  weight = register_buffer("weight", options.weight());
}
Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::nll_loss(input, target, NLLLossFuncOptions(options).weight(weight));
}

MSELossImpl::MSELossImpl(const MSELossOptions& options_) : options(options_) {}
Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::mse_loss(input, target, options);
}

L1LossImpl::L1LossImpl(const L1LossOptions& options_) : options(options_) {}
Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::l1_loss(input, target, options);
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options_) : options(options_) {
  weight = register_buffer("weight", options.weight());
  pos_weight = register_buffer("pos_weight", options.pos_weight());
}
Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::binary_cross_entropy_with_logits(
      input, target, BinaryCrossEntropyWithLogitsFuncOptions(options).weight(weight).pos_weight(pos_weight));
}

KLDivLossImpl::KLDivLossImpl(const KLDivLossOptions& options_) : options(options_) {}
Tensor KLDivLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::kl_div(input, target, options);
}

}  // namespace ember::nn
