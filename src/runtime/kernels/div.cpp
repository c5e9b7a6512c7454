// div: out = a / b with broadcasting (ember's binary_op, floating dtypes).
#include "runtime/kernels/support.h"

EMBER_RT_KERNEL(div, check_binary, run_binary<cpu::BinaryOp::Div>)
