// Weight-only int8 products over block-quantized weights (Note [Block-quantized weights]).
#pragma once
#include <cstdint>

#include "cpu/dispatch.h"

namespace ember::cpu {

// Note [Block-quantized weights]
// Weight-only int8 quantization as llama.cpp's Q8_0: each row of a weight [n, k] is cut into
// blocks of kQuantBlock values along k; a block holds int8 values q in [-127, 127] and one
// float16 scale d = max|w| / 127 (rounded to float16), w ~ d * q. A product quantizes its
// activation rows the same way on the fly (float32 scale per block), sums each block's 32
// products exactly in int32, and adds the blocks' sums times both scales in float32: a
// decoding step reads every weight once, 34 bytes per 32 weights against bf16's 64. A
// prompt's products (more than kQuantizedActivationRows rows) are bound by arithmetic, not
// by reading the weights: they widen the weights to float32 and keep the activations as they
// are, so the prompt's tokens see no activation rounding.
constexpr int64_t kQuantBlock = 32;
// Products of up to this many rows quantize their activations; longer ones (a prompt) widen
// the weights to float32 chunk by chunk and run the float32 GEMM.
constexpr int64_t kQuantizedActivationRows = 8;

// Quantizes rows [rows, k] (ld elements apart) of float32 weights: values [rows, k] int8,
// scales [rows, k / kQuantBlock] float16 bits. k must be a multiple of kQuantBlock.
void quantize_int8_weight_rows(const float* w, int64_t rows, int64_t k, int64_t ld, int8_t* values,
                               uint16_t* scales);
// The activations' form: float32 scales.
void quantize_int8_activation_rows(const float* a, int64_t rows, int64_t k, int64_t ld, int8_t* values,
                                   float* scales);
// out [rows, k] float32 = d * q.
void dequantize_int8_rows(const int8_t* values, const uint16_t* scales, int64_t rows, int64_t k, float* out);

// c[m, n] (float32, ldc) = a[m, k] (float32, lda) x dequant(w)[n, k]^T, a quantized as above
// up to kQuantizedActivationRows rows.
void gemm_int8_weight(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const int8_t* w_values,
                      const uint16_t* w_scales, float* c, int64_t ldc);

}  // namespace ember::cpu

EMBER_DECLARE_KERNEL(void, q8_quantize_rows,
                     (const float* a, int64_t rows, int64_t k, int64_t ld, int8_t* values, float* scales))
EMBER_DECLARE_KERNEL(void, q8_product_rows,
                     (int64_t m, int64_t n, int64_t blocks, const int8_t* a, const float* a_scales, const int8_t* w,
                      const uint16_t* w_scales, float* c, int64_t ldc))
