// avg_pool1d: average pooling over 1 spatial dims (runtime/kernels/pool.h).
#include "runtime/kernels/pool.h"

EMBER_RT_POOL_KERNEL(avg_pool1d, 1, Avg)
