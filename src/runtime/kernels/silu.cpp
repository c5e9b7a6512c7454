// silu: elementwise x * sigmoid(x) (ember's unary_op).
#include "runtime/kernels/support.h"

EMBER_RT_KERNEL(silu, check_unary, run_unary<cpu::UnaryOp::Silu>)
