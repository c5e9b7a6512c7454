// Weight-only products over block-quantized int8 and int4 weights (Note [Block-quantized
// weights]).
#pragma once
#include <cstdint>
#include <span>

#include "cpu/dispatch.h"
#include "cpu/quantized_format.h"

namespace ember::cpu {

// Note [Block-quantized weights]
// Weight-only quantization as llama.cpp's Q8_0 and Q4_0: each row of a weight [n, k] is cut
// into blocks of kQuantBlock values along k, each with one float16 scale d.
// - Int8 (Q8_0): int8 values q in [-127, 127], d = max|w| / 127, w ~ d * q; 34 bytes per 32
//   weights against bf16's 64.
// - Int4 (Q4_0): 4-bit values q in [0, 15] two to a byte, d = m / -8 where m is the block's
//   value of largest magnitude (with its sign), w ~ d * (q - 8): m lands exactly on q = 0 and
//   the other side reaches +7 d (values past 7.5 d clamp to 15); 18 bytes per 32 weights.
// Both quantize against the stored (float16-rounded) scale, q = round(w / d) (Int4 rounds
// halves up, as Q4_0 does), so every weight is within half a step of its block's d * q but the
// clamped ones. A product quantizes its activation rows to int8 blocks on the fly (float32
// scale per block), sums each block's 32 products exactly in int32 (int4's stored q, the sum
// starting at -8 times the activations' sum), and adds the blocks' sums times both scales in float32: a decoding step reads
// every weight once. A prompt's products (more than kQuantizedActivationRows rows) are bound by
// arithmetic, not by reading the weights: they widen the weights to float32 and keep the
// activations as they are, so the prompt's tokens see no activation rounding; except on
// AMX-INT8, where they quantize them as a step does (Note [Quantized prompts on AMX]).

// Products of up to this many rows quantize their activations; longer ones (a prompt) widen
// the weights to float32 chunk by chunk and run the float32 GEMM, unless they run on AMX-INT8
// tiles (Note [Quantized prompts on AMX]).
constexpr int64_t kQuantizedActivationRows = 8;

// Note [Quantized prompts on AMX]
// Where the CPU has AMX-INT8 (dispatch level avx512_amx) a prompt's product quantizes its
// activations as decoding does and runs the blocks' int8 products on tiles (TDPBSSD: 16 x 16
// int32 sums of 32 products each, exact), then adds each block's sums times both scales in
// float32, block after block: the same arithmetic as the few-rows kernels, in another order,
// and what llama.cpp's AMX path computes. Each call packs up to kQuantizedAmxColumns weight rows
// (int4 widened to q - 8) as tiles once and passes every 32 activation rows over them; a
// column's result does not depend on the split, so not on the thread count. Not in ember-rt
// (no AMX code there: Note [Runtime size]) and not when EMBER_GEMM_BACKEND forces openblas or
// onednn: then prompts widen the weights as at the other levels, every product on that backend.
// Whether this process's prompt products run on AMX-INT8 tiles.
bool quantized_prompts_on_amx();
// Whether a product of m rows quantizes its activations to int8 blocks.
bool quantizes_activations(int64_t m);

// Bytes a weight row of k values takes in `format` (k a multiple of kQuantBlock).
constexpr int64_t quantized_row_bytes(QuantFormat format, int64_t k) { return format == QuantFormat::Int4 ? k / 2 : k; }
const char* quant_format_name(QuantFormat format);

// Quantizes rows [rows, k] (ld elements apart) of float32 weights: values [rows,
// quantized_row_bytes(k)] bytes, scales [rows, k / kQuantBlock] float16 bits. k must be a
// multiple of kQuantBlock; the weights must be finite and their scales within float16's range.
void quantize_weight_rows(QuantFormat format, const float* w, int64_t rows, int64_t k, int64_t ld, void* values,
                          uint16_t* scales);
// The activations' form: int8 values, float32 scales.
void quantize_int8_activation_rows(const float* a, int64_t rows, int64_t k, int64_t ld, int8_t* values,
                                   float* scales);
// out [rows, k] float32: the weights the blocks stand for.
void dequantize_weight_rows(QuantFormat format, const void* values, const uint16_t* scales, int64_t rows, int64_t k,
                            float* out);

// c[m, n] (float32, ldc) = a[m, k] (float32, lda) x dequant(w)[n, k]^T, a quantized as above
// up to kQuantizedActivationRows rows.
void gemm_quantized_weight(QuantFormat format, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                           const void* w_values, const uint16_t* w_scales, float* c, int64_t ldc);

// gemm_quantized_weight for several weights sharing a (Note [Grouped products] in gemm.h): at
// up to kQuantizedActivationRows rows, a is quantized once and the members' rows are one range
// split over the pool, one job; each member's result is the one gemm_quantized_weight gives.
struct QuantizedGroupMember {
  QuantFormat format;
  const void* values;
  const uint16_t* scales;
  int64_t n;
  float* c;
  int64_t ldc;
};
void gemm_quantized_weight_group(int64_t m, int64_t k, const float* a, int64_t lda,
                                 std::span<const QuantizedGroupMember> members);

}  // namespace ember::cpu

EMBER_DECLARE_KERNEL(void, q8_quantize_rows,
                     (const float* a, int64_t rows, int64_t k, int64_t ld, int8_t* values, float* scales))
EMBER_DECLARE_KERNEL(void, dequantize_rows,
                     (::ember::cpu::QuantFormat format, const void* values, const uint16_t* scales, int64_t rows,
                      int64_t k, float* out))
// The AVX-512 build's AMX-INT8 prompt product (Note [Quantized prompts on AMX]): weight rows
// [0, n), n <= kQuantizedAmxColumns, against m rows of int8 activation blocks (k apart);
// scratch: quantized_amx_scratch_bytes(blocks) bytes.
namespace ember::cpu::avx512 {
void quantized_product_amx(::ember::cpu::QuantFormat format, int64_t m, int64_t n, int64_t blocks, const int8_t* a,
                           const float* a_scales, const void* w, const uint16_t* w_scales, float* c, int64_t ldc,
                           void* scratch);
}  // namespace ember::cpu::avx512
// vnni: the int8 dot products through VNNI (vpdpbusd), where cpu_has_vnni().
EMBER_DECLARE_KERNEL(void, quantized_product_rows,
                     (::ember::cpu::QuantFormat format, bool vnni, int64_t m, int64_t n, int64_t blocks,
                      const int8_t* a, const float* a_scales, const void* w, const uint16_t* w_scales, float* c,
                      int64_t ldc))
