// F::group_norm, F::instance_norm and F::local_response_norm, composed of ordinary ops
// (gradients of any order); instance_norm is PyTorch's formulation on top of F::batch_norm,
// local_response_norm its average pooling of the squares across channels.
#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {
namespace {

void check_channel_vector(const Tensor& t, int64_t channels, const char* what, const char* op) {
  if (!t.defined()) return;
  EMBER_CHECK(t.dim() == 1 && t.size(0) == channels, op, what, " must have shape [", channels,
              "] (the input's channels), got ", t.sizes());
}

void check_normalized_input(const Tensor& input, const char* op) {
  EMBER_CHECK(input.defined() && input.dim() >= 2, op, "expected an input [N, C, *], got ",
              input.defined() ? input.sizes() : IntArrayRef());
  EMBER_CHECK(input.is_floating_point(), op, "expected a floating-point input, got ", dtype_name(input.scalar_type()));
}

// t [C] -> [1, C, 1, ...] against an input of `dims` dims.
Tensor channel_view(const Tensor& t, int64_t dims) {
  std::vector<int64_t> shape(static_cast<size_t>(dims), 1);
  shape[1] = t.size(0);
  return t.view(shape);
}

// [C] repeated for each of `batch` instances: [batch * C].
Tensor repeat_per_instance(const Tensor& t, int64_t batch) {
  return t.defined() ? t.unsqueeze(0).expand({batch, t.size(0)}).reshape({batch * t.size(0)}) : t;
}

}  // namespace

Tensor group_norm(const Tensor& input, const GroupNormFuncOptions& options) {
  const char* op = "group_norm";
  check_normalized_input(input, op);
  const int64_t groups = options.num_groups(), N = input.size(0), C = input.size(1);
  EMBER_CHECK(groups > 0 && C % groups == 0, op, "the input's channels must be divisible by num_groups, got input ",
              "shape ", input.sizes(), " and num_groups=", groups);
  check_channel_vector(options.weight(), C, "weight", op);
  check_channel_vector(options.bias(), C, "bias", op);
  const int64_t per_group = input.numel() / std::max<int64_t>(N * groups, 1);
  Tensor grouped = input.reshape({N, groups, per_group});
  Tensor centered = grouped - grouped.mean({2}, /*keepdim=*/true);
  Tensor variance = centered.square().mean({2}, /*keepdim=*/true);
  Tensor out = (centered * (variance + options.eps()).rsqrt()).reshape(input.sizes());
  if (options.weight().defined()) out = out * channel_view(options.weight(), input.dim());
  if (options.bias().defined()) out = out + channel_view(options.bias(), input.dim());
  return out;
}

Tensor instance_norm(const Tensor& input, const InstanceNormFuncOptions& options) {
  const char* op = "instance_norm";
  check_normalized_input(input, op);
  const int64_t N = input.size(0), C = input.size(1);
  const Tensor& running_mean = options.running_mean();
  const Tensor& running_var = options.running_var();
  check_channel_vector(running_mean, C, "running_mean", op);
  check_channel_vector(running_var, C, "running_var", op);
  check_channel_vector(options.weight(), C, "weight", op);
  check_channel_vector(options.bias(), C, "bias", op);
  EMBER_CHECK(running_mean.defined() == running_var.defined(), op,
              "running_mean and running_var must both be given or both be undefined");
  EMBER_CHECK(options.use_input_stats() || running_mean.defined(), op,
              "running_mean and running_var are needed when use_input_stats is false");
  if (options.use_input_stats()) {
    const int64_t positions = input.numel() / std::max<int64_t>(N * C, 1);
    EMBER_CHECK(input.numel() == 0 || positions > 1, op,
                "expected more than 1 position per channel when using input stats, got input ", input.sizes());
  }
  if (N * C == 0) return input.clone();
  std::vector<int64_t> planes = input.sizes();
  planes[0] = 1;
  planes[1] = N * C;
  // Copies the batch norm can update, one per instance; averaged back below.
  Tensor instance_mean = running_mean.defined() ? repeat_per_instance(running_mean, N).clone() : Tensor();
  Tensor instance_var = running_var.defined() ? repeat_per_instance(running_var, N).clone() : Tensor();
  Tensor out = batch_norm(input.reshape(planes), instance_mean, instance_var,
                          BatchNormFuncOptions()
                              .weight(repeat_per_instance(options.weight(), N))
                              .bias(repeat_per_instance(options.bias(), N))
                              .training(options.use_input_stats())
                              .momentum(options.momentum())
                              .eps(options.eps()));
  if (running_mean.defined() && options.use_input_stats()) {
    NoGradGuard no_grad;
    running_mean.copy_(instance_mean.view({N, C}).mean({0}));
    running_var.copy_(instance_var.view({N, C}).mean({0}));
  }
  return out.reshape(input.sizes());
}

Tensor local_response_norm(const Tensor& input, const LocalResponseNormFuncOptions& options) {
  const char* op = "local_response_norm";
  EMBER_CHECK(input.dim() >= 3, op, "expected an input [N, C, *] of 3 or more dims, got shape ", input.sizes());
  const int64_t size = options.size();
  EMBER_CHECK(size > 0, op, "size must be positive, got ", size);
  // Integer inputs divide into the default floating type, as true division does.
  Tensor x = input.is_floating_point() ? input : input.to(kFloat32);
  // Average of the squares over a window of `size` channels, zero-padded (size / 2 before,
  // (size - 1) / 2 after), pooled as one more spatial dim.
  Tensor squares = (x * x).unsqueeze(1);
  Tensor average;
  if (x.dim() == 3) {
    squares = pad(squares, PadFuncOptions({0, 0, size / 2, (size - 1) / 2}));
    average = ember::avg_pool2d(squares, {size, 1}, {1, 1}).squeeze(1);
  } else {
    squares = squares.reshape({x.size(0), 1, x.size(1), x.size(2), -1});
    squares = pad(squares, PadFuncOptions({0, 0, 0, 0, size / 2, (size - 1) / 2}));
    average = ember::avg_pool3d(squares, {size, 1, 1}, {1, 1, 1}).squeeze(1).reshape(x.sizes());
  }
  return x / (average * options.alpha() + options.k()).pow(options.beta());
}

}  // namespace ember::nn::functional
