// conv1d/conv2d/conv3d: out = x * weight (+ bias) over `kSpatial` dims, as ember::convolution
// (src/ops/conv.cpp: conv_shape, then cpu::conv_forward's im2col + GEMM on contiguous x,
// weight and bias). Attributes stride, padding, dilation (Ints, one per dim or one for all)
// and groups (Int). float32 and float64 (eager runs float16, and bfloat16 where oneDNN has no
// bf16 kernel for it, through float32 copies; the exporter records those casts).
#pragma once
#include "cpu/conv.h"
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {

// conv_shape of src/ops/conv.cpp from the operands' sizes; false (and a message) when they
// do not form a convolution.
template <int kSpatial>
bool conv_shape(const char* op, const program::Call* call, const int64_t* x, const int64_t* w, int64_t bias_size,
                cpu::ConvShape* s, Error& error) {
  int64_t groups = 1;
  if (!int_attribute(call, "groups", nullptr, 1, &groups) || groups <= 0)
    return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] groups must be a positive Int", op);
  s->batch = x[0];
  s->in_channels = x[1];
  s->out_channels = w[0];
  s->groups = groups;
  if (s->out_channels % groups != 0 || w[1] * groups != s->in_channels || (bias_size >= 0 && bias_size != w[0]))
    return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] input channels %lld, weight [%lld, %lld, ...], groups %lld and "
                      "bias %lld do not fit", op, static_cast<long long>(x[1]), static_cast<long long>(w[0]),
                      static_cast<long long>(w[1]), static_cast<long long>(groups), static_cast<long long>(bias_size));
  for (int d = 0; d < kSpatial; ++d) {
    const int k = 3 - kSpatial + d;
    int64_t stride = 1, padding = 0, dilation = 1;
    if (!per_dim_attribute(call, "stride", kSpatial, d, 1, &stride) ||
        !per_dim_attribute(call, "padding", kSpatial, d, 0, &padding) ||
        !per_dim_attribute(call, "dilation", kSpatial, d, 1, &dilation) || stride <= 0 || dilation <= 0 || padding < 0)
      return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] stride and dilation must be positive and padding >= 0 (Ints)",
                        op);
    const int64_t padded = x[2 + d] + 2 * padding, reach = dilation * (w[2 + d] - 1) + 1;
    if (reach > padded)
      return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] kernel size %lld (dilated: %lld) can't be greater than the padded "
                        "input size %lld", op, static_cast<long long>(w[2 + d]), static_cast<long long>(reach),
                        static_cast<long long>(padded));
    s->in[k] = x[2 + d];
    s->kernel[k] = w[2 + d];
    s->stride[k] = stride;
    s->pad[k] = padding;
    s->dilation[k] = dilation;
    s->out[k] = (padded - reach) / stride + 1;
  }
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
