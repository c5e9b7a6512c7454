// to: x converted to the output's dtype (Tensor::to: the cast loop); attribute dtype (Int,
// a ScalarType) names it.
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

bool check(const KernelSignature& s, Error& error) {
  if (!check_operands(s, 1, 1, 1, error)) return false;
  int64_t dtype = -1;
  if (!int_attribute(s.call, "dtype", nullptr, -1, &dtype) || dtype != static_cast<int64_t>(s.outputs[0].dtype))
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[to] attribute dtype (%lld) must be the output's dtype (%s)",
                      static_cast<long long>(dtype), dtype_name(s.outputs[0].dtype));
  if (s.inputs[0].dim != s.outputs[0].dim)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[to] input of %d dims, output of %d", s.inputs[0].dim,
                      s.outputs[0].dim);
  return true;
}

bool run(const KernelCall& c, Error& error) {
  if (!same_sizes(c.inputs[0], c.outputs[0])) return fail(error, "to", "input and output sizes differ");
  return run_elementwise("to", EMBER_KERNEL(cast_loop)(to_ember(c.inputs[0].dtype), to_ember(c.outputs[0].dtype)), {},
                         c.outputs[0], c.inputs, error);
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL(to, check, run)
