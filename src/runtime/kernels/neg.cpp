// neg: elementwise -x (ember's unary_op).
#include "runtime/kernels/support.h"

EMBER_RT_KERNEL(neg, check_unary, run_unary<cpu::UnaryOp::Neg>)
