// max_pool3d: max pooling over 3 spatial dims (runtime/kernels/pool.h).
#include "runtime/kernels/pool.h"

EMBER_RT_POOL_KERNEL(max_pool3d, 3, Max)
