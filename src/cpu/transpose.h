// float32 matrix transpose, built per instruction set (src/cpu/simd/transpose.cpp): used where
// a layout change is a transpose of each image, [channels, positions] <-> [positions, channels]
// (Note [Channels-last passes] in cpu/conv_onednn.cpp).
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"

// dst[c * rows + r] = src[r * cols + c] for the row-major rows x cols matrix src; src and dst
// do not overlap.
EMBER_DECLARE_KERNEL(void, transpose_floats, (const float* src, int64_t rows, int64_t cols, float* dst))
