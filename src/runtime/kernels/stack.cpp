// stack: inputs of one shape joined along a new dim (runtime/kernels/join.h).
#include "runtime/kernels/join.h"

EMBER_RT_KERNEL(stack, check_join<true>, run_join<true>)
