// conv1d: convolution over 1 spatial dim (runtime/kernels/conv.h).
#include "runtime/kernels/conv.h"

EMBER_RT_KERNEL(conv1d, check_conv<1>, run_conv<1>)
