// convolution, conv1d/2d/3d and conv_transpose1d/2d/3d: argument checks and shapes here,
// im2col + GEMM in cpu/conv.
#include <algorithm>

#include "cpu/conv.h"
#include "cpu/conv_onednn.h"
#include "cpu/shape_rules.h"
#include "ember/backends.h"
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

// stride, padding and dilation, one value per spatial dim.
struct SpatialArgs {
  std::vector<int64_t> stride, padding, dilation;
};

// The eager message of a convolution shape rule's fault (src/cpu/shape_rules.h).
void check_conv_rule(cpu::ShapeCheck check, IntArrayRef x, IntArrayRef weight, const SpatialArgs& a, int64_t groups,
                     const char* op) {
  switch (check.fault) {
    case cpu::ShapeFault::None: return;
    case cpu::ShapeFault::Stride: EMBER_FAIL(op, "stride must be positive, got ", IntArrayRef(a.stride));
    case cpu::ShapeFault::Dilation: EMBER_FAIL(op, "dilation must be positive, got ", IntArrayRef(a.dilation));
    case cpu::ShapeFault::Padding: EMBER_FAIL(op, "negative padding is not supported, got ", IntArrayRef(a.padding));
    case cpu::ShapeFault::Groups: EMBER_FAIL(op, "groups must be positive, got ", groups);
    case cpu::ShapeFault::GroupsSplitOutChannels:
      EMBER_FAIL(op, "groups (", groups, ") must divide out_channels (", weight[0], ") of weight ", weight);
    case cpu::ShapeFault::InChannels:
      EMBER_FAIL(op, "expected input ", x, " to have ", weight[1] * groups, " channels (weight ", weight, ", groups ",
                 groups, "), got ", x[1], " channels");
    case cpu::ShapeFault::KernelPastInput: {
      const int d = check.dim;
      EMBER_FAIL(op, "kernel size ", weight[2 + d], " (dilated: ", cpu::dilated_extent(weight[2 + d], a.dilation[d]),
                 ") can't be greater than the padded input size ", x[2 + d] + 2 * a.padding[d], " in spatial dim ", d,
                 " (input ", x, ", padding ", IntArrayRef(a.padding), ")");
    }
    default: EMBER_FAIL(op, "invalid convolution arguments");
  }
}

SpatialArgs spatial_args(IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t spatial,
                         const char* op) {
  SpatialArgs a{per_dim(stride, spatial, op, "stride"), per_dim(padding, spatial, op, "padding"),
                per_dim(dilation, spatial, op, "dilation")};
  check_conv_rule(cpu::conv_args_rule(static_cast<int>(spatial), a.stride.data(), a.padding.data(), a.dilation.data()),
                  {}, {}, a, 1, op);
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

// Checks the sizes and arguments of a convolution of x [batch, in, *spatial] with weight
// [out, in / groups, *kernel] (a 3-5-d weight) and fills the kernel's shape (spatial dims
// right-aligned in 3).
cpu::ConvShape conv_shape_of_sizes(IntArrayRef x, IntArrayRef weight, IntArrayRef stride_arg, IntArrayRef padding_arg,
                                   IntArrayRef dilation_arg, int64_t groups, const char* op) {
  const int64_t spatial = static_cast<int64_t>(weight.size()) - 2;
  EMBER_CHECK(spatial >= 1 && spatial <= 3, op, "expected a 3-d, 4-d or 5-d weight, got ", weight);
  EMBER_CHECK(static_cast<int64_t>(x.size()) == spatial + 2, op, "expected a ", spatial + 2, "-d input for a ",
              spatial + 2, "-d weight ", weight, ", got input ", x);
  const SpatialArgs a = spatial_args(stride_arg, padding_arg, dilation_arg, spatial, op);
  cpu::ConvShape s;
  check_conv_rule(cpu::conv_shape_rule(static_cast<int>(spatial), x.data(), weight.data(), a.stride.data(),
                                       a.padding.data(), a.dilation.data(), groups, &s),
                  x, weight, a, groups, op);
  return s;
}

// Checks every argument and fills the kernel's shape.
cpu::ConvShape conv_shape(const Tensor& x, const Tensor& weight, const Tensor& bias, IntArrayRef stride_arg,
                          IntArrayRef padding_arg, IntArrayRef dilation_arg, int64_t groups, const char* op) {
  const cpu::ConvShape s = conv_shape_of_sizes(x.sizes(), weight.sizes(), stride_arg, padding_arg, dilation_arg,
                                               groups, op);
  check_operand_dtypes(x, weight, bias, s.out_channels, op);
  return s;
}

// Note [Convolution passes as ops]
// A convolution shape s has three passes (cpu/conv.h): the forward F(x, w), the input
// gradient I(g, w) and the weight gradient W(x, g). Each is linear in both arguments and they
// are adjoint: <F(x, w), g> = <x, I(g, w)> = <w, W(x, g)>. So each pass's gradients (u the
// gradient of its output) are passes again:
//   F(x, w):  dx = I(u, w),  dw = W(x, u)
//   I(g, w):  dg = F(u, w),  dw = W(u, g)
//   W(x, g):  dx = I(g, u),  dg = F(x, u)
// conv_pass records exactly that as its backward, so gradients of any order work
// (create_graph=true, e.g. a gradient penalty); without create_graph the backward's passes
// record nothing and only run their kernels. The transposed convolution is the pass I of its
// adjoint convolution (Note [Transposed convolution as a convolution's adjoint]).
enum class ConvPass { Forward, Input, Weight };

// The sizes of a pass's output: the convolution's output, input or weight (`rank` spatial dims).
std::vector<int64_t> pass_sizes(ConvPass pass, const cpu::ConvShape& s, int64_t rank) {
  std::vector<int64_t> sizes;
  if (pass == ConvPass::Weight) sizes = {s.out_channels, s.in_channels / s.groups};
  else sizes = {s.batch, pass == ConvPass::Forward ? s.out_channels : s.in_channels};
  for (int64_t d = 3 - rank; d < 3; ++d)
    sizes.push_back(pass == ConvPass::Weight ? s.kernel[d] : pass == ConvPass::Forward ? s.out[d] : s.in[d]);
  return sizes;
}

// One pass of shape s on a and b (F: x, w; I: g, w; W: x, g) of `dtype`, plus the bias on
// the forward (may be undefined); `name` names its kernel call. Differentiable to any order.
Tensor conv_pass(ConvPass pass, const cpu::ConvShape& s, int64_t rank, ScalarType dtype, const Tensor& a,
                 const Tensor& b, const Tensor& bias, const char* name) {
  const Tensor ak = a.detach().to(dtype).contiguous(), bk = b.detach().to(dtype).contiguous();
  const Tensor biask = bias.defined() ? bias.detach().contiguous() : Tensor();
  Tensor out = core::make_tensor(pass_sizes(pass, s, rank), dtype);
  Tensor scratch = core::make_tensor({cpu::conv_scratch_elements(dtype, s, pass == ConvPass::Weight)}, dtype);
  core::launch(name, [&] {
    return [pass, dtype, s, ap = ak.data_ptr(), bp = bk.data_ptr(), biasp = biask.defined() ? biask.data_ptr() : nullptr,
            o = out.data_ptr(), work = scratch.data_ptr()] {
      if (pass == ConvPass::Forward) cpu::conv_forward(dtype, s, ap, bp, biasp, o, work);
      else if (pass == ConvPass::Input) cpu::conv_backward_input(dtype, s, ap, bp, o, work);
      else cpu::conv_backward_weight(dtype, s, ap, bp, o, work);
    };
  });
  std::vector<Tensor> inputs = {a, b};
  if (bias.defined()) inputs.push_back(bias);
  if (!autograd::should_record(inputs)) return out;
  // The inputs themselves (not the contiguous copies) so that second derivatives reach them.
  SavedTensor saved_a(a), saved_b(b);
  const char* node = pass == ConvPass::Forward ? "ConvolutionBackward"
                     : pass == ConvPass::Input ? "ConvolutionInputGradBackward"
                                               : "ConvolutionWeightGradBackward";
  autograd::record(node, inputs, {out},
                   [=](std::vector<Tensor>& grads, const std::vector<bool>& needs) -> std::vector<Tensor> {
                     const Tensor& u = grads[0];
                     const Tensor sa = saved_a.get(), sb = saved_b.get();
                     auto run = [&](ConvPass p, const Tensor& first, const Tensor& second) {
                       static const char* const names[] = {"conv_forward", "conv_backward_input",
                                                           "conv_backward_weight"};
                       return conv_pass(p, s, rank, dtype, first, second, Tensor(), names[static_cast<int>(p)]);
                     };
                     std::vector<Tensor> result(needs.size());
                     if (pass == ConvPass::Forward) {
                       if (needs[0]) result[0] = run(ConvPass::Input, u, sb);
                       if (needs[1]) result[1] = run(ConvPass::Weight, sa, u);
                       if (needs.size() > 2 && needs[2]) {
                         std::vector<int64_t> dims = {0};
                         for (int64_t d = 2; d < u.dim(); ++d) dims.push_back(d);
                         result[2] = u.to(dtype).sum(dims);
                       }
                     } else if (pass == ConvPass::Input) {
                       if (needs[0]) result[0] = run(ConvPass::Forward, u, sb);
                       if (needs[1]) result[1] = run(ConvPass::Weight, u, sa);
                     } else {
                       if (needs[0]) result[0] = run(ConvPass::Input, sb, u);
                       if (needs[1]) result[1] = run(ConvPass::Forward, sa, u);
                     }
                     return result;
                   });
  return out;
}

Tensor convolution_impl(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
                        IntArrayRef padding, IntArrayRef dilation, int64_t groups, const char* op) {
  EMBER_CHECK(input.defined() && weight.defined(), op, "called with an undefined input or weight");
  EMBER_CHECK(weight.dim() >= 3 && weight.dim() <= 5, op, "expected a 3-d, 4-d or 5-d weight, got ", weight.sizes());
  // Unbatched input [C, *spatial] runs as a batch of one.
  if (input.dim() == weight.dim() - 1)
    return convolution_impl(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, op).squeeze(0);
  const cpu::ConvShape s = conv_shape(input, weight, bias, stride, padding, dilation, groups, op);
  // float16, and bfloat16 where oneDNN has no bf16 kernel for it, run on float32 copies
  // (float32 accumulation, one rounding at the end).
  if (!cpu::conv_takes(input.scalar_type(), s)) {
    return convolution_impl(input.to(kFloat32), weight.to(kFloat32), bias.defined() ? bias.to(kFloat32) : bias, stride,
                            padding, dilation, groups, op)
        .to(input.scalar_type());
  }
  return conv_pass(ConvPass::Forward, s, weight.dim() - 2, input.scalar_type(), input, weight, bias, op);
}

// The rank-named forms check the weight's rank first, so that a wrong one is named as such.
Tensor conv_of_rank(int64_t rank, const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias,
                    IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  EMBER_CHECK(weight.defined() && weight.dim() == rank + 2, op, "expected a ", rank + 2,
              "-d weight [out_channels, in_channels / groups, *kernel], got ",
              weight.defined() ? weight.sizes() : IntArrayRef());
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
  // A bf16 bias is added after the pass (below), which would round twice: float32 copies then.
  if (!cpu::conv_takes(input.scalar_type(), s) || (input.scalar_type() == kBFloat16 && bias.defined())) {
    return conv_transpose_impl(input.to(kFloat32), weight.to(kFloat32), bias.defined() ? bias.to(kFloat32) : bias,
                               stride, padding, output_padding, groups, dilation, rank, op)
        .to(input.scalar_type());
  }
  const Tensor out = conv_pass(ConvPass::Input, s, rank, input.scalar_type(), input, weight, Tensor(), op);
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

namespace backends {

std::string conv_kernels_for(const std::vector<int64_t>& input_sizes, const std::vector<int64_t>& weight_sizes,
                             const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                             const std::vector<int64_t>& dilation, int64_t groups, ScalarType dtype) {
  for (const std::vector<int64_t>* sizes : {&input_sizes, &weight_sizes})
    EMBER_CHECK(std::all_of(sizes->begin(), sizes->end(), [](int64_t n) { return n >= 0; }), "conv_kernels_for",
                "sizes must be non-negative, got ", *sizes);
  const cpu::ConvShape s =
      conv_shape_of_sizes(input_sizes, weight_sizes, stride, padding, dilation, groups, "conv_kernels_for");
  EMBER_CHECK(is_floating_point(dtype), "conv_kernels_for", "not implemented for dtype ", dtype_name(dtype),
              "; use a floating-point dtype");
  if (!cpu::conv_takes(dtype, s)) return "float32 copies: " + conv_kernels_for(input_sizes, weight_sizes, stride,
                                                                               padding, dilation, groups, kFloat32);
  const std::string kernels = dtype == kFloat64 ? "" : cpu::onednn_conv_kernels(s, dtype);
  if (!kernels.empty()) return kernels;
  return s.pointwise() ? "GEMM (pointwise: the input is the column matrix)" : "im2col + GEMM";
}

}  // namespace backends

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
