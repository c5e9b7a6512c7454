// conv1d/conv2d/conv3d: out = x * weight (+ bias) over `kSpatial` dims, as ember::convolution
// (src/ops/conv.cpp: conv_shape, then cpu::conv_forward's im2col + GEMM on contiguous x,
// weight and bias). Attributes stride, padding, dilation (Ints, one per dim or one for all)
// and groups (Int). float32 and float64 (eager runs float16, and bfloat16 where oneDNN has no
// bf16 kernel for it, through float32 copies; the exporter records those casts).
#pragma once
#include "cpu/conv.h"
#include "cpu/shape_rules.h"
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {

// The convolution's shape rule (src/cpu/shape_rules.h, as eager's conv_shape) over the
// operands' sizes and the Call's attributes; false (and a message) when they do not form a
// convolution.
template <int kSpatial>
bool conv_shape(const char* op, const program::Call* call, const int64_t* x, const int64_t* w, int64_t bias_size,
                cpu::ConvShape* s, Error& error) {
  int64_t groups = 1, stride[kSpatial], padding[kSpatial], dilation[kSpatial];
  if (!int_attribute(call, "groups", nullptr, 1, &groups))
    return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] groups must be a positive Int", op);
  for (int d = 0; d < kSpatial; ++d)
    if (!per_dim_attribute(call, "stride", kSpatial, d, 1, &stride[d]) ||
        !per_dim_attribute(call, "padding", kSpatial, d, 0, &padding[d]) ||
        !per_dim_attribute(call, "dilation", kSpatial, d, 1, &dilation[d]))
      return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] stride, padding and dilation must be Ints of 1 or %d values", op,
                        kSpatial);
  const cpu::ShapeCheck check = cpu::conv_shape_rule(kSpatial, x, w, stride, padding, dilation, groups, s);
  const int d = check.dim;
  switch (check.fault) {
    case cpu::ShapeFault::None: break;
    case cpu::ShapeFault::Stride:
    case cpu::ShapeFault::Dilation:
    case cpu::ShapeFault::Padding:
      return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] stride and dilation must be positive and padding >= 0 (spatial "
                        "dim %d)", op, d);
    case cpu::ShapeFault::Groups: return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] groups must be a positive Int", op);
    case cpu::ShapeFault::KernelPastInput:
      return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] kernel size %lld (dilated: %lld) can't be greater than the padded "
                        "input size %lld", op, static_cast<long long>(w[2 + d]),
                        static_cast<long long>(cpu::dilated_extent(w[2 + d], dilation[d])),
                        static_cast<long long>(x[2 + d] + 2 * padding[d]));
    default: break;  // the channels: one message with the bias's below
  }
  if (!check.ok() || (bias_size >= 0 && bias_size != w[0]))
    return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] input channels %lld, weight [%lld, %lld, ...], groups %lld and "
                      "bias %lld do not fit", op, static_cast<long long>(x[1]), static_cast<long long>(w[0]),
                      static_cast<long long>(w[1]), static_cast<long long>(groups), static_cast<long long>(bias_size));
  return true;
}

template <int kSpatial>
bool check_conv(const KernelSignature& s, Error& error) {
  if (!check_operands(s, 2, 3, 1, error) || !check_same_dtype(s, error)) return false;
  const program::ScalarType t = s.outputs[0].dtype;
  if (t != program::ScalarType::Float32 && t != program::ScalarType::Float64)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] runs float32 and float64, not %s", s.op, dtype_name(t));
  if (s.inputs[0].dim != kSpatial + 2 || s.inputs[1].dim != kSpatial + 2 || s.outputs[0].dim != kSpatial + 2 ||
      (s.inputs.size() == 3 && s.inputs[2].dim != 1))
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] expects input, weight and output of %d dims, bias of 1",
                      s.op, kSpatial + 2);
  // The column scratch at the bounds: in_channels * kernel volume * output plane elements.
  int64_t columns = element_size(t) * s.inputs[0].max_sizes[1];
  for (int d = 2; d < kSpatial + 2; ++d) columns *= s.inputs[1].max_sizes[d] * s.outputs[0].max_sizes[d];
  *s.scratch_bytes = aligned_bytes(columns) + aligned_bytes(s.inputs[0].max_bytes) + aligned_bytes(s.inputs[1].max_bytes);
  return true;
}

template <int kSpatial>
bool run_conv(const KernelCall& c, Error& error) {
  const TensorView& out = c.outputs[0];
  cpu::ConvShape shape;
  if (!conv_shape<kSpatial>(c.op, c.call, c.inputs[0].sizes, c.inputs[1].sizes,
                            c.inputs.size() == 3 ? c.inputs[2].sizes[0] : -1, &shape, error))
    return false;
  bool fits = out.sizes[0] == shape.batch && out.sizes[1] == shape.out_channels && out.is_contiguous();
  for (int d = 0; d < kSpatial; ++d) fits &= out.sizes[2 + d] == shape.out[3 - kSpatial + d];
  if (!fits) return fail(error, c.op, "the output must be contiguous [N, out_channels, out sizes...]");
  char* scratch = static_cast<char*>(c.scratch);
  const int64_t element = element_size(out.dtype);
  TensorView x, w, b;
  if (!contiguous_or_copy(c.op, c.inputs[0], scratch, &x, error)) return false;
  scratch += aligned_bytes(c.inputs[0].numel() * element);
  if (!contiguous_or_copy(c.op, c.inputs[1], scratch, &w, error)) return false;
  scratch += aligned_bytes(c.inputs[1].numel() * element);
  if (c.inputs.size() == 3 && !c.inputs[2].is_contiguous()) return fail(error, c.op, "bias must be contiguous");
  cpu::conv_forward(to_ember(out.dtype), shape, x.data, w.data, c.inputs.size() == 3 ? c.inputs[2].data : nullptr,
                    out.data, scratch);
  return true;
}

}  // namespace ember::rt::kernels
