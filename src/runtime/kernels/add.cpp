// add: out = a + alpha * b with broadcasting (ember's binary_op).
#include "runtime/kernels/support.h"

EMBER_RT_KERNEL(add, check_binary, run_binary<cpu::BinaryOp::Add>)
