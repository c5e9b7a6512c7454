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
  return functional::dropout(
      input, DropoutFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace()));
}
void DropoutImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Dropout(p=" << options.p() << ", inplace=" << (options.inplace() ? "true" : "false") << ")";
}

Tensor ReLUImpl::forward(const Tensor& input) { return functional::relu(input, options); }
void ReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::ReLU(" << (options.inplace() ? "inplace=true" : "") << ")";
}

GELUImpl::GELUImpl(const GELUOptions& options_) : options(options_) {
  EMBER_CHECK(options.approximate() == "none" || options.approximate() == "tanh", "GELU",
              "approximate must be 'none' or 'tanh', got '", options.approximate(), "'");
}
Tensor GELUImpl::forward(const Tensor& input) { return ember::gelu(input, options.approximate()); }
void GELUImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::GELU(approximate='" << options.approximate() << "')";
}

Tensor SiLUImpl::forward(const Tensor& input) { return ember::silu(input); }
void SiLUImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::SiLU()"; }
Tensor TanhImpl::forward(const Tensor& input) { return ember::tanh(input); }
void TanhImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::Tanh()"; }
Tensor SigmoidImpl::forward(const Tensor& input) { return ember::sigmoid(input); }
void SigmoidImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::Sigmoid()"; }

SoftmaxImpl::SoftmaxImpl(const SoftmaxOptions& options_) : options(options_) {}
Tensor SoftmaxImpl::forward(const Tensor& input) { return ember::softmax(input, options.dim()); }
void SoftmaxImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::Softmax(dim=" << options.dim() << ")"; }

LogSoftmaxImpl::LogSoftmaxImpl(const LogSoftmaxOptions& options_) : options(options_) {}
Tensor LogSoftmaxImpl::forward(const Tensor& input) { return ember::log_softmax(input, options.dim()); }
void LogSoftmaxImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::LogSoftmax(dim=" << options.dim() << ")"; }

LeakyReLUImpl::LeakyReLUImpl(const LeakyReLUOptions& options_) : options(options_) {}
Tensor LeakyReLUImpl::forward(const Tensor& input) { return functional::leaky_relu(input, options); }
void LeakyReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::LeakyReLU(negative_slope=" << options.negative_slope() << (options.inplace() ? ", inplace=true" : "")
         << ")";
}

ELUImpl::ELUImpl(const ELUOptions& options_) : options(options_) {}
Tensor ELUImpl::forward(const Tensor& input) { return functional::elu(input, options); }
void ELUImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::ELU(alpha=" << options.alpha() << (options.inplace() ? ", inplace=true" : "") << ")";
}

ReLU6Impl::ReLU6Impl(const ReLU6Options& options_) : options(options_) {}
Tensor ReLU6Impl::forward(const Tensor& input) { return functional::relu6(input, options); }
void ReLU6Impl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::ReLU6(" << (options.inplace() ? "inplace=true" : "") << ")";
}

SoftplusImpl::SoftplusImpl(const SoftplusOptions& options_) : options(options_) {}
Tensor SoftplusImpl::forward(const Tensor& input) { return functional::softplus(input, options); }
void SoftplusImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Softplus(beta=" << options.beta() << ", threshold=" << options.threshold() << ")";
}

HardtanhImpl::HardtanhImpl(const HardtanhOptions& options_) : options(options_) { reset(); }
void HardtanhImpl::reset() {
  EMBER_CHECK(options.max_val() > options.min_val(), "Hardtanh", "max_val (", options.max_val(),
              ") must be greater than min_val (", options.min_val(), ")");
}
Tensor HardtanhImpl::forward(const Tensor& input) { return functional::hardtanh(input, options); }
void HardtanhImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Hardtanh(min_val=" << options.min_val() << ", max_val=" << options.max_val()
         << (options.inplace() ? ", inplace=true" : "") << ")";
}

GLUImpl::GLUImpl(const GLUOptions& options_) : options(options_) {}
Tensor GLUImpl::forward(const Tensor& input) { return functional::glu(input, options); }
void GLUImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::GLU(dim=" << options.dim() << ")"; }

PReLUImpl::PReLUImpl(const PReLUOptions& options_) : options(options_) {
  EMBER_CHECK(options.num_parameters() >= 1, "PReLU", "num_parameters must be at least 1, got ",
              options.num_parameters());
  reset();
}
void PReLUImpl::reset() { weight = register_parameter("weight", full({options.num_parameters()}, options.init())); }
Tensor PReLUImpl::forward(const Tensor& input) { return functional::prelu(input, weight); }
void PReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::PReLU(num_parameters=" << options.num_parameters() << ")";
}

Tensor MishImpl::forward(const Tensor& input) { return functional::mish(input); }
void MishImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::Mish()"; }

Tensor Softmax2dImpl::forward(const Tensor& input) {
  EMBER_CHECK(input.dim() == 3 || input.dim() == 4, "Softmax2d", "expected a 3-D or 4-D input, got shape ",
              input.sizes());
  return ember::softmax(input, -3);
}
void Softmax2dImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::Softmax2d()"; }

SELUImpl::SELUImpl(const SELUOptions& options_) : options(options_) {}
Tensor SELUImpl::forward(const Tensor& input) { return functional::selu(input, options); }
void SELUImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::SELU(" << (options.inplace() ? "inplace=true" : "") << ")";
}

CELUImpl::CELUImpl(const CELUOptions& options_) : options(options_) {}
Tensor CELUImpl::forward(const Tensor& input) { return functional::celu(input, options); }
void CELUImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::CELU(alpha=" << options.alpha() << (options.inplace() ? ", inplace=true" : "") << ")";
}

HardshrinkImpl::HardshrinkImpl(const HardshrinkOptions& options_) : options(options_) {}
Tensor HardshrinkImpl::forward(const Tensor& input) { return functional::hardshrink(input, options); }
void HardshrinkImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Hardshrink(" << options.lambda() << ")";
}

SoftshrinkImpl::SoftshrinkImpl(const SoftshrinkOptions& options_) : options(options_) {}
Tensor SoftshrinkImpl::forward(const Tensor& input) { return functional::softshrink(input, options); }
void SoftshrinkImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Softshrink(" << options.lambda() << ")";
}

RReLUImpl::RReLUImpl(const RReLUOptions& options_) : options(options_) {}
Tensor RReLUImpl::forward(const Tensor& input) {
  return functional::rrelu(input, RReLUFuncOptions()
                                      .lower(options.lower())
                                      .upper(options.upper())
                                      .inplace(options.inplace())
                                      .training(is_training()));
}
void RReLUImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::RReLU(lower=" << options.lower() << ", upper=" << options.upper()
         << (options.inplace() ? ", inplace=true" : "") << ")";
}

Tensor ThresholdImpl::forward(const Tensor& input) { return functional::threshold(input, options); }
void ThresholdImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::Threshold(threshold=" << options.threshold() << ", value=" << options.value()
         << (options.inplace() ? ", inplace=true" : "") << ")";
}

Tensor SoftminImpl::forward(const Tensor& input) { return functional::softmin(input, options.dim()); }
void SoftminImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::Softmin(dim=" << options.dim() << ")"; }

Tensor LogSigmoidImpl::forward(const Tensor& input) { return functional::logsigmoid(input); }
void LogSigmoidImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::LogSigmoid()"; }
Tensor SoftsignImpl::forward(const Tensor& input) { return functional::softsign(input); }
void SoftsignImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::Softsign()"; }
Tensor TanhshrinkImpl::forward(const Tensor& input) { return functional::tanhshrink(input); }
void TanhshrinkImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::Tanhshrink()"; }

AlphaDropoutImpl::AlphaDropoutImpl(const AlphaDropoutOptions& options_) : options(options_) {
  EMBER_CHECK(options.p() >= 0 && options.p() <= 1, "AlphaDropout", "probability has to be between 0 and 1, but got ",
              options.p());
}
Tensor AlphaDropoutImpl::forward(const Tensor& input) {
  return functional::alpha_dropout(
      input, AlphaDropoutFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace()));
}
void AlphaDropoutImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::AlphaDropout(p=" << options.p() << ", inplace=" << (options.inplace() ? "true" : "false") << ")";
}

FeatureAlphaDropoutImpl::FeatureAlphaDropoutImpl(const FeatureAlphaDropoutOptions& options_) : options(options_) {
  EMBER_CHECK(options.p() >= 0 && options.p() <= 1, "FeatureAlphaDropout",
              "probability has to be between 0 and 1, but got ", options.p());
}
Tensor FeatureAlphaDropoutImpl::forward(const Tensor& input) {
  return functional::feature_alpha_dropout(
      input, FeatureAlphaDropoutFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace()));
}
void FeatureAlphaDropoutImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::FeatureAlphaDropout(p=" << options.p() << ", inplace=" << (options.inplace() ? "true" : "false") << ")";
}

}  // namespace ember::nn
