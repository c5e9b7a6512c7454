// The activation functions of torch::nn::functional beyond relu/gelu/silu, with PyTorch's
// formulas and gradients (aten/src/ATen/native/Activation.cpp), composed of ember ops so
// that gradients of any order come from autograd. Branches that are not taken are evaluated
// on clamped inputs so that an overflow there cannot leak a NaN into the gradient.
#include "nn/activation.h"

#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn::detail {

Tensor log1p_exp(const Tensor& x) { return (-x.abs()).exp().log1p() + x.maximum(zeros({}, x.scalar_type())); }

Tensor maybe_inplace(const Tensor& input, const Tensor& result, bool inplace) {
  if (!inplace) return result;
  input.copy_(result);
  return input;
}

}  // namespace ember::nn::detail

namespace ember::nn::functional {
namespace {

using nn::detail::maybe_inplace;

void check_floating(const Tensor& input, const char* op) {
  EMBER_CHECK(input.is_floating_point(), op, "expected a floating-point input, got ", dtype_name(input.scalar_type()));
}

}  // namespace

Tensor leaky_relu(const Tensor& input, const LeakyReLUFuncOptions& options) {
  check_floating(input, "leaky_relu");
  return maybe_inplace(input, where(input > 0, input, input * options.negative_slope()), options.inplace());
}

Tensor elu(const Tensor& input, const ELUFuncOptions& options) {
  return maybe_inplace(input, ember::elu(input, options.alpha()), options.inplace());
}

Tensor prelu(const Tensor& input, const Tensor& weight) {
  const char* op = "prelu";
  check_floating(input, op);
  EMBER_CHECK(weight.defined() && weight.dim() <= 1, op, "weight must be a 0-dim or 1-D tensor, got shape ",
              weight.defined() ? weight.sizes() : IntArrayRef());
  const int64_t parameters = weight.numel();
  Tensor slope = weight;
  if (parameters != 1) {
    const int64_t channels = input.dim() >= 2 ? input.size(1) : 1;
    EMBER_CHECK(channels == parameters, op, "weight has ", parameters,
                " values (num_parameters) but the input's channel count (dim 1) is ", channels, " (input shape ",
                input.sizes(), ")");
    std::vector<int64_t> shape(static_cast<size_t>(input.dim()), 1);
    shape[1] = parameters;
    slope = weight.reshape(shape);
  } else {
    slope = weight.reshape({});
  }
  return where(input > 0, input, input * slope);
}

Tensor hardtanh(const Tensor& input, const HardtanhFuncOptions& options) {
  const char* op = "hardtanh";
  check_floating(input, op);
  // min(max(x, min_val), max_val), as libtorch (which accepts any bounds here; its module
  // checks them): max_val wins when the bounds cross.
  Tensor lower = where(input <= options.min_val(), Scalar(options.min_val()), input);
  Tensor out = where(lower >= options.max_val(), Scalar(options.max_val()), lower);
  return maybe_inplace(input, out, options.inplace());
}

Tensor relu6(const Tensor& input, const ReLU6FuncOptions& options) {
  return hardtanh(input, HardtanhFuncOptions().min_val(0).max_val(6).inplace(options.inplace()));
}

Tensor softplus(const Tensor& input, const SoftplusFuncOptions& options) {
  check_floating(input, "softplus");
  const double beta = options.beta();
  Tensor scaled = input * beta;
  Tensor smooth = scaled.clamp_max(options.threshold()).exp().log1p() / beta;
  return where(scaled > options.threshold(), input, smooth);
}

Tensor mish(const Tensor& input) {
  check_floating(input, "mish");
  return input * nn::detail::log1p_exp(input).tanh();
}

Tensor glu(const Tensor& input, const GLUFuncOptions& options) {
  const char* op = "glu";
  EMBER_CHECK(input.dim() > 0, op, "does not support 0-dim inputs because the halved dim must have an even size");
  const int64_t dim = options.dim();
  EMBER_CHECK(dim >= -input.dim() && dim < input.dim(), op, "dim ", dim, " is out of range for an input of ",
              input.dim(), " dims (shape ", input.sizes(), ")");
  const int64_t wrapped = dim < 0 ? dim + input.dim() : dim;
  const int64_t size = input.size(wrapped);
  EMBER_CHECK(size % 2 == 0, op, "the halved dim must have an even size, but dim ", wrapped, " has size ", size,
              " (input shape ", input.sizes(), ")");
  Tensor first = input.narrow(wrapped, 0, size / 2);
  Tensor second = input.narrow(wrapped, size / 2, size / 2);
  return first * second.sigmoid();
}

Tensor relu(const Tensor& input, const ReLUFuncOptions& options) {
  return maybe_inplace(input, ember::relu(input), options.inplace());
}

Tensor selu(const Tensor& input, const SELUFuncOptions& options) {
  // The constants of Klambauer et al. (2017), as aten/src/ATen/native/Activation.cpp.
  constexpr double alpha = 1.6732632423543772848170429916717;
  constexpr double scale = 1.0507009873554804934193349852946;
  check_floating(input, "selu");
  Tensor out = where(input > 0, input, input.clamp_max(0).expm1() * alpha) * scale;
  return maybe_inplace(input, out, options.inplace());
}

Tensor celu(const Tensor& input, const CELUFuncOptions& options) {
  const char* op = "celu";
  check_floating(input, op);
  const double alpha = options.alpha();
  EMBER_CHECK(alpha != 0, op, "ZeroDivisionError: alpha must be nonzero");
  Tensor negative_part = (input.clamp_max(0) / alpha).expm1() * alpha;
  return maybe_inplace(input, where(input > 0, input, negative_part), options.inplace());
}

Tensor hardshrink(const Tensor& input, const HardshrinkFuncOptions& options) {
  check_floating(input, "hardshrink");
  return where(input.abs() > options.lambda(), input, Scalar(0));
}

Tensor softshrink(const Tensor& input, const SoftshrinkFuncOptions& options) {
  const char* op = "softshrink";
  check_floating(input, op);
  const double lambda = options.lambda();
  EMBER_CHECK(lambda >= 0, op, "lambda must be greater or equal to 0, but found to be ", lambda);
  return where(input > lambda, input - lambda, where(input < -lambda, input + lambda, Scalar(0)));
}

Tensor threshold(const Tensor& input, const ThresholdFuncOptions& options) {
  Tensor out = where(input > options.threshold(), input, Scalar(options.value()));
  return maybe_inplace(input, out, options.inplace());
}

Tensor rrelu(const Tensor& input, const RReLUFuncOptions& options) {
  const char* op = "rrelu";
  check_floating(input, op);
  const double lower = options.lower(), upper = options.upper();
  EMBER_CHECK(lower <= upper, op, "lower bound (", lower, ") must not exceed upper bound (", upper, ")");
  Tensor slope;
  if (options.training()) {
    slope = empty(input.sizes(), input.scalar_type());
    slope.uniform_(lower, upper);
  } else {
    slope = full({}, (lower + upper) / 2, input.scalar_type());
  }
  return maybe_inplace(input, where(input > 0, input, input * slope), options.inplace());
}

Tensor logsigmoid(const Tensor& input) {
  check_floating(input, "logsigmoid");
  return -nn::detail::log1p_exp(-input);
}

Tensor softmin(const Tensor& input, const SoftminFuncOptions& options) {
  return ember::softmax(-input, options.dim(), options.dtype());
}

Tensor softsign(const Tensor& input) { return input / (input.abs() + 1); }

Tensor tanhshrink(const Tensor& input) { return input - input.tanh(); }

Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& options) {
  const char* op = "gumbel_softmax";
  check_floating(logits, op);
  EMBER_CHECK(options.tau() > 0, op, "tau must be positive, got ", options.tau());
  // Standard Gumbel noise -log(E) with E ~ Exponential(1) = -log(1 - U), U ~ Uniform[0, 1).
  Tensor uniform = empty(logits.sizes(), logits.scalar_type());
  uniform.uniform_(0, 1);
  Tensor gumbels = -(-(1 - uniform).log()).log();
  Tensor soft = ((logits + gumbels) / options.tau()).softmax(options.dim());
  if (!options.hard()) return soft;
  Tensor index = std::get<1>(soft.max(options.dim(), /*keepdim=*/true));
  Tensor hard = zeros_like(soft).scatter(options.dim(), index, Scalar(1.0));
  // The straight-through estimator: the one-hot forward, the soft sample's gradient.
  return hard - soft.detach() + soft;
}

}  // namespace ember::nn::functional

namespace ember {

Tensor elu(const Tensor& input, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  EMBER_CHECK(input.is_floating_point(), "elu", "expected a floating-point input, got ",
              dtype_name(input.scalar_type()));
  const double a = alpha.to<double>(), s = scale.to<double>(), in = input_scale.to<double>();
  Tensor negative_part = (input.clamp_max(0) * in).expm1() * (s * a);
  return where(input > 0, input * s, negative_part);
}

}  // namespace ember
