// rotary_embedding: x [..., T, hd] rotated by the positions' angles, cos/sin [T, hd / 2] of a
// floating dtype (nn::functional::rotary_embedding: cos/sin converted to the compute dtype,
// float64 for float64 x, else float32, then cpu::rotary_embedding on x with a contiguous last
// dim and contiguous cos/sin).
#include "cpu/rotary_embedding.h"
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

program::ScalarType compute_dtype(program::ScalarType x) {
  return x == program::ScalarType::Float64 ? x : program::ScalarType::Float32;
}

bool check(const KernelSignature& s, Error& error) {
  if (!check_operands(s, 3, 3, 1, error)) return false;
  const program::ScalarType x = s.inputs[0].dtype, compute = compute_dtype(x);
  if (x != program::ScalarType::Float32 && x != program::ScalarType::Float64 && x != program::ScalarType::Float16 &&
      x != program::ScalarType::BFloat16)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[rotary_embedding] expected floating-point x, got %s",
                      dtype_name(x));
  for (int k = 1; k <= 2; ++k) {
    const program::ScalarType t = s.inputs[k].dtype;
    if (t != program::ScalarType::Float32 && t != program::ScalarType::Float64 && t != program::ScalarType::Float16 &&
        t != program::ScalarType::BFloat16)
      return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[rotary_embedding] expected floating-point cos and sin, got %s",
                        dtype_name(t));
  }
  if (s.outputs[0].dtype != x)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[rotary_embedding] output of dtype %s for %s x",
                      dtype_name(s.outputs[0].dtype), dtype_name(x));
  if (s.inputs[0].dim < 2 || s.inputs[1].dim != 2 || s.inputs[2].dim != 2 || s.outputs[0].dim != s.inputs[0].dim)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                      "[rotary_embedding] expects x [..., T, hd], cos and sin [T, hd / 2], out like x");
  // x, then cos and sin in the compute dtype.
  const int64_t table_bytes = element_size(compute) * s.inputs[1].max_sizes[0] * s.inputs[1].max_sizes[1];
  *s.scratch_bytes = aligned_bytes(s.inputs[0].max_bytes) + 2 * aligned_bytes(table_bytes);
  return true;
}

bool run(const KernelCall& c, Error& error) {
  const TensorView& out = c.outputs[0];
  const int last = c.inputs[0].dim - 1;
  const int64_t positions = c.inputs[0].sizes[last - 1], head_dim = c.inputs[0].sizes[last];
  for (int k = 1; k <= 2; ++k)
    if (c.inputs[k].sizes[0] != positions || c.inputs[k].sizes[1] * 2 != head_dim)
      return fail(error, "rotary_embedding", "cos and sin must be [T, head_dim / 2] for x [..., T, head_dim]");
  if (head_dim % 2 != 0 || !same_sizes(c.inputs[0], out) || !out.is_contiguous())
    return fail(error, "rotary_embedding", "x needs an even head_dim and a contiguous output of its shape");
  char* scratch = static_cast<char*>(c.scratch);
  TensorView x = c.inputs[0], cos, sin;
  if (x.strides[last] != 1 && !make_contiguous("rotary_embedding", c.inputs[0], scratch, &x, error)) return false;
  scratch += aligned_bytes(c.inputs[0].numel() * element_size(x.dtype));
  const program::ScalarType compute = compute_dtype(x.dtype);
  const int64_t table_bytes = aligned_bytes(c.inputs[1].numel() * element_size(compute));
  TensorView* tables[2] = {&cos, &sin};
  for (int k = 1; k <= 2; ++k, scratch += table_bytes) {
    if (c.inputs[k].dtype == compute && c.inputs[k].is_contiguous()) *tables[k - 1] = c.inputs[k];
    else if (!make_contiguous_as("rotary_embedding", c.inputs[k], compute, scratch, tables[k - 1], error)) return false;
  }
  cpu::RotaryLayout layout;
  layout.lead_sizes = x.sizes;
  layout.lead_strides = x.strides;
  layout.lead_dims = x.dim - 2;
  layout.positions = positions;
  layout.position_stride = x.strides[last - 1];
  layout.half = head_dim / 2;
  cpu::rotary_embedding(to_ember(x.dtype), x.data, layout, cos.data, sin.data, out.data, false);
  return true;
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL(rotary_embedding, check, run)
