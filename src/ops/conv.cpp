// convolution, conv1d/2d/3d: argument checks and shapes here, im2col + GEMM in cpu/conv.
#include "cpu/conv.h"
#include "ops/op_utils.h"

namespace ember {
namespace {

using autograd::SavedTensor;

// `values` for each of `spatial` dims: a one-value list repeats.
std::vector<int64_t> per_dim(IntArrayRef values, int64_t spatial, const char* op, const char* arg) {
  EMBER_CHECK(values.size() == 1 || static_cast<int64_t>(values.size()) == spatial, op, arg, " must have 1 or ",
              spatial, " values, got ", values);
  std::vector<int64_t> out(static_cast<size_t>(spatial));
  for (int64_t d = 0; d < spatial; ++d) out[d] = values[values.size() == 1 ? 0 : static_cast<size_t>(d)];
  return out;
}

// Checks every argument and fills the kernel's shape (spatial dims right-aligned in 3).
cpu::ConvShape conv_shape(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride_arg,
                          IntArrayRef padding_arg, IntArrayRef dilation_arg, int64_t groups, const char* op) {
  const int64_t spatial = weight.dim() - 2;
  EMBER_CHECK(x.dim() == spatial + 2, op, "expected a ", spatial + 2, "-d input for a ", spatial + 2,
              "-d weight ", weight.sizes(), ", got input ", x.sizes());
  const auto stride = per_dim(stride_arg, spatial, op, "stride");
  const auto padding = per_dim(padding_arg, spatial, op, "padding");
  const auto dilation = per_dim(dilation_arg, spatial, op, "dilation");
  EMBER_CHECK(groups > 0, op, "groups must be positive, got ", groups);
  const int64_t in_channels = x.size(1), out_channels = weight.size(0);
  EMBER_CHECK(out_channels % groups == 0, op, "groups (", groups, ") must divide out_channels (", out_channels,
              ") of weight ", weight.sizes());
  EMBER_CHECK(weight.size(1) * groups == in_channels, op, "expected input ", x.sizes(), " to have ",
              weight.size(1) * groups, " channels (weight ", weight.sizes(), ", groups ", groups, "), got ",
              in_channels, " channels");
  EMBER_CHECK(x.scalar_type() == weight.scalar_type(), op, "input (", dtype_name(x.scalar_type()),
              ") and weight (", dtype_name(weight.scalar_type()), ") must have the same dtype");
  EMBER_CHECK(x.is_floating_point(), op, "not implemented for dtype ", dtype_name(x.scalar_type()),
              "; use a floating-point dtype");
  if (bias.defined()) {
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == out_channels, op, "expected bias of shape [", out_channels,
                "], got ", bias.sizes());
    EMBER_CHECK(bias.scalar_type() == x.scalar_type(), op, "bias (", dtype_name(bias.scalar_type()),
                ") must have the input's dtype ", dtype_name(x.scalar_type()));
  }
  cpu::ConvShape s;
  s.batch = x.size(0);
  s.in_channels = in_channels;
  s.out_channels = out_channels;
  s.groups = groups;
  for (int64_t d = 0; d < spatial; ++d) {
    const int64_t k = 3 - spatial + d;
    EMBER_CHECK(stride[d] > 0, op, "stride must be positive, got ", IntArrayRef(stride));
    EMBER_CHECK(dilation[d] > 0, op, "dilation must be positive, got ", IntArrayRef(dilation));
    EMBER_CHECK(padding[d] >= 0, op, "negative padding is not supported, got ",
                IntArrayRef(padding));
    const int64_t in = x.size(2 + d), kernel = weight.size(2 + d);
    const int64_t padded = in + 2 * padding[d], reach = dilation[d] * (kernel - 1) + 1;
    EMBER_CHECK(reach <= padded, op, "kernel size ", kernel, " (dilated: ", reach,
                ") can't be greater than the padded input size ", padded, " in spatial dim ", d, " (input ",
                x.sizes(), ", padding ", IntArrayRef(padding), ")");
    s.in[k] = in;
    s.kernel[k] = kernel;
    s.stride[k] = stride[d];
    s.pad[k] = padding[d];
    s.dilation[k] = dilation[d];
    s.out[k] = (padded - reach) / stride[d] + 1;
  }
  return s;
}

Tensor convolution_impl(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef dilation, int64_t groups, const char* op) {
  EMBER_CHECK(input.defined() && weight.defined(), op, "called with an undefined input or weight");
  EMBER_CHECK(weight.dim() >= 3 && weight.dim() <= 5, op, "expected a 3-d, 4-d or 5-d weight, got ",
              weight.sizes());
  // Unbatched input [C, *spatial] runs as a batch of one.
  if (input.dim() == weight.dim() - 1)
    return convolution_impl(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, op)
        .squeeze(0);
  const cpu::ConvShape s = conv_shape(input, weight, bias, stride, padding, dilation, groups, op);
  // float16/bfloat16 run on float32 copies (float32 accumulation, one rounding at the end).
  if (input.scalar_type() == kBFloat16 || input.scalar_type() == kFloat16) {
    return convolution_impl(input.to(kFloat32), weight.to(kFloat32), bias.defined() ? bias.to(kFloat32) : bias,
                            stride, padding, dilation, groups, op)
        .to(input.scalar_type());
  }
  const ScalarType dtype = input.scalar_type();
  const Tensor x = input.detach().contiguous(), w = weight.detach().contiguous();
  const Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  std::vector<int64_t> out_sizes = {s.batch, s.out_channels};
  for (int64_t d = 3 - (weight.dim() - 2); d < 3; ++d) out_sizes.push_back(s.out[d]);
  Tensor out = core::make_tensor(out_sizes, dtype);
  Tensor scratch = core::make_tensor({s.scratch_elements()}, dtype);
  cpu::conv_forward(dtype, s, x.data_ptr(), w.data_ptr(), b.defined() ? b.data_ptr() : nullptr, out.data_ptr(),
                    scratch.data_ptr());
  std::vector<Tensor> inputs = {input, weight};
  if (bias.defined()) inputs.push_back(bias);
  if (!autograd::should_record(inputs)) return out;
  SavedTensor saved_x(x), saved_w(w);
  const std::string name = op;
  autograd::record("ConvolutionBackward", inputs, {out},
                   [=](std::vector<Tensor>& grads, const std::vector<bool>& needs) -> std::vector<Tensor> {
                     EMBER_CHECK(!is_grad_enabled(), name.c_str(),
                                 "double backward (create_graph=true) is not supported");
                     const Tensor g = grads[0].to(dtype).contiguous();
                     const Tensor xs = saved_x.get(), ws = saved_w.get();
                     Tensor work = core::make_tensor({s.scratch_elements()}, dtype);
                     std::vector<Tensor> result(needs.size());
                     if (needs[0]) {
                       result[0] = core::make_tensor(xs.sizes(), dtype);
                       cpu::conv_backward_input(dtype, s, g.data_ptr(), ws.data_ptr(), result[0].data_ptr(),
                                                work.data_ptr());
                     }
                     if (needs[1]) {
                       result[1] = core::make_tensor(ws.sizes(), dtype);
                       cpu::conv_backward_weight(dtype, s, xs.data_ptr(), g.data_ptr(), result[1].data_ptr(),
                                                 work.data_ptr());
                     }
                     if (needs.size() > 2 && needs[2]) {
                       std::vector<int64_t> dims = {0};
                       for (int64_t d = 2; d < g.dim(); ++d) dims.push_back(d);
                       result[2] = g.sum(dims);
                     }
                     return result;
                   });
  return out;
}

// The rank-named forms check the weight's rank first, so that a wrong one is named as such.
Tensor conv_of_rank(int64_t rank, const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias,
                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  EMBER_CHECK(weight.defined() && weight.dim() == rank + 2, op, "expected a ", rank + 2,
              "-d weight [out_channels, in_channels / groups, *kernel], got ",
              weight.defined() ? weight.sizes() : std::vector<int64_t>{});
  EMBER_RECORD_OP(op, input, weight, bias);
  Tensor out = convolution_impl(input, weight, bias, stride, padding, dilation, groups, op);
  if (ember_trace_op_.active()) {
    // Per spatial dim, as conv_shape reads them (one value stands for every dim).
    auto per_dim = [rank](IntArrayRef values) {
      return values.size() == 1 ? std::vector<int64_t>(static_cast<size_t>(rank), values[0]) : values.vec();
    };
    ember_trace_op_.attr("stride", per_dim(stride))
        .attr("padding", per_dim(padding))
        .attr("dilation", per_dim(dilation))
        .attr("groups", groups);
  }
  return ember_trace_op_.result(out);
}

}  // namespace

Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return convolution_impl(input, weight, bias, stride, padding, dilation, groups, "convolution");
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  return conv_of_rank(1, "conv1d", input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  return conv_of_rank(2, "conv2d", input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  return conv_of_rank(3, "conv3d", input, weight, bias, stride, padding, dilation, groups);
}

}  // namespace ember
