// max_pool1d: max pooling over 1 spatial dims (runtime/kernels/pool.h).
#include "runtime/kernels/pool.h"

EMBER_RT_POOL_KERNEL(max_pool1d, 1, Max)
