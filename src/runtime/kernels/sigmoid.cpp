// sigmoid: elementwise sigmoid(x) (ember's unary_op).
#include "runtime/kernels/support.h"

EMBER_RT_KERNEL(sigmoid, check_unary, run_unary<cpu::UnaryOp::Sigmoid>)
