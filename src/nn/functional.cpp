// Functional layers and activations: validated compositions of ember ops; rms_norm, swiglu and
// rotary_embedding run the fused ops of src/ops (rms_norm.cpp, swiglu.cpp, rotary_embedding.cpp).
#include "ember/nn/functional.h"

#include <limits>

#include "ember/autograd.h"
#include "ember/functions.h"
#include "core/record_op.h"
#include "ops/rms_norm.h"
#include "ops/rotary_embedding.h"
#include "ops/swiglu.h"

namespace ember::nn::functional {
namespace {

// The trailing dims of `input` that `normalized_shape` names; throws if they differ.
std::vector<int64_t> trailing_dims(const Tensor& input, const std::vector<int64_t>& normalized_shape, const char* op) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool matches = k >= 1 && input.dim() >= k;
  for (int64_t i = 0; matches && i < k; ++i) matches = input.size(input.dim() - k + i) == normalized_shape[i];
  EMBER_CHECK(matches, op, "normalized_shape ", normalized_shape, " does not match the trailing dims of input shape ",
              input.sizes());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < k; ++i) dims.push_back(input.dim() - k + i);
  return dims;
}

void check_affine(const Tensor& param, const std::vector<int64_t>& normalized_shape, const char* what, const char* op) {
  EMBER_CHECK(!param.defined() || param.sizes() == normalized_shape, op, what, " of shape ",
              param.defined() ? param.sizes() : IntArrayRef(), " must have normalized_shape ",
              normalized_shape);
}

// float16/bfloat16 normalise in float32, as PyTorch's kernels do.
ScalarType opmath_type(ScalarType dtype) { return dtype == kFloat16 || dtype == kBFloat16 ? kFloat32 : dtype; }

}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) { return ember::linear(input, weight, bias); }

Tensor one_hot(const Tensor& tensor, int64_t num_classes) { return ember::one_hot(tensor, num_classes); }

Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options) {
  EMBER_CHECK(weight.dim() == 2, "embedding", "weight must be 2-D [num_embeddings, embedding_dim], got shape ",
              weight.sizes());
  const int64_t rows = weight.size(0);
  int64_t padding_idx = -1;  // ember::embedding's "no padding"
  if (options.padding_idx()) {
    const int64_t p = *options.padding_idx();
    EMBER_CHECK(p >= -rows && p < rows, "embedding", "padding_idx ", p, " must be within [", -rows, ", ", rows, ")");
    padding_idx = p < 0 ? p + rows : p;
  }
  return ember::embedding(weight, input, padding_idx);
}

Tensor layer_norm(const Tensor& input, const LayerNormFuncOptions& options) {
  // Exported as one op over the composite below (the runtime's layer_norm kernel repeats its
  // steps on the same cpu kernels); with a weight but no bias, or a bias but no weight, the
  // inputs would not say which is which, so that form has no export support.
  EMBER_RECORD_OP("layer_norm", input, options.weight(), options.bias());
  const auto dims = trailing_dims(input, options.normalized_shape(), "layer_norm");
  check_affine(options.weight(), options.normalized_shape(), "weight", "layer_norm");
  check_affine(options.bias(), options.normalized_shape(), "bias", "layer_norm");
  const ScalarType compute = opmath_type(input.scalar_type());
  Tensor x = input.to(compute);
  Tensor centered = x - x.mean(dims, /*keepdim=*/true);
  Tensor variance = centered.square().mean(dims, /*keepdim=*/true);
  Tensor out = centered * (variance + options.eps()).rsqrt();
  if (options.weight().defined()) out = out * options.weight().to(compute);
  if (options.bias().defined()) out = out + options.bias().to(compute);
  out = out.to(input.scalar_type());
  if (options.weight().defined() != options.bias().defined()) return out;
  ember_trace_op_.attr("normalized_shape", options.normalized_shape()).attr("eps", options.eps());
  return ember_trace_op_.result(out);
}

Tensor rms_norm(const Tensor& input, const RMSNormFuncOptions& options) {
  const auto& normalized_shape = options.normalized_shape();
  trailing_dims(input, normalized_shape, "rms_norm");
  check_affine(options.weight(), normalized_shape, "weight", "rms_norm");
  Tensor weight = options.weight();
  EMBER_CHECK(input.is_floating_point() && (!weight.defined() || weight.is_floating_point()), "rms_norm",
              "expected floating-point input and weight, got ", dtype_name(input.scalar_type()),
              weight.defined() ? std::string(" and ") + dtype_name(weight.scalar_type()) : std::string());
  // A weight of another dtype promotes the result, as input * weight would.
  const ScalarType dtype = weight.defined() ? promote_types(input.scalar_type(), weight.scalar_type())
                                            : input.scalar_type();
  // PyTorch's default eps is the epsilon of the type the input computes in.
  const double eps = options.eps().value_or(input.scalar_type() == kFloat64 ? std::numeric_limits<double>::epsilon()
                                                              : std::numeric_limits<float>::epsilon());
  int64_t width = 1;
  for (int64_t size : normalized_shape) width *= size;
  return ops::rms_norm(input.to(dtype), weight.defined() ? weight.to(dtype) : weight, width, eps);
}

Tensor rotary_embedding(const Tensor& x, const Tensor& cos, const Tensor& sin) {
  return ops::rotary_embedding(x, cos, sin);
}

Tensor swiglu(const Tensor& a, const Tensor& b) { return ops::swiglu(a, b); }

Tensor gelu(const Tensor& input, const GELUFuncOptions& options) { return ember::gelu(input, options.approximate()); }
Tensor silu(const Tensor& input) { return ember::silu(input); }
Tensor softmax(const Tensor& input, const SoftmaxFuncOptions& options) {
  return ember::softmax(input, options.dim(), options.dtype());
}
Tensor log_softmax(const Tensor& input, const LogSoftmaxFuncOptions& options) {
  return ember::log_softmax(input, options.dim(), options.dtype());
}

}  // namespace ember::nn::functional

namespace ember {

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps, bool /*cudnn_enable*/) {
  return nn::functional::layer_norm(
      input, nn::LayerNormFuncOptions(normalized_shape.vec()).weight(weight).bias(bias).eps(eps));
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps,
                  bool /*cudnn_enabled*/) {
  return nn::functional::group_norm(input, nn::GroupNormFuncOptions(num_groups).weight(weight).bias(bias).eps(eps));
}

}  // namespace ember
