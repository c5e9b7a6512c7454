// The layouts of block-quantized weights (Note [Block-quantized weights] in cpu/quantized.h): a
// header of plain constants, so that the kernels under src/cpu/simd can name them too.
#pragma once
#include <cstdint>

namespace ember::cpu {

// Values per block along a weight row's reduced dimension.
constexpr int64_t kQuantBlock = 32;

// Int8: 32 int8 values q in [-127, 127] a block, w ~ d * q (llama.cpp's Q8_0).
// Int4: 32 4-bit values q in [0, 15] a block, w ~ d * (q - 8) (llama.cpp's Q4_0), two a byte:
// byte t of a block holds value t in its low half and value t + 16 in its high half.
enum class QuantFormat : int { Int8 = 0, Int4 = 1 };

}  // namespace ember::cpu
