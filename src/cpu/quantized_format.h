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

// The AMX-INT8 prompt product (Note [Quantized prompts on AMX] in cpu/quantized.h): up to
// kQuantizedAmxColumns weight rows a call, in groups of 32 (two weight tiles of 512 bytes a
// block), against 32 activation rows at a time; its scratch holds the groups' tiles and float32
// scales, their float32 sums and two steps' int32 sums.
constexpr int64_t kQuantizedAmxColumns = 128, kQuantizedAmxGroup = 32, kQuantizedAmxRows = 32;
constexpr int64_t kQuantizedAmxTileBytes = 512;
constexpr int64_t quantized_amx_scratch_bytes(int64_t blocks) {
  constexpr int64_t groups = kQuantizedAmxColumns / kQuantizedAmxGroup;
  return groups * blocks * (2 * kQuantizedAmxTileBytes + kQuantizedAmxGroup * 4) +
         (groups + 2) * kQuantizedAmxRows * kQuantizedAmxGroup * 4;
}

}  // namespace ember::cpu
