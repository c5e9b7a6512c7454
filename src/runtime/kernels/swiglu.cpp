// swiglu: out = silu(a) * b (nn::functional::swiglu: cpu::swiglu_forward on contiguous a, b).
#include "cpu/swiglu.h"
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

bool check(const KernelSignature& s, Error& error) {
  if (!check_operands(s, 2, 2, 1, error) || !check_same_dtype(s, error)) return false;
  const program::ScalarType t = s.outputs[0].dtype;
  if (t != program::ScalarType::Float32 && t != program::ScalarType::Float64 && t != program::ScalarType::Float16 &&
      t != program::ScalarType::BFloat16)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[swiglu] expected floating-point inputs, got %s",
                      dtype_name(t));
  *s.scratch_bytes = aligned_bytes(s.inputs[0].max_bytes) + aligned_bytes(s.inputs[1].max_bytes);
  return true;
}

bool run(const KernelCall& c, Error& error) {
  const TensorView& out = c.outputs[0];
  if (!same_sizes(c.inputs[0], c.inputs[1]) || !same_sizes(c.inputs[0], out) || !out.is_contiguous())
    return fail(error, "swiglu", "a, b and a contiguous output must have one shape");
  char* scratch = static_cast<char*>(c.scratch);
  TensorView a, b;
  if (!contiguous_or_copy("swiglu", c.inputs[0], scratch, &a, error) ||
      !contiguous_or_copy("swiglu", c.inputs[1], scratch + aligned_bytes(c.inputs[0].numel() * element_size(a.dtype)),
                          &b, error))
    return false;
  cpu::swiglu_forward(to_ember(out.dtype), a.data, b.data, out.data, out.numel());
  return true;
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL(swiglu, check, run)
