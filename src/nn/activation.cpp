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

using detail::maybe_inplace;

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
  EMBER_CHECK(options.max_val() > options.min_val(), op, "max_val (", options.max_val(),
              ") must be greater than min_val (", options.min_val(), ")");
  Tensor out = where(input <= options.min_val(), Scalar(options.min_val()),
                     where(input >= options.max_val(), Scalar(options.max_val()), input));
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
  return input * detail::log1p_exp(input).tanh();
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

}  // namespace ember::nn::functional

namespace ember {

Tensor elu(const Tensor& input, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  EMBER_CHECK(input.is_floating_point(), "elu", "expected a floating-point input, got ", dtype_name(input.scalar_type()));
  const double a = alpha.to<double>(), s = scale.to<double>(), in = input_scale.to<double>();
  Tensor negative_part = (input.clamp_max(0) * in).expm1() * (s * a);
  return where(input > 0, input * s, negative_part);
}

}  // namespace ember
