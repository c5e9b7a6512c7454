// clone: a contiguous copy of x (Tensor::clone: the cast loop to x's own dtype).
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

bool run(const KernelCall& c, Error& error) {
  if (!same_sizes(c.inputs[0], c.outputs[0])) return fail(error, "clone", "input and output sizes differ");
  return run_elementwise("clone", EMBER_KERNEL(copy_loop)(to_ember(c.outputs[0].dtype)), {}, c.outputs[0], c.inputs,
                         error);
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL(clone, check_unary, run)
