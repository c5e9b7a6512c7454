// conv2d: convolution over 2 spatial dims (runtime/kernels/conv.h).
#include "runtime/kernels/conv.h"

EMBER_RT_KERNEL(conv2d, check_conv<2>, run_conv<2>)
