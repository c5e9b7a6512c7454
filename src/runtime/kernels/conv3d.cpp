// conv3d: convolution over 3 spatial dims (runtime/kernels/conv.h).
#include "runtime/kernels/conv.h"

EMBER_RT_KERNEL(conv3d, check_conv<3>, run_conv<3>)
