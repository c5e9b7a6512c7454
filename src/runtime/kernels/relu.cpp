// relu: out = max(x, 0) (ember's unary_op).
#include "runtime/kernels/support.h"

EMBER_RT_KERNEL(relu, check_unary, run_unary<cpu::UnaryOp::Relu>)
