// max_pool{1,2,3}d and avg_pool{1,2,3}d over `kSpatial` dims, as ember's pooling ops
// (src/ops/pooling.cpp: sliding windows, then cpu::max_pool_forward / avg_pool_forward on a
// contiguous input). Attributes as the exporter records them (docs/RUNTIME_OPS.md): Ints
// kernel_size, stride, padding (and dilation for max), Int ceil_mode, return_indices (max),
// count_include_pad and divisor_override (avg). float32 and float64. The windows and max
// pooling's indices live in scratch: the kernel allocates nothing.
#pragma once
#include "cpu/pooling.h"
#include "cpu/shape_rules.h"
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {

enum class PoolKind { Max, Avg };

// The validated geometry of one pooling call.
struct PoolGeometry {
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, padding[3] = {}, dilation[3] = {1, 1, 1};
  int64_t ceil_mode = 0, return_indices = 0, count_include_pad = 1, divisor_override = 0;
};

template <int kSpatial, PoolKind kKind>
bool pool_geometry(const char* op, const program::Call* call, PoolGeometry* g, Error& error) {
  for (int d = 0; d < kSpatial; ++d) {
    if (!per_dim_attribute(call, "kernel_size", kSpatial, d, 0, &g->kernel[d]) ||
        !per_dim_attribute(call, "stride", kSpatial, d, g->kernel[d], &g->stride[d]) ||
        !per_dim_attribute(call, "padding", kSpatial, d, 0, &g->padding[d]) ||
        !per_dim_attribute(call, "dilation", kSpatial, d, 1, &g->dilation[d]))
      return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] kernel_size, stride, padding and dilation must be Ints of "
                        "1 or %d values", op, kSpatial);
    if (cpu::pool_window_rule(g->kernel[d], g->stride[d], g->padding[d], g->dilation[d]) != cpu::ShapeFault::None)
      return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] kernel_size %lld, stride %lld, dilation %lld must be "
                        "in [1, 2^31) and padding %lld in [0, half the dilated kernel] (spatial dim %d)", op,
                        static_cast<long long>(g->kernel[d]), static_cast<long long>(g->stride[d]),
                        static_cast<long long>(g->dilation[d]), static_cast<long long>(g->padding[d]), d);
  }
  if (kKind == PoolKind::Avg && (g->dilation[0] != 1 || g->dilation[1] != 1 || g->dilation[2] != 1))
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] has no dilation", op);
  if (!int_attribute(call, "ceil_mode", nullptr, 0, &g->ceil_mode) ||
      !int_attribute(call, "return_indices", nullptr, 0, &g->return_indices) ||
      !int_attribute(call, "count_include_pad", nullptr, 1, &g->count_include_pad) ||
      !int_attribute(call, "divisor_override", nullptr, 0, &g->divisor_override) || g->ceil_mode < 0 ||
      g->ceil_mode > 1 || g->return_indices < 0 || g->return_indices > 1 || (kKind == PoolKind::Avg && g->return_indices))
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] ceil_mode, return_indices (max only) and count_include_pad "
                      "must be Int 0 or 1, divisor_override an Int", op);
  return true;
}

// Scratch: the contiguous input, then start, count and factor per spatial dim, then (max
// without return_indices) the indices cpu::max_pool_forward writes.
template <int kSpatial, PoolKind kKind>
bool check_pool(const KernelSignature& s, Error& error) {
  PoolGeometry g;
  if (!pool_geometry<kSpatial, kKind>(s.op, s.call, &g, error)) return false;
  const size_t outputs = kKind == PoolKind::Max && g.return_indices ? 2 : 1;
  if (!check_operands(s, 1, 1, outputs, error)) return false;
  const program::ScalarType t = s.inputs[0].dtype;
  if ((t != program::ScalarType::Float32 && t != program::ScalarType::Float64) || s.outputs[0].dtype != t ||
      (outputs == 2 && s.outputs[1].dtype != program::ScalarType::Int64))
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] runs float32 and float64 (int64 indices), not %s", s.op,
                      dtype_name(t));
  const int dim = s.inputs[0].dim;
  if ((dim != kSpatial + 1 && dim != kSpatial + 2) || s.outputs[0].dim != dim || (outputs == 2 && s.outputs[1].dim != dim))
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[%s] expects input and outputs of %d or %d dims, got %d", s.op,
                      kSpatial + 1, kSpatial + 2, dim);
  int64_t windows = 0, out_numel = 1;
  for (int d = 0; d < dim; ++d) out_numel *= s.outputs[0].max_sizes[d];
  for (int d = dim - kSpatial; d < dim; ++d) windows += s.outputs[0].max_sizes[d];
  *s.scratch_bytes = aligned_bytes(s.inputs[0].max_bytes) + 3 * aligned_bytes(windows * 8) +
                     (outputs == 1 && kKind == PoolKind::Max ? aligned_bytes(out_numel * 8) : 0);
  return true;
}

template <int kSpatial, PoolKind kKind>
bool run_pool(const KernelCall& c, Error& error) {
  PoolGeometry g;
  if (!pool_geometry<kSpatial, kKind>(c.op, c.call, &g, error)) return false;
  const TensorView &input = c.inputs[0], &out = c.outputs[0];
  const int dim = input.dim, first_spatial = dim - kSpatial;
  int64_t planes = 1, windows = 0;
  for (int d = 0; d < first_spatial; ++d) {
    planes *= input.sizes[d];
    if (out.sizes[d] != input.sizes[d]) return fail(error, c.op, "output and input leading sizes differ");
  }
  for (int d = first_spatial; d < dim; ++d) {
    if (input.sizes[d] <= 0) return fail(error, c.op, "expected non-zero spatial sizes");
    windows += out.sizes[d];
  }
  char* scratch = static_cast<char*>(c.scratch);
  TensorView x;
  if (!contiguous_or_copy(c.op, input, scratch, &x, error)) return false;
  scratch += aligned_bytes(input.numel() * element_size(input.dtype));
  auto* start = reinterpret_cast<int64_t*>(scratch);
  auto* count = reinterpret_cast<int64_t*>(scratch + aligned_bytes(windows * 8));
  auto* factor = reinterpret_cast<double*>(scratch + 2 * aligned_bytes(windows * 8));
  cpu::PoolWindowsView w[3] = {cpu::unit_windows_view(), cpu::unit_windows_view(), cpu::unit_windows_view()};
  for (int d = 0; d < kSpatial; ++d) {
    const int64_t in = input.sizes[first_spatial + d], n = out.sizes[first_spatial + d];
    const int64_t expected =
        cpu::pooled_size(in, g.kernel[d], g.padding[d], g.stride[d], g.dilation[d], g.ceil_mode != 0);
    if (n != expected || expected <= 0)
      return error.fail(EMBER_RT_ERROR_KERNEL, "[%s] spatial dim %d: input %lld gives %lld outputs, the output has %lld",
                        c.op, d, static_cast<long long>(in), static_cast<long long>(expected), static_cast<long long>(n));
    w[3 - kSpatial + d] = cpu::sliding_windows(in, n, g.kernel[d], g.stride[d], g.padding[d], g.dilation[d],
                                               g.count_include_pad != 0, start, count, factor);
    start += n;
    count += n;
    factor += n;
  }
  if (!out.is_contiguous()) return fail(error, c.op, "the output must be contiguous");
  if constexpr (kKind == PoolKind::Avg) {
    cpu::avg_pool_forward(to_ember(input.dtype), planes, w, g.divisor_override, x.data, out.data);
  } else {
    int64_t* indices = reinterpret_cast<int64_t*>(scratch + 3 * aligned_bytes(windows * 8));
    if (c.outputs.size() == 2) {
      if (!c.outputs[1].is_contiguous() || !same_sizes(c.outputs[1], out))
        return fail(error, c.op, "the indices must be contiguous, of the output's sizes");
      indices = c.outputs[1].ptr<int64_t>();
    }
    cpu::max_pool_forward(to_ember(input.dtype), planes, w, x.data, out.data, indices);
  }
  return true;
}

}  // namespace ember::rt::kernels

#define EMBER_RT_POOL_KERNEL(op, spatial, kind)                                                                 \
  EMBER_RT_KERNEL(op, (::ember::rt::kernels::check_pool<spatial, ::ember::rt::kernels::PoolKind::kind>), \
                  (::ember::rt::kernels::run_pool<spatial, ::ember::rt::kernels::PoolKind::kind>))
