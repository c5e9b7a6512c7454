// avg_pool3d: average pooling over 3 spatial dims (runtime/kernels/pool.h).
#include "runtime/kernels/pool.h"

EMBER_RT_POOL_KERNEL(avg_pool3d, 3, Avg)
