// avg_pool2d: average pooling over 2 spatial dims (runtime/kernels/pool.h).
#include "runtime/kernels/pool.h"

EMBER_RT_POOL_KERNEL(avg_pool2d, 2, Avg)
