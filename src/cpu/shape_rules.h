// Shape rules: the argument checks and output sizes of convolution and pooling, written once
// over plain integers for eager (src/ops/conv.cpp, src/ops/pooling.cpp) and the runtime
// (src/runtime/kernels/conv.h, pool.h). A rule stops at the first argument at fault and names
// it (ShapeFault and the spatial dim); each side words its message from that and the values
// it holds (an ember::Error in eager, the runtime's Error).
#pragma once
#include <cstdint>

#include "cpu/conv.h"

namespace ember::cpu {

enum class ShapeFault {
  None,
  Stride,                  // stride <= 0
  Dilation,                // dilation <= 0
  Padding,                 // convolution: < 0; pooling: outside [0, half the dilated kernel]
  KernelSize,              // pooling: kernel_size <= 0
  TooLarge,                // pooling: kernel_size, stride or dilation >= 2^31 (far from overflow)
  Groups,                  // groups <= 0
  GroupsSplitOutChannels,  // groups does not divide out_channels
  InChannels,              // the input's channels != weight.size(1) * groups
  KernelPastInput,         // the dilated kernel is larger than the padded input
  EmptyOutput,             // pooling: not one window fits
};

struct ShapeCheck {
  ShapeFault fault = ShapeFault::None;
  int dim = 0;  // the spatial dim at fault (dims that are not spatial: 0)
  bool ok() const { return fault == ShapeFault::None; }
};

// The extent of a kernel of `kernel` taps `dilation` apart.
inline int64_t dilated_extent(int64_t kernel, int64_t dilation) { return dilation * (kernel - 1) + 1; }

// The stride, padding and dilation of a convolution (or a transposed one), one per spatial dim.
inline ShapeCheck conv_args_rule(int spatial, const int64_t* stride, const int64_t* padding, const int64_t* dilation) {
  for (int d = 0; d < spatial; ++d) {
    if (stride[d] <= 0) return {ShapeFault::Stride, d};
    if (dilation[d] <= 0) return {ShapeFault::Dilation, d};
    if (padding[d] < 0) return {ShapeFault::Padding, d};
  }
  return {};
}

// A convolution of x [batch, in_channels, *in] with weight [out_channels, in_channels / groups,
// *kernel] over `spatial` (1-3) dims, stride, padding and dilation one value per spatial dim.
// On success fills *s (spatial dims right-aligned in 3: the leading ones stay size 1).
inline ShapeCheck conv_shape_rule(int spatial, const int64_t* x, const int64_t* weight, const int64_t* stride,
                                  const int64_t* padding, const int64_t* dilation, int64_t groups, ConvShape* s) {
  if (const ShapeCheck args = conv_args_rule(spatial, stride, padding, dilation); !args.ok()) return args;
  if (groups <= 0) return {ShapeFault::Groups};
  if (weight[0] % groups != 0) return {ShapeFault::GroupsSplitOutChannels};
  if (weight[1] * groups != x[1]) return {ShapeFault::InChannels};
  s->batch = x[0];
  s->in_channels = x[1];
  s->out_channels = weight[0];
  s->groups = groups;
  for (int d = 0; d < spatial; ++d) {
    const int64_t padded = x[2 + d] + 2 * padding[d], reach = dilated_extent(weight[2 + d], dilation[d]);
    if (reach > padded) return {ShapeFault::KernelPastInput, d};
    const int k = 3 - spatial + d;
    s->in[k] = x[2 + d];
    s->kernel[k] = weight[2 + d];
    s->stride[k] = stride[d];
    s->pad[k] = padding[d];
    s->dilation[k] = dilation[d];
    s->out[k] = (padded - reach) / stride[d] + 1;
  }
  return {};
}

// One spatial dim of a sliding-window pooling (max: any dilation; average: dilation 1).
inline ShapeFault pool_window_rule(int64_t kernel, int64_t stride, int64_t padding, int64_t dilation) {
  if (kernel <= 0) return ShapeFault::KernelSize;
  if (stride <= 0) return ShapeFault::Stride;
  if (dilation <= 0) return ShapeFault::Dilation;
  if (kernel > INT32_MAX || stride > INT32_MAX || dilation > INT32_MAX) return ShapeFault::TooLarge;
  if (padding < 0 || padding > dilated_extent(kernel, dilation) / 2) return ShapeFault::Padding;
  return ShapeFault::None;
}

// PyTorch's pooling_output_shape: outputs of a sliding window over `in` (<= 0: none fit, the
// fault EmptyOutput). The window arguments must have passed pool_window_rule.
inline int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

}  // namespace ember::cpu
