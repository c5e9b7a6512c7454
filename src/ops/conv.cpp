// convolution, conv1d/2d/3d and conv_transpose1d/2d/3d: argument checks and shapes here,
// im2col + GEMM in cpu/conv.
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

// stride, padding and dilation, one value per spatial dim, checked.
struct SpatialArgs {
  std::vector<int64_t> stride, padding, dilation;
};

SpatialArgs spatial_args(IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t spatial,
                         const char* op) {
  SpatialArgs a{per_dim(stride, spatial, op, "stride"), per_dim(padding, spatial, op, "padding"),
                per_dim(dilation, spatial, op, "dilation")};
  for (int64_t d = 0; d < spatial; ++d) {
    EMBER_CHECK(a.stride[d] > 0, op, "stride must be positive, got ", IntArrayRef(a.stride));
    EMBER_CHECK(a.dilation[d] > 0, op, "dilation must be positive, got ", IntArrayRef(a.dilation));
    EMBER_CHECK(a.padding[d] >= 0, op, "negative padding is not supported, got ", IntArrayRef(a.padding));
  }
  return a;
}

// Spatial dim d (of `spatial`) of the kernel's shape, whose arrays are right-aligned in 3.
void set_spatial_dim(cpu::ConvShape& s, int64_t spatial, int64_t d, int64_t in, int64_t out, int64_t kernel,
                     const SpatialArgs& a) {
  const int64_t k = 3 - spatial + d;
  s.in[k] = in;
  s.out[k] = out;
  s.kernel[k] = kernel;
  s.stride[k] = a.stride[d];
  s.pad[k] = a.padding[d];
  s.dilation[k] = a.dilation[d];
}

// Input, weight and bias [out_channels] share one floating dtype.
void check_operand_dtypes(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t out_channels,
                          const char* op) {
  EMBER_CHECK(x.scalar_type() == weight.scalar_type(), op, "input (", dtype_name(x.scalar_type()), ") and weight (",
              dtype_name(weight.scalar_type()), ") must have the same dtype");
  EMBER_CHECK(x.is_floating_point(), op, "not implemented for dtype ", dtype_name(x.scalar_type()),
              "; use a floating-point dtype");
  if (bias.defined()) {
    EMBER_CHECK(bias.dim() == 1 && bias.size(0) == out_channels, op, "expected bias of shape [", out_channels,
                "], got ", bias.sizes());
    EMBER_CHECK(bias.scalar_type() == x.scalar_type(), op, "bias (", dtype_name(bias.scalar_type()),
                ") must have the input's dtype ", dtype_name(x.scalar_type()));
  }
}

// Checks every argument and fills the kernel's shape (spatial dims right-aligned in 3).
cpu::ConvShape conv_shape(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride_arg,
                          IntArrayRef padding_arg, IntArrayRef dilation_arg, int64_t groups, const char* op) {
  const int64_t spatial = weight.dim() - 2;
  EMBER_CHECK(x.dim() == spatial + 2, op, "expected a ", spatial + 2, "-d input for a ", spatial + 2,
              "-d weight ", weight.sizes(), ", got input ", x.sizes());
  const SpatialArgs a = spatial_args(stride_arg, padding_arg, dilation_arg, spatial, op);
  EMBER_CHECK(groups > 0, op, "groups must be positive, got ", groups);
  const int64_t in_channels = x.size(1), out_channels = weight.size(0);
  EMBER_CHECK(out_channels % groups == 0, op, "groups (", groups, ") must divide out_channels (", out_channels,
              ") of weight ", weight.sizes());
  EMBER_CHECK(weight.size(1) * groups == in_channels, op, "expected input ", x.sizes(), " to have ",
              weight.size(1) * groups, " channels (weight ", weight.sizes(), ", groups ", groups, "), got ",
              in_channels, " channels");
  check_operand_dtypes(x, weight, bias, out_channels, op);
  cpu::ConvShape s;
  s.batch = x.size(0);
  s.in_channels = in_channels;
  s.out_channels = out_channels;
  s.groups = groups;
  for (int64_t d = 0; d < spatial; ++d) {
    const int64_t in = x.size(2 + d), kernel = weight.size(2 + d);
    const int64_t padded = in + 2 * a.padding[d], reach = a.dilation[d] * (kernel - 1) + 1;
    EMBER_CHECK(reach <= padded, op, "kernel size ", kernel, " (dilated: ", reach,
                ") can't be greater than the padded input size ", padded, " in spatial dim ", d, " (input ", x.sizes(),
                ", padding ", IntArrayRef(a.padding), ")");
    set_spatial_dim(s, spatial, d, in, (padded - reach) / a.stride[d] + 1, kernel, a);
  }
  return s;
}

Tensor convolution_impl(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef dilation, int64_t groups, const char* op) {
  EMBER_CHECK(input.defined() && weight.defined(), op, "called with an undefined input or weight");
  EMBER_CHECK(weight.dim() >= 3 && weight.dim() <= 5, op, "expected a 3-d, 4-d or 5-d weight, got ", weight.sizes());
  // Unbatched input [C, *spatial] runs as a batch of one.
  if (input.dim() == weight.dim() - 1)
    return convolution_impl(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, op).squeeze(0);
  const cpu::ConvShape s = conv_shape(input, weight, bias, stride, padding, dilation, groups, op);
  // float16/bfloat16 run on float32 copies (float32 accumulation, one rounding at the end).
  if (input.scalar_type() == kBFloat16 || input.scalar_type() == kFloat16) {
    return convolution_impl(input.to(kFloat32), weight.to(kFloat32), bias.defined() ? bias.to(kFloat32) : bias, stride,
                            padding, dilation, groups, op)
        .to(input.scalar_type());
  }
  const ScalarType dtype = input.scalar_type();
  const Tensor x = input.detach().contiguous(), w = weight.detach().contiguous();
  const Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  std::vector<int64_t> out_sizes = {s.batch, s.out_channels};
  for (int64_t d = 3 - (weight.dim() - 2); d < 3; ++d) out_sizes.push_back(s.out[d]);
  Tensor out = core::make_tensor(out_sizes, dtype);
  Tensor scratch = core::make_tensor({cpu::conv_scratch_elements(dtype, s)}, dtype);
  core::launch(op, [&] {
    return [dtype, s, xp = x.data_ptr(), wp = w.data_ptr(), bp = b.defined() ? b.data_ptr() : nullptr,
            o = out.data_ptr(), work = scratch.data_ptr()] { cpu::conv_forward(dtype, s, xp, wp, bp, o, work); };
  });
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
                     Tensor work = core::make_tensor({cpu::conv_scratch_elements(dtype, s)}, dtype);
                     std::vector<Tensor> result(needs.size());
                     if (needs[0]) {
                       result[0] = core::make_tensor(xs.sizes(), dtype);
                       core::launch("conv_backward_input", [&] {
                         return [dtype, s, gp = g.data_ptr(), wp = ws.data_ptr(), o = result[0].data_ptr(),
                                 scratch = work.data_ptr()] { cpu::conv_backward_input(dtype, s, gp, wp, o, scratch); };
                       });
                     }
                     if (needs[1]) {
                       result[1] = core::make_tensor(ws.sizes(), dtype);
                       core::launch("conv_backward_weight", [&] {
                         return [dtype, s, xp = xs.data_ptr(), gp = g.data_ptr(), o = result[1].data_ptr(),
                                 scratch = work.data_ptr()] { cpu::conv_backward_weight(dtype, s, xp, gp, o, scratch); };
                       });
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

// Note [Transposed convolution as a convolution's adjoint]
// With C the convolution whose input has the transposed output's shape (channels out, size
// out_T) and whose output has the transposed input's shape (channels in, size in_T), sharing
// stride, padding, dilation, groups and the weight [in, out / groups, *kernel],
// conv_transpose(x, w) is C's input gradient at grad_out = x. So the forward is
// conv_backward_input, the input gradient is C itself (conv_forward), and the weight gradient
// is C's weight gradient with C's input = grad and grad_out = x.

// The convolution C of the Note (spatial dims right-aligned in 3), after every argument check.
cpu::ConvShape adjoint_shape(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride_arg,
                             IntArrayRef padding_arg, IntArrayRef output_padding_arg, int64_t groups,
                             IntArrayRef dilation_arg, const char* op) {
  const int64_t spatial = weight.dim() - 2;
  EMBER_CHECK(x.dim() == spatial + 2, op, "expected a ", spatial + 2, "-d input for a ", spatial + 2, "-d weight ",
              weight.sizes(), ", got input ", x.sizes());
  const SpatialArgs a = spatial_args(stride_arg, padding_arg, dilation_arg, spatial, op);
  const auto output_padding = per_dim(output_padding_arg, spatial, op, "output_padding");
  EMBER_CHECK(groups > 0, op, "groups must be positive, got ", groups);
  const int64_t in_channels = weight.size(0), out_channels = weight.size(1) * groups;
  EMBER_CHECK(in_channels % groups == 0, op, "groups (", groups, ") must divide the weight's in_channels (",
              in_channels, ") of weight ", weight.sizes());
  EMBER_CHECK(x.size(1) == in_channels, op, "expected input ", x.sizes(), " to have ", in_channels,
              " channels (weight ", weight.sizes(), "), got ", x.size(1), " channels");
  check_operand_dtypes(x, weight, bias, out_channels, op);
  cpu::ConvShape s;
  s.batch = x.size(0);
  s.in_channels = out_channels;
  s.out_channels = in_channels;
  s.groups = groups;
  for (int64_t d = 0; d < spatial; ++d) {
    EMBER_CHECK(output_padding[d] >= 0 && (output_padding[d] < a.stride[d] || output_padding[d] < a.dilation[d]), op,
                "output_padding must be smaller than either stride or dilation, got output_padding ",
                IntArrayRef(output_padding), ", stride ", IntArrayRef(a.stride), ", dilation ",
                IntArrayRef(a.dilation));
    const int64_t in = x.size(2 + d), kernel = weight.size(2 + d);
    const int64_t out =
        (in - 1) * a.stride[d] - 2 * a.padding[d] + a.dilation[d] * (kernel - 1) + output_padding[d] + 1;
    EMBER_CHECK(out > 0, op, "the output size ", out, " of spatial dim ", d, " is too small (input ", x.sizes(),
                ", weight ", weight.sizes(), ", padding ", IntArrayRef(a.padding), ")");
    set_spatial_dim(s, spatial, d, out, in, kernel, a);
  }
  return s;
}

Tensor conv_transpose_impl(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                           IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation,
                           int64_t rank, const char* op) {
  EMBER_CHECK(input.defined() && weight.defined(), op, "called with an undefined input or weight");
  EMBER_CHECK(weight.dim() == rank + 2, op, "expected a ", rank + 2, "-d weight [in_channels, out_channels / groups, ",
              "*kernel], got ", weight.sizes());
  if (input.dim() == rank + 1)  // unbatched [C, *spatial]
    return conv_transpose_impl(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups, dilation,
                               rank, op)
        .squeeze(0);
  const cpu::ConvShape s = adjoint_shape(input, weight, bias, stride, padding, output_padding, groups, dilation, op);
  if (input.scalar_type() == kBFloat16 || input.scalar_type() == kFloat16) {
    return conv_transpose_impl(input.to(kFloat32), weight.to(kFloat32), bias.defined() ? bias.to(kFloat32) : bias,
                               stride, padding, output_padding, groups, dilation, rank, op)
        .to(input.scalar_type());
  }
  const ScalarType dtype = input.scalar_type();
  const Tensor x = input.detach().contiguous(), w = weight.detach().contiguous();
  std::vector<int64_t> out_sizes = {s.batch, s.in_channels};
  for (int64_t d = 3 - rank; d < 3; ++d) out_sizes.push_back(s.in[d]);
  Tensor out = core::make_tensor(out_sizes, dtype);
  Tensor scratch = core::make_tensor({cpu::conv_scratch_elements(dtype, s)}, dtype);
  cpu::conv_backward_input(dtype, s, x.data_ptr(), w.data_ptr(), out.data_ptr(), scratch.data_ptr());
  if (autograd::should_record({input, weight})) {
    SavedTensor saved_x(x), saved_w(w);
    const std::string name = op;
    autograd::record(
        "ConvTransposeBackward", {input, weight}, {out},
        [=](std::vector<Tensor>& grads, const std::vector<bool>& needs) -> std::vector<Tensor> {
          EMBER_CHECK(!is_grad_enabled(), name.c_str(), "double backward (create_graph=true) is not supported");
          const Tensor g = grads[0].to(dtype).contiguous();
          const Tensor xs = saved_x.get(), ws = saved_w.get();
          Tensor work = core::make_tensor({cpu::conv_scratch_elements(dtype, s)}, dtype);
          std::vector<Tensor> result(2);
          if (needs[0]) {
            result[0] = core::make_tensor(xs.sizes(), dtype);
            cpu::conv_forward(dtype, s, g.data_ptr(), ws.data_ptr(), nullptr, result[0].data_ptr(), work.data_ptr());
          }
          if (needs[1]) {
            result[1] = core::make_tensor(ws.sizes(), dtype);
            cpu::conv_backward_weight(dtype, s, g.data_ptr(), xs.data_ptr(), result[1].data_ptr(), work.data_ptr());
          }
          return result;
        });
  }
  if (!bias.defined()) return out;
  std::vector<int64_t> bias_shape(static_cast<size_t>(out.dim()), 1);
  bias_shape[1] = s.in_channels;
  return out + bias.view(bias_shape);
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

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return conv_transpose_impl(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                             "conv_transpose1d");
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return conv_transpose_impl(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                             "conv_transpose2d");
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return conv_transpose_impl(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                             "conv_transpose3d");
}

}  // namespace ember
