// exp: elementwise exp(x) (ember's unary_op).
#include "runtime/kernels/support.h"

EMBER_RT_KERNEL(exp, check_unary, run_unary<cpu::UnaryOp::Exp>)
