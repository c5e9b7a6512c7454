// The batch-norm op with batch statistics on a float32/float64 input: the fused kernels of
// cpu/batchnorm.h (Note [Fused BatchNorm]). nn::functional::batch_norm (src/nn/batchnorm.cpp)
// checks its arguments, updates the running statistics and composes the other cases.
//
// Note [Fused BatchNorm]
// The composite took ~10 full passes and temporaries forward and as many backward; the fused
// forward reads x twice for the statistics (float64, two-pass) and writes y once, and the
// fused backward reads grad_y and x once for the sums and once for grad_x. The tests compare
// it with a float64 composite and with gradcheck (tests/nn/test_batchnorm.cpp). The fused
// backward is first-order: under create_graph=true (a gradient penalty) the backward is
// composed of ordinary ops instead (batch_norm_backward_composite), so it is differentiable.
#include "ops/batchnorm.h"

#include <algorithm>

#include "autograd/function.h"
#include "core/record_op.h"
#include "core/tensor_impl.h"
#include "cpu/batchnorm.h"
#include "ember/autograd.h"
#include "ember/functions.h"

namespace ember::ops {

std::vector<int64_t> non_channel_dims(const Tensor& input) {
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  return dims;
}

namespace {

// The gradients of training-mode batch norm in differentiable ops, recomputing the batch
// statistics from `input` so that their dependence on it is part of the graph:
// grad_x = weight * invstd * (g - mean(g) - xhat * mean(g * xhat)), grad_weight = sum(g * xhat),
// grad_bias = sum(g), with xhat = (x - mean) * invstd.
std::vector<Tensor> batch_norm_backward_composite(const Tensor& grad_y, const Tensor& input, const Tensor& weight,
                                                  double eps) {
  const std::vector<int64_t> dims = non_channel_dims(input);
  const Tensor g = grad_y.to(input.scalar_type());
  const Tensor centered = input - input.mean(dims, true);
  const Tensor invstd = (centered.square().mean(dims, true) + eps).rsqrt();
  const Tensor xhat = centered * invstd;
  const Tensor g_xhat = g * xhat;
  std::vector<int64_t> channel_shape(static_cast<size_t>(input.dim()), 1);
  channel_shape[1] = input.size(1);
  const Tensor scale = weight.defined() ? invstd * weight.to(input.scalar_type()).view(channel_shape) : invstd;
  return {scale * (g - g.mean(dims, true) - xhat * g_xhat.mean(dims, true)), g_xhat.sum(dims), g.sum(dims)};
}

}  // namespace

Tensor batch_norm_training(const Tensor& input, const Tensor& weight, const Tensor& bias, double eps, Tensor& mean,
                           Tensor& var) {
  EMBER_RECORD_OP("batch_norm", input, weight, bias);
  const ScalarType dtype = input.scalar_type();
  const int64_t channels = input.size(1);
  const cpu::BatchNormShape shape{input.size(0), channels,
                                  input.numel() / std::max<int64_t>(1, input.size(0) * channels)};
  const Tensor x = input.detach().contiguous();
  const Tensor w = weight.defined() ? weight.detach().to(dtype).contiguous() : Tensor();
  const Tensor b = bias.defined() ? bias.detach().to(dtype).contiguous() : Tensor();
  Tensor out = core::make_tensor(input.sizes(), dtype);
  mean = core::make_tensor({channels}, kFloat64);
  var = core::make_tensor({channels}, kFloat64);
  Tensor invstd = core::make_tensor({channels}, kFloat64);
  cpu::batch_norm_forward(dtype, shape, x.data_ptr(), w.defined() ? w.data_ptr() : nullptr,
                          b.defined() ? b.data_ptr() : nullptr, eps, out.data_ptr(), mean.data_ptr<double>(),
                          var.data_ptr<double>(), invstd.data_ptr<double>());
  std::vector<Tensor> inputs = {input};
  if (weight.defined()) inputs.push_back(weight);
  if (bias.defined()) inputs.push_back(bias);
  if (!autograd::should_record(inputs)) return out;
  // The inputs themselves (with their graphs) are kept too, for the composite backward.
  autograd::SavedTensor saved_x(x), saved_w(w), saved_mean(mean), saved_invstd(invstd), saved_input(input),
      saved_weight(weight);
  const bool has_weight = weight.defined(), has_bias = bias.defined();
  const ScalarType weight_dtype = has_weight ? weight.scalar_type() : dtype;
  const ScalarType bias_dtype = has_bias ? bias.scalar_type() : dtype;
  autograd::record("NativeBatchNormBackward", inputs, {out},
                   [=](std::vector<Tensor>& grads, const std::vector<bool>& needs) -> std::vector<Tensor> {
                     Tensor grad_x, grad_w, grad_b;
                     if (is_grad_enabled()) {
                       const std::vector<Tensor> composite =
                           batch_norm_backward_composite(grads[0], saved_input.get(), saved_weight.get(), eps);
                       grad_x = composite[0];
                       grad_w = composite[1];
                       grad_b = composite[2];
                     } else {
                       const Tensor g = grads[0].to(dtype).contiguous(), ws = saved_w.get();
                       grad_x = needs[0] ? core::make_tensor(g.sizes(), dtype) : Tensor();
                       grad_w = core::make_tensor({shape.channels}, kFloat64);
                       grad_b = core::make_tensor({shape.channels}, kFloat64);
                       cpu::batch_norm_backward(dtype, shape, g.data_ptr(), saved_x.get().data_ptr(),
                                                ws.defined() ? ws.data_ptr() : nullptr,
                                                saved_mean.get().data_ptr<double>(),
                                                saved_invstd.get().data_ptr<double>(),
                                                grad_x.defined() ? grad_x.data_ptr() : nullptr,
                                                grad_w.data_ptr<double>(), grad_b.data_ptr<double>());
                     }
                     std::vector<Tensor> result = {needs[0] ? grad_x : Tensor()};
                     if (has_weight) result.push_back(needs[1] ? grad_w.to(weight_dtype) : Tensor());
                     if (has_bias) result.push_back(needs.back() ? grad_b.to(bias_dtype) : Tensor());
                     return result;
                   });
  return out;
}

}  // namespace ember::ops
