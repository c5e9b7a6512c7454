// mul: out = a * b with broadcasting (ember's binary_op).
#include "runtime/kernels/support.h"

EMBER_RT_KERNEL(mul, check_binary, run_binary<cpu::BinaryOp::Mul>)
