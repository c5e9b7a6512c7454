// max/avg pooling and their adaptive forms: argument checks and output shapes here, the
// windows and loops in cpu/pooling.
#include <algorithm>
#include <array>
#include <vector>

#include "cpu/pooling.h"
#include "cpu/shape_rules.h"
#include "ops/op_utils.h"

namespace ember {
namespace {

using Windows = std::array<cpu::PoolWindows, 3>;

std::vector<int64_t> per_dim(IntArrayRef values, int64_t rank, const char* op, const char* arg) {
  EMBER_CHECK(values.size() == 1 || static_cast<int64_t>(values.size()) == rank, op, arg, " must have 1 or ", rank,
              " values, got ", values);
  std::vector<int64_t> out(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) out[d] = values[values.size() == 1 ? 0 : static_cast<size_t>(d)];
  return out;
}

void check_input(const Tensor& x, int64_t rank, const char* op) {
  EMBER_CHECK(x.defined(), op, "called on an undefined tensor");
  EMBER_CHECK(x.dim() == rank + 2, op, "expected a ", rank + 1, "-d or ", rank + 2,
              "-d (batched) input, got ", x.sizes());
  for (int64_t d = 1; d < x.dim(); ++d)
    EMBER_CHECK(x.size(d) > 0, op, "expected an input with non-zero channel and spatial sizes, got ", x.sizes());
  EMBER_CHECK(x.is_floating_point(), op, "not implemented for dtype ", dtype_name(x.scalar_type()),
              "; use a floating-point dtype");
}

// The sliding windows of every spatial dim, leading unused dims first.
Windows sliding(const Tensor& x, int64_t rank, IntArrayRef kernel_arg, IntArrayRef stride_arg,
                IntArrayRef padding_arg, IntArrayRef dilation_arg, bool ceil_mode, bool count_include_pad,
                const char* op) {
  const auto kernel = per_dim(kernel_arg, rank, op, "kernel_size");
  const auto stride = stride_arg.empty() ? kernel : per_dim(stride_arg, rank, op, "stride");
  const auto padding = per_dim(padding_arg, rank, op, "padding");
  const auto dilation = per_dim(dilation_arg, rank, op, "dilation");
  Windows w = {cpu::unit_windows(), cpu::unit_windows(), cpu::unit_windows()};
  for (int64_t d = 0; d < rank; ++d) {
    // The window's shape rule (src/cpu/shape_rules.h), worded for eager.
    switch (cpu::pool_window_rule(kernel[d], stride[d], padding[d], dilation[d])) {
      case cpu::ShapeFault::None: break;
      case cpu::ShapeFault::KernelSize: EMBER_FAIL(op, "kernel_size must be positive, got ", IntArrayRef(kernel));
      case cpu::ShapeFault::Stride: EMBER_FAIL(op, "stride must be positive, got ", IntArrayRef(stride));
      case cpu::ShapeFault::Dilation: EMBER_FAIL(op, "dilation must be positive, got ", IntArrayRef(dilation));
      case cpu::ShapeFault::TooLarge:
        EMBER_FAIL(op, "kernel_size, stride and dilation must be below 2^31, got kernel_size ", IntArrayRef(kernel),
                   ", stride ", IntArrayRef(stride), ", dilation ", IntArrayRef(dilation));
      case cpu::ShapeFault::Padding:
        EMBER_FAIL(op, "padding must be non-negative and at most half of the (dilated) kernel size, got padding ",
                   IntArrayRef(padding), " for kernel_size ", IntArrayRef(kernel));
      default: EMBER_FAIL(op, "invalid window in spatial dim ", d);
    }
    const int64_t in = x.size(2 + d);
    const int64_t out = cpu::pooled_size(in, kernel[d], padding[d], stride[d], dilation[d], ceil_mode);
    EMBER_CHECK(out > 0, op, "output size is too small: input ", x.sizes(), ", kernel_size ", IntArrayRef(kernel),
                ", padding ", IntArrayRef(padding), ", dilation ", IntArrayRef(dilation), " give ", out,
                " in spatial dim ", d);
    w[3 - rank + d] = cpu::sliding_windows(in, out, kernel[d], stride[d], padding[d], dilation[d], count_include_pad);
  }
  return w;
}

Windows adaptive(const Tensor& x, int64_t rank, IntArrayRef output_arg, const char* op) {
  const auto output = per_dim(output_arg, rank, op, "output_size");
  Windows w = {cpu::unit_windows(), cpu::unit_windows(), cpu::unit_windows()};
  for (int64_t d = 0; d < rank; ++d) {
    EMBER_CHECK(output[d] > 0, op, "output_size must be positive, got ", IntArrayRef(output));
    w[3 - rank + d] = cpu::adaptive_windows(x.size(2 + d), output[d]);
  }
  return w;
}

std::vector<int64_t> output_sizes(const Tensor& x, const Windows& w, int64_t rank) {
  std::vector<int64_t> sizes = {x.size(0), x.size(1)};
  for (int64_t d = 3 - rank; d < 3; ++d) sizes.push_back(w[d].out);
  return sizes;
}

// Max pooling over windows `w` of x (batched, checked); records the backward.
std::tuple<Tensor, Tensor> max_pool(const Tensor& input, const Windows& w, int64_t rank) {
  const ScalarType dtype = input.scalar_type();
  const Tensor x = input.detach().contiguous();
  const auto sizes = output_sizes(x, w, rank);
  Tensor out = core::make_tensor(sizes, dtype), indices = core::make_tensor(sizes, kInt64);
  const int64_t planes = x.size(0) * x.size(1);
  core::launch("max_pool", [&] {
    return [dtype, planes, w, in = x.data_ptr(), o = out.data_ptr(), i = indices.data_ptr<int64_t>()] {
      cpu::max_pool_forward(dtype, planes, w.data(), in, o, i);
    };
  });
  if (autograd::should_record({input})) {
    const int64_t in_plane = w[0].in * w[1].in * w[2].in, out_plane = w[0].out * w[1].out * w[2].out;
    const std::vector<int64_t> in_sizes = x.sizes();
    autograd::record("MaxPoolBackward", {input}, {out},
                     [=](std::vector<Tensor>& grads, const std::vector<bool>&) -> std::vector<Tensor> {
                       if (is_grad_enabled()) {
                         // create_graph: the same scatter as differentiable ops (its gradient
                         // gathers the incoming gradient at the indices).
                         const std::vector<int64_t> out_planes = {in_sizes[0], in_sizes[1], out_plane};
                         return {zeros({in_sizes[0], in_sizes[1], in_plane}, TensorOptions().dtype(dtype))
                                     .scatter_add(2, indices.reshape(out_planes), grads[0].to(dtype).reshape(out_planes))
                                     .reshape(in_sizes)};
                       }
                       const Tensor g = grads[0].to(dtype).contiguous();
                       Tensor grad_x = core::make_tensor(in_sizes, dtype);
                       core::launch("max_pool_backward", [&] {
                         return [dtype, planes, in_plane, out_plane, gp = g.data_ptr(),
                                 i = indices.data_ptr<int64_t>(), gx = grad_x.data_ptr()] {
                           cpu::max_pool_backward(dtype, planes, in_plane, out_plane, gp, i, gx);
                         };
                       });
                       return {grad_x};
                     });
  }
  return {out, indices};
}

// Average pooling A over windows `w` (adjoint = false: x -> out) or its adjoint A^T, the
// gradient (adjoint = true: grad_out -> grad_x). Each is linear and the other's adjoint, so
// each records the other as its backward: gradients of any order (create_graph=true).
Tensor avg_pool_pass(bool adjoint, const Tensor& input, const Windows& w, int64_t rank, int64_t divisor_override) {
  const ScalarType dtype = input.scalar_type();
  const Tensor x = input.detach().contiguous();
  std::vector<int64_t> sizes = {x.size(0), x.size(1)};
  for (int64_t d = 3 - rank; d < 3; ++d) sizes.push_back(adjoint ? w[d].in : w[d].out);
  Tensor out = core::make_tensor(sizes, dtype);
  const int64_t planes = x.size(0) * x.size(1);
  core::launch(adjoint ? "avg_pool_backward" : "avg_pool", [&] {
    return [adjoint, dtype, planes, w, divisor_override, in = x.data_ptr(), o = out.data_ptr()] {
      if (adjoint) cpu::avg_pool_backward(dtype, planes, w.data(), divisor_override, in, o);
      else cpu::avg_pool_forward(dtype, planes, w.data(), divisor_override, in, o);
    };
  });
  if (autograd::should_record({input})) {
    autograd::record(adjoint ? "AvgPoolBackwardBackward" : "AvgPoolBackward", {input}, {out},
                     [=](std::vector<Tensor>& grads, const std::vector<bool>&) -> std::vector<Tensor> {
                       return {avg_pool_pass(!adjoint, grads[0].to(dtype), w, rank, divisor_override)};
                     });
  }
  return out;
}

Tensor avg_pool(const Tensor& input, const Windows& w, int64_t rank, int64_t divisor_override) {
  return avg_pool_pass(false, input, w, rank, divisor_override);
}

// Runs fn on a batched input in a type the kernels compute in: an unbatched [C, *spatial]
// one gains a batch of one and loses it after; float16/bfloat16 run on float32 copies.
template <typename Fn>
auto batched(const Tensor& input, int64_t rank, Fn fn) {
  const bool unbatched = input.defined() && input.dim() == rank + 1;
  const bool reduced = input.defined() && (input.scalar_type() == kBFloat16 || input.scalar_type() == kFloat16);
  const Tensor x = unbatched ? input.unsqueeze(0) : input;
  auto result = fn(reduced ? x.to(kFloat32) : x);
  auto restore = [&](const Tensor& t) {
    const Tensor back = reduced ? t.to(input.scalar_type()) : t;
    return unbatched ? back.squeeze(0) : back;
  };
  if constexpr (std::is_same_v<decltype(result), Tensor>) {
    return restore(result);
  } else {
    const Tensor& indices = std::get<1>(result);
    return std::tuple<Tensor, Tensor>{restore(std::get<0>(result)), unbatched ? indices.squeeze(0) : indices};
  }
}

// The window geometry of a pooling op, per spatial dim, for its export trace.
void trace_windows(core::TraceOp& trace, int64_t rank, const char* op, IntArrayRef kernel_size, IntArrayRef stride,
                   IntArrayRef padding, bool ceil_mode) {
  if (!trace.active()) return;
  const auto kernel = per_dim(kernel_size, rank, op, "kernel_size");
  trace.attr("kernel_size", kernel)
      .attr("stride", stride.empty() ? kernel : per_dim(stride, rank, op, "stride"))
      .attr("padding", per_dim(padding, rank, op, "padding"))
      .attr("ceil_mode", static_cast<int64_t>(ceil_mode));
}

std::tuple<Tensor, Tensor> max_pool_nd(int64_t rank, const char* op, const Tensor& input, IntArrayRef kernel_size,
                                       IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                       bool with_indices) {
  EMBER_RECORD_OP(op, input);
  auto result = batched(input, rank, [&](const Tensor& x) {
    check_input(x, rank, op);
    return max_pool(x, sliding(x, rank, kernel_size, stride, padding, dilation, ceil_mode, true, op), rank);
  });
  trace_windows(ember_trace_op_, rank, op, kernel_size, stride, padding, ceil_mode);
  ember_trace_op_.attr("dilation", per_dim(dilation, rank, op, "dilation"))
      .attr("return_indices", static_cast<int64_t>(with_indices));
  if (with_indices) ember_trace_op_.results({std::get<0>(result), std::get<1>(result)});
  else ember_trace_op_.result(std::get<0>(result));
  return result;
}

Tensor avg_pool_nd(int64_t rank, const char* op, const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                   IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                   std::optional<int64_t> divisor_override) {
  EMBER_CHECK(!divisor_override || *divisor_override != 0, op, "divisor_override must be non-zero");
  EMBER_RECORD_OP(op, input);
  Tensor out = batched(input, rank, [&](const Tensor& x) {
    check_input(x, rank, op);
    return avg_pool(x, sliding(x, rank, kernel_size, stride, padding, 1, ceil_mode, count_include_pad, op), rank,
                    divisor_override.value_or(0));
  });
  trace_windows(ember_trace_op_, rank, op, kernel_size, stride, padding, ceil_mode);
  ember_trace_op_.attr("count_include_pad", static_cast<int64_t>(count_include_pad))
      .attr("divisor_override", divisor_override.value_or(0));
  return ember_trace_op_.result(out);
}

Tensor adaptive_avg_pool_nd(int64_t rank, const char* op, const Tensor& input, IntArrayRef output_size) {
  EMBER_RECORD_OP(op, input);  // no export support yet: the trace refuses its result
  return batched(input, rank, [&](const Tensor& x) {
    check_input(x, rank, op);
    const Windows w = adaptive(x, rank, output_size, op);
    // One output per spatial dim (a classifier's head) is the mean over them, as PyTorch
    // computes it: one reduction, not a walk over windows (1.6x faster at ResNet's [8, 512, 7, 7]).
    if (std::all_of(w.begin(), w.end(), [](const cpu::PoolWindows& d) { return d.out == 1; })) {
      std::vector<int64_t> spatial;
      for (int64_t d = 0; d < rank; ++d) spatial.push_back(2 + d);
      return x.mean(spatial, /*keepdim=*/true);
    }
    return avg_pool(x, w, rank, 0);
  });
}

std::tuple<Tensor, Tensor> adaptive_max_pool_nd(int64_t rank, const char* op, const Tensor& input,
                                                IntArrayRef output_size) {
  EMBER_RECORD_OP(op, input);  // no export support yet: the trace refuses its result
  return batched(input, rank, [&](const Tensor& x) {
    check_input(x, rank, op);
    return max_pool(x, adaptive(x, rank, output_size, op), rank);
  });
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return max_pool_nd(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode, true);
}
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(max_pool_nd(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode, false));
}
Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad) {
  return avg_pool_nd(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     std::nullopt);
}
Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size) {
  return adaptive_avg_pool_nd(1, "adaptive_avg_pool1d", input, output_size);
}
std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size) {
  return adaptive_max_pool_nd(1, "adaptive_max_pool1d", input, output_size);
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return max_pool_nd(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode, true);
}
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(max_pool_nd(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode, false));
}
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  return avg_pool_nd(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override);
}
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  return adaptive_avg_pool_nd(2, "adaptive_avg_pool2d", input, output_size);
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  return adaptive_max_pool_nd(2, "adaptive_max_pool2d", input, output_size);
}

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return max_pool_nd(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode, true);
}
Tensor max_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(max_pool_nd(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode, false));
}
Tensor avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  return avg_pool_nd(3, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override);
}
Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size) {
  return adaptive_avg_pool_nd(3, "adaptive_avg_pool3d", input, output_size);
}
std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size) {
  return adaptive_max_pool_nd(3, "adaptive_max_pool3d", input, output_size);
}

}  // namespace ember
