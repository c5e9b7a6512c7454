// F::batch_norm. With batch statistics on a float32/float64 input it runs the fused op of
// src/ops/batchnorm.cpp (Note [Fused BatchNorm]); otherwise (running statistics, float16 /
// bfloat16) it is composed of ordinary ops, whose gradients give its own.
#include <algorithm>

#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/nn/functional.h"
#include "ops/batchnorm.h"

namespace ember::nn::functional {
namespace {

void check_channel_vector(const Tensor& t, int64_t channels, const char* what) {
  if (!t.defined()) return;
  EMBER_CHECK(t.dim() == 1 && t.size(0) == channels, "batch_norm", what, " must have shape [", channels,
              "] (the input's channels), got ", t.sizes());
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& options) {
  EMBER_CHECK(input.defined() && input.dim() >= 2, "batch_norm", "expected an input [N, C, *], got ",
              input.defined() ? input.sizes() : IntArrayRef());
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
  const std::vector<int64_t> dims = ops::non_channel_dims(input);
  std::vector<int64_t> shape(static_cast<size_t>(input.dim()), 1);
  shape[1] = channels;
  const int64_t count = input.numel() / std::max<int64_t>(channels, 1);
  Tensor mean, var, fused;
  if (options.training()) {
    EMBER_CHECK(count > 1, "batch_norm", "expected more than 1 value per channel when training, got input ",
                input.sizes());
    if (input.scalar_type() == kFloat32 || input.scalar_type() == kFloat64) {
      fused = ops::batch_norm_training(input, options.weight(), options.bias(), options.eps(), mean, var);
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
