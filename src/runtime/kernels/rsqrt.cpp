// rsqrt: elementwise 1 / sqrt(x) (ember's unary_op).
#include "runtime/kernels/support.h"

EMBER_RT_KERNEL(rsqrt, check_unary, run_unary<cpu::UnaryOp::Rsqrt>)
