// LayerNorm, RMSNorm and GroupNorm.
#include "ember/nn/modules/normalization.h"

#include "ember/functions.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"

namespace ember::nn {

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_) : options(options_) { reset(); }

void LayerNormImpl::reset() {
  if (options.elementwise_affine()) {
    weight = register_parameter("weight", ember::empty(options.normalized_shape()));
    bias = register_parameter("bias", options.bias() ? ember::empty(options.normalized_shape()) : Tensor(),
                              options.bias());
  }
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  return functional::layer_norm(
      input, LayerNormFuncOptions(options.normalized_shape()).weight(weight).bias(bias).eps(options.eps()));
}

void LayerNormImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::LayerNorm(" << IntArrayRef(options.normalized_shape()) << ", eps=" << options.eps()
         << ", elementwise_affine=" << (options.elementwise_affine() ? "true" : "false") << ")";
}

RMSNormImpl::RMSNormImpl(const RMSNormOptions& options_) : options(options_) { reset(); }

void RMSNormImpl::reset() {
  if (options.elementwise_affine()) weight = register_parameter("weight", ember::empty(options.normalized_shape()));
  reset_parameters();
}

void RMSNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
}

Tensor RMSNormImpl::forward(const Tensor& input) {
  return functional::rms_norm(input, RMSNormFuncOptions(options.normalized_shape()).weight(weight).eps(options.eps()));
}

void RMSNormImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::RMSNorm(" << IntArrayRef(options.normalized_shape());
  if (options.eps()) stream << ", eps=" << *options.eps();
  stream << ", elementwise_affine=" << (options.elementwise_affine() ? "true" : "false") << ")";
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options_) : options(options_) {
  EMBER_CHECK(options.num_groups() > 0 && options.num_channels() % options.num_groups() == 0, "GroupNorm",
              "num_channels (", options.num_channels(), ") must be divisible by num_groups (", options.num_groups(),
              ")");
  reset();
}

void GroupNormImpl::reset() {
  if (options.affine()) {
    weight = register_parameter("weight", ember::empty({options.num_channels()}));
    bias = register_parameter("bias", ember::empty({options.num_channels()}));
  }
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor GroupNormImpl::forward(const Tensor& input) {
  return functional::group_norm(
      input, GroupNormFuncOptions(options.num_groups()).weight(weight).bias(bias).eps(options.eps()));
}

void GroupNormImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::GroupNorm(" << options.num_groups() << ", " << options.num_channels() << ", eps=" << options.eps()
         << ", affine=" << (options.affine() ? "true" : "false") << ")";
}

}  // namespace ember::nn

namespace ember::nn {

// The window sum of x^2 over channels is a sum of 2h + 1 shifted slices of the zero-padded
// squares (h = (size - 1) / 2), so autograd gives the exact gradient.
Tensor CrossMapLRN2dImpl::forward(const Tensor& input) {
  const char* op = "CrossMapLRN2d";
  EMBER_CHECK(input.dim() == 4, op, "expected a 4-D input [N, C, H, W], got shape ", input.sizes());
  EMBER_CHECK(options.size() >= 1, op, "size must be positive, got ", options.size());
  const int64_t channels = input.size(1), half = (options.size() - 1) / 2;
  Tensor squares = functional::pad(input.square(), PadFuncOptions({0, 0, 0, 0, half, half}));
  Tensor window = squares.narrow(1, 0, channels);
  for (int64_t shift = 1; shift <= 2 * half; ++shift) window = window + squares.narrow(1, shift, channels);
  Tensor scale = window * (options.alpha() / static_cast<double>(options.size())) + static_cast<double>(options.k());
  return input * scale.pow(-options.beta());
}

void CrossMapLRN2dImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::CrossMapLRN2d(" << options.size() << ", alpha=" << options.alpha() << ", beta=" << options.beta()
         << ", k=" << options.k() << ")";
}

}  // namespace ember::nn

namespace ember::nn {

Tensor LocalResponseNormImpl::forward(const Tensor& input) { return functional::local_response_norm(input, options); }

void LocalResponseNormImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::LocalResponseNorm(" << options.size() << ", alpha=" << options.alpha() << ", beta=" << options.beta()
         << ", k=" << options.k() << ")";
}

}  // namespace ember::nn
