// max_pool2d: max pooling over 2 spatial dims (runtime/kernels/pool.h).
#include "runtime/kernels/pool.h"

EMBER_RT_POOL_KERNEL(max_pool2d, 2, Max)
