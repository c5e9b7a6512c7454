// Dropout and activation modules.
#include "ember/nn/modules/activation.h"

#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn {

DropoutImpl::DropoutImpl(const DropoutOptions& options_) : options(options_) {
  EMBER_CHECK(options.p() >= 0 && options.p() <= 1, "Dropout", "probability has to be between 0 and 1, but got ",
              options.p());
}
Tensor DropoutImpl::forward(const Tensor& input) {
  return functional::dropout(input, DropoutFuncOptions().p(options.p()).training(is_training()));
}
void DropoutImpl::pretty_print(std::ostream& stream) const { stream << "Dropout(p=" << options.p() << ")"; }

Dropout2dImpl::Dropout2dImpl(const Dropout2dOptions& options_) : options(options_) {
  EMBER_CHECK(options.p() >= 0 && options.p() <= 1, "Dropout2d", "probability has to be between 0 and 1, but got ",
              options.p());
}
Tensor Dropout2dImpl::forward(const Tensor& input) {
  return functional::dropout2d(input, Dropout2dFuncOptions().p(options.p()).training(is_training()));
}
void Dropout2dImpl::pretty_print(std::ostream& stream) const { stream << "Dropout2d(p=" << options.p() << ")"; }

Tensor ReLUImpl::forward(const Tensor& input) { return ember::relu(input); }

GELUImpl::GELUImpl(const GELUOptions& options_) : options(options_) {
  EMBER_CHECK(options.approximate() == "none" || options.approximate() == "tanh", "GELU",
              "approximate must be 'none' or 'tanh', got '", options.approximate(), "'");
}
Tensor GELUImpl::forward(const Tensor& input) { return ember::gelu(input, options.approximate()); }
void GELUImpl::pretty_print(std::ostream& stream) const {
  stream << "GELU(approximate='" << options.approximate() << "')";
}

Tensor SiLUImpl::forward(const Tensor& input) { return ember::silu(input); }
Tensor TanhImpl::forward(const Tensor& input) { return ember::tanh(input); }
Tensor SigmoidImpl::forward(const Tensor& input) { return ember::sigmoid(input); }

SoftmaxImpl::SoftmaxImpl(const SoftmaxOptions& options_) : options(options_) {}
Tensor SoftmaxImpl::forward(const Tensor& input) { return ember::softmax(input, options.dim()); }
void SoftmaxImpl::pretty_print(std::ostream& stream) const { stream << "Softmax(dim=" << options.dim() << ")"; }

LogSoftmaxImpl::LogSoftmaxImpl(const LogSoftmaxOptions& options_) : options(options_) {}
Tensor LogSoftmaxImpl::forward(const Tensor& input) { return ember::log_softmax(input, options.dim()); }
void LogSoftmaxImpl::pretty_print(std::ostream& stream) const { stream << "LogSoftmax(dim=" << options.dim() << ")"; }

}  // namespace ember::nn
