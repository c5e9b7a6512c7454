// tanh: elementwise tanh(x) (ember's unary_op).
#include "runtime/kernels/support.h"

EMBER_RT_KERNEL(tanh, check_unary, run_unary<cpu::UnaryOp::Tanh>)
