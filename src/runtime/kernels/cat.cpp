// cat: inputs joined along dim (runtime/kernels/join.h).
#include "runtime/kernels/join.h"

EMBER_RT_KERNEL(cat, check_join<false>, run_join<false>)
