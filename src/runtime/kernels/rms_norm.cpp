// rms_norm: y = x * rstd * weight over rows of normalized_shape's width, rstd = 1 / sqrt(
// mean(x^2) + eps) (nn::detail::fused_rms_norm: cpu::rms_norm_forward on contiguous rows).
#include "cpu/rms_norm.h"
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

bool normalized_width(const program::Call* call, int64_t* width, uint32_t* dims) {
  const program::Attribute* shape = find_attribute(call, "normalized_shape");
  if (shape == nullptr || shape->kind() != program::AttributeKind::Ints || shape->ints() == nullptr) return false;
  *width = 1;
  *dims = shape->ints()->size();
  for (int64_t size : *shape->ints())
    if (size < 0 || __builtin_mul_overflow(*width, size, width)) return false;
  return true;
}

bool check(const KernelSignature& s, Error& error) {
  if (!check_operands(s, 1, 2, 1, error) || !check_same_dtype(s, error)) return false;
  int64_t width = 0;
  uint32_t dims = 0;
  double eps = 0;
  if (!normalized_width(s.call, &width, &dims) || dims > static_cast<uint32_t>(s.inputs[0].dim) ||
      !float_attribute(s.call, "eps", 0.0, &eps) || find_attribute(s.call, "eps") == nullptr)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                      "[rms_norm] needs attributes normalized_shape (Ints, at most the input's %d dims) and eps (Float)",
                      s.inputs[0].dim);
  if (s.outputs[0].dim != s.inputs[0].dim)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[rms_norm] output and input ranks differ");
  const int64_t rows = s.inputs[0].max_bytes / element_size(s.inputs[0].dtype);  // at most: numel / width
  *s.scratch_bytes = aligned_bytes(s.inputs[0].max_bytes) + aligned_bytes(rows * 8);
  return true;
}

bool run(const KernelCall& c, Error& error) {
  const TensorView& out = c.outputs[0];
  int64_t width = 0;
  uint32_t dims = 0;
  double eps = 0;
  normalized_width(c.call, &width, &dims);
  float_attribute(c.call, "eps", 0.0, &eps);
  const TensorView& input = c.inputs[0];
  const program::Attribute* shape = find_attribute(c.call, "normalized_shape");
  for (uint32_t d = 0; d < dims; ++d)
    if (input.sizes[input.dim - static_cast<int>(dims) + static_cast<int>(d)] != shape->ints()->Get(d))
      return fail(error, "rms_norm", "the input's last dims differ from normalized_shape");
  if (!same_sizes(input, out) || !out.is_contiguous()) return fail(error, "rms_norm", "output must be contiguous, x's shape");
  if (c.inputs.size() == 2 && (c.inputs[1].numel() != width || !c.inputs[1].is_contiguous()))
    return fail(error, "rms_norm", "weight must be contiguous with normalized_shape's elements");
  char* scratch = static_cast<char*>(c.scratch);
  TensorView x;
  if (!contiguous_or_copy("rms_norm", input, scratch, &x, error)) return false;
  const int64_t rows = width > 0 ? input.numel() / width : 0;
  void* rstd = scratch + aligned_bytes(input.numel() * element_size(input.dtype));
  cpu::rms_norm_forward(to_ember(out.dtype), x.data, c.inputs.size() == 2 ? c.inputs[1].data : nullptr, out.data, rstd,
                        rows, width, eps);
  return true;
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL(rms_norm, check, run)
