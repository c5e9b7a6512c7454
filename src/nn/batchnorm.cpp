// F::batch_norm. With batch statistics on a float32/float64 input it runs the fused kernels
// of cpu/batch_norm.h (Note [Fused BatchNorm]); otherwise (running statistics, float16 /
// bfloat16) it is composed of ordinary ops, whose gradients give its own.
//
// Note [Fused BatchNorm]
// The composite took ~10 full passes and temporaries forward and as many backward; the fused
// forward reads x twice for the statistics (float64, two-pass) and writes y once, and the
// fused backward reads grad_y and x once for the sums and once for grad_x. The tests compare
// it with a float64 composite and with gradcheck (tests/nn/test_batchnorm.cpp). The fused
// backward is first-order: under create_graph=true (a gradient penalty) the backward is
// composed of ordinary ops instead (batch_norm_backward_composite), so it is differentiable.
#include "autograd/function.h"
#include "core/record_op.h"
#include "core/tensor_impl.h"
#include "cpu/batch_norm.h"
#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {
namespace {

// The reduction dims {0, 2, 3, ...} of an input [N, C, *].
std::vector<int64_t> non_channel_dims(const Tensor& input) {
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  return dims;
}

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

// Normalises input [N, C, *] with its own statistics, as the composite below; writes the
// batch's mean and biased variance ([C] float64) for the running statistics.
Tensor fused_batch_norm_training(const Tensor& input, const Tensor& weight, const Tensor& bias, double eps,
                                 Tensor& mean, Tensor& var) {
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

void check_channel_vector(const Tensor& t, int64_t channels, const char* what) {
  if (!t.defined()) return;
  EMBER_CHECK(t.dim() == 1 && t.size(0) == channels, "batch_norm", what, " must have shape [", channels,
              "] (the input's channels), got ", t.sizes());
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options) {
  EMBER_CHECK(input.defined() && input.dim() >= 2, "batch_norm", "expected an input [N, C, *], got ",
              input.defined() ? input.sizes() : std::vector<int64_t>{});
  EMBER_CHECK(input.is_floating_point(), "batch_norm", "expected a floating-point input, got ",
              dtype_name(input.scalar_type()));
  const int64_t channels = input.size(1);
  check_channel_vector(running_mean, channels, "running_mean");
  check_channel_vector(running_var, channels, "running_var");
  check_channel_vector(options.weight(), channels, "weight");
  check_channel_vector(options.bias(), channels, "bias");
  EMBER_CHECK(running_mean.defined() == running_var.defined(), "batch_norm",
              "running_mean and running_var must both be given or both be undefined");
  EMBER_CHECK(options.training() || running_mean.defined(), "batch_norm",
              "running_mean and running_var are needed in evaluation mode (training=false)");
  const std::vector<int64_t> dims = non_channel_dims(input);
  std::vector<int64_t> shape(static_cast<size_t>(input.dim()), 1);
  shape[1] = channels;
  const int64_t count = input.numel() / std::max<int64_t>(channels, 1);
  Tensor mean, var, fused;
  if (options.training()) {
    EMBER_CHECK(count > 1, "batch_norm", "expected more than 1 value per channel when training, got input ",
                input.sizes());
    if (input.scalar_type() == kFloat32 || input.scalar_type() == kFloat64) {
      fused = fused_batch_norm_training(input, options.weight(), options.bias(), options.eps(), mean, var);
    } else {
      mean = input.mean(dims);
      var = (input - mean.view(shape)).square().mean(dims);
    }
    if (running_mean.defined()) {
      EMBER_CHECK(options.momentum().has_value(), "batch_norm",
                  "momentum must be set to update the running stats (the module passes its own factor)");
      const double m = *options.momentum();
      NoGradGuard no_grad;
      const Tensor unbiased = var.detach() * (static_cast<double>(count) / static_cast<double>(count - 1));
      running_mean.mul_(1 - m).add_(mean.detach().to(running_mean.scalar_type()) * m);
      running_var.mul_(1 - m).add_(unbiased.to(running_var.scalar_type()) * m);
    }
  } else {
    mean = running_mean.to(input.scalar_type());
    var = running_var.to(input.scalar_type());
  }
  if (fused.defined()) return fused;
  // One scale and shift per channel, so the full-size work is a multiply and an add.
  Tensor scale = (var + options.eps()).rsqrt();
  if (options.weight().defined()) scale = scale * options.weight();
  Tensor shift = -mean * scale;
  if (options.bias().defined()) shift = shift + options.bias();
  return input * scale.view(shape) + shift.view(shape);
}

}  // namespace ember::nn::functional
