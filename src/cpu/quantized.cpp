// Block quantization and the quantized weight product's front end (Note [Block-quantized weights]).
#include "cpu/quantized.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/cpu_info.h"
#include "cpu/gemm.h"
#ifndef EMBER_RT_CPU
#include "cpu/gemm_backend.h"
#endif
#include "cpu/parallel.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/profiler.h"

namespace ember::cpu {
namespace {

// Weight rows per parallel chunk: about this many bytes of int8 values, so that a chunk stays
// in L2 while every group of activation rows passes over it.
constexpr int64_t kChunkBytes = 1 << 18;

void check_k(const char* op, int64_t k) {
  EMBER_CHECK(k > 0 && k % kQuantBlock == 0, op, "the reduced dimension (", k, ") must be a positive multiple of ",
              kQuantBlock);
}

// One int8 block: q = round-half-even(x / d) with d = max|x| / 127 (given). All zero when d
// is 0 or not finite: an activation block holding an Inf or NaN keeps its non-finite scale, so
// the product's output is NaN as a float product's would be.
void quantize_block(const float* x, float d, int8_t* q) {
  const float inverse = d > 0.0f && std::isfinite(d) ? 1.0f / d : 0.0f;
  for (int64_t t = 0; t < kQuantBlock; ++t) {
    const float scaled = (x[t] * inverse + 12582912.0f) - 12582912.0f;  // ties to even, no libm call
    q[t] = static_cast<int8_t>(std::clamp(scaled, -127.0f, 127.0f));
  }
}

// max|x| over a block; NaN if the block holds one (std::max would skip it).
float block_absmax(const float* x) {
  float amax = 0.0f;
  bool has_nan = false;
  for (int64_t t = 0; t < kQuantBlock; ++t) {
    has_nan |= std::isnan(x[t]);
    amax = std::max(amax, std::fabs(x[t]));
  }
  return has_nan ? std::numeric_limits<float>::quiet_NaN() : amax;
}

// The block's value of largest magnitude, with its sign (the first of equal magnitudes).
float block_signed_max(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int64_t t = 0; t < kQuantBlock; ++t)
    if (std::fabs(x[t]) > amax) {
      amax = std::fabs(x[t]);
      max = x[t];
    }
  return max;
}

// One int4 block as Q4_0: q = min(15, floor(x / d + 8.5)) with d = max / -8 (given), packed
// two to a byte.
void quantize_int4_block(const float* x, float d, uint8_t* packed) {
  const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
  uint8_t q[kQuantBlock];
  for (int64_t t = 0; t < kQuantBlock; ++t)
    q[t] = static_cast<uint8_t>(std::clamp(std::floor(x[t] * inverse + 8.5f), 0.0f, 15.0f));
  for (int64_t t = 0; t < kQuantBlock / 2; ++t) packed[t] = static_cast<uint8_t>(q[t] | (q[t + 16] << 4));
}

}  // namespace

const char* quant_format_name(QuantFormat format) { return format == QuantFormat::Int4 ? "int4" : "int8"; }

bool quantized_prompts_on_amx() {
#ifdef EMBER_RT_CPU
  return false;
#else
  static const bool has_amx_int8 = detect_isa_features().amx_int8;
  if (!has_amx_int8 || !capability_at_least(Capability::AMX)) return false;
  const std::optional<GemmBackend> forced = forced_gemm_backend();
  return !forced || *forced == GemmBackend::Ember;
#endif
}

bool quantizes_activations(int64_t m) { return m <= kQuantizedActivationRows || quantized_prompts_on_amx(); }

void quantize_weight_rows(QuantFormat format, const float* w, int64_t rows, int64_t k, int64_t ld, void* values,
                          uint16_t* scales) {
  const std::string op_name = std::string("quantize_") + quant_format_name(format);
  const char* op = op_name.c_str();
  check_k(op, k);
  const int64_t blocks = k / kQuantBlock, row_bytes = quantized_row_bytes(format, k);
  const int64_t block_bytes = row_bytes / blocks;
  // The largest scale magnitude times the largest |q| per format: beyond it the scale overflows float16.
  const float q_max = format == QuantFormat::Int4 ? 8.0f : 127.0f;
  uint8_t* bytes = static_cast<uint8_t*>(values);
  parallel_for(0, rows, std::max<int64_t>(1, kChunkBytes / k), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r)
      for (int64_t b = 0; b < blocks; ++b) {
        const float* x = w + r * ld + b * kQuantBlock;
        const float amax = block_absmax(x);
        EMBER_CHECK(std::isfinite(amax), op, "non-finite weight in row ", r, ", block ", b);
        const float scale = format == QuantFormat::Int4 ? block_signed_max(x) / -8.0f : amax / 127.0f;
        const uint16_t half = detail::float_to_half(scale);
        EMBER_CHECK(std::isfinite(detail::half_to_float(half)), op, "weight magnitude ", amax, " in row ", r,
                    ", block ", b, " exceeds what a float16 scale holds (", 65504.0f * q_max, ")");
        scales[r * blocks + b] = half;
        uint8_t* block = bytes + r * row_bytes + b * block_bytes;
        if (format == QuantFormat::Int4) quantize_int4_block(x, detail::half_to_float(half), block);
        else quantize_block(x, detail::half_to_float(half), reinterpret_cast<int8_t*>(block));
      }
  });
}

void quantize_int8_activation_rows(const float* a, int64_t rows, int64_t k, int64_t ld, int8_t* values,
                                   float* scales) {
  check_k("quantize_int8", k);
  EMBER_KERNEL(q8_quantize_rows)(a, rows, k, ld, values, scales);
}

void dequantize_weight_rows(QuantFormat format, const void* values, const uint16_t* scales, int64_t rows, int64_t k,
                            float* out) {
  check_k("dequantize", k);
  const int64_t blocks = k / kQuantBlock, row_bytes = quantized_row_bytes(format, k);
  const uint8_t* bytes = static_cast<const uint8_t*>(values);
  const auto kernel = EMBER_KERNEL(dequantize_rows);
  parallel_for(0, rows, std::max<int64_t>(1, kChunkBytes / k), [&](int64_t lo, int64_t hi) {
    kernel(format, bytes + lo * row_bytes, scales + lo * blocks, hi - lo, k, out + lo * k);
  });
}

void gemm_quantized_weight(QuantFormat format, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                           const void* w_values, const uint16_t* w_scales, float* c, int64_t ldc) {
  const QuantizedGroupMember only{format, w_values, w_scales, n, c, ldc};
  gemm_quantized_weight_group(m, k, a, lda, std::span<const QuantizedGroupMember>(&only, 1));
}

void gemm_quantized_weight_group(int64_t m, int64_t k, const float* a, int64_t lda,
                                 std::span<const QuantizedGroupMember> members) {
  check_k("gemm_quantized_weight", k);
  int64_t rows = 0;
  for (const QuantizedGroupMember& member : members) {
    EMBER_CHECK(m >= 0 && member.n >= 0, "gemm_quantized_weight", "negative size m=", m, " n=", member.n);
    rows += member.n;
  }
  if (m == 0 || rows == 0) return;
#ifndef EMBER_RT_CPU  // ember-rt has no profiler (Note [Runtime size] in cmake/runtime.cmake)
  profiler::RecordFunction record("gemm_quantized_weight", profiler::Category::Gemm);
  if (record.active()) record.event()->flops = 2.0 * double(m) * double(rows) * double(k);
#endif
  const int64_t blocks = k / kQuantBlock;
  if (!quantizes_activations(m)) {
    // A prompt without AMX-INT8: each chunk of weight rows widened to float32 (exactly: d * q
    // has at most 19 significant bits) and multiplied on the float32 GEMM, which beats the
    // few-rows int8 kernel at many rows. Chunks are fixed by the shape, so results do not depend
    // on the thread count.
    for (const QuantizedGroupMember& member : members) {
      const uint8_t* w_bytes = static_cast<const uint8_t*>(member.values);
      const int64_t row_bytes = quantized_row_bytes(member.format, k);
      parallel_for(0, member.n, std::max<int64_t>(1, kChunkBytes / k), [&](int64_t j0, int64_t j1) {
        thread_local std::vector<float> panel;
        panel.resize(static_cast<size_t>((j1 - j0) * k));
        dequantize_weight_rows(member.format, w_bytes + j0 * row_bytes, member.scales + j0 * blocks, j1 - j0, k,
                               panel.data());
        gemm(kFloat32, false, true, m, j1 - j0, k, 1.0, a, lda, panel.data(), k, 0.0, member.c + j0, member.ldc);
      });
    }
    return;
  }
  // The caller's buffers, kept between calls (the pool's threads read them through the
  // pointers: a thread_local named inside the chunks would be each worker's own).
  thread_local std::vector<int8_t> a_value_buffer;
  thread_local std::vector<float> a_scale_buffer;
  a_value_buffer.resize(static_cast<size_t>(m * k));
  a_scale_buffer.resize(static_cast<size_t>(m * blocks));
  int8_t* a_values = a_value_buffer.data();
  float* a_scales = a_scale_buffer.data();
  quantize_int8_activation_rows(a, m, k, lda, a_values, a_scales);
#ifndef EMBER_RT_CPU
  if (m > kQuantizedActivationRows) {
    // A prompt on AMX-INT8 tiles: the members' weight rows in chunks of up to
    // kQuantizedAmxColumns, narrower when that leaves a thread with little to do.
    int64_t chunk = kQuantizedAmxColumns;
    while (chunk > kQuantizedAmxGroup && (rows + chunk - 1) / chunk < 4 * num_threads()) chunk /= 2;
    // The caller's list, read by the pool through a pointer (as the activations are).
    thread_local std::vector<std::pair<const QuantizedGroupMember*, int64_t>> chunk_list;
    chunk_list.clear();
    for (const QuantizedGroupMember& member : members)
      for (int64_t j0 = 0; j0 < member.n; j0 += chunk) chunk_list.emplace_back(&member, j0);
    const std::pair<const QuantizedGroupMember*, int64_t>* chunks = chunk_list.data();
    parallel_for(0, static_cast<int64_t>(chunk_list.size()), 1, [&](int64_t lo, int64_t hi) {
      thread_local std::vector<uint8_t> scratch;
      scratch.resize(static_cast<size_t>(quantized_amx_scratch_bytes(blocks)));
      for (int64_t q = lo; q < hi; ++q) {
        const QuantizedGroupMember& member = *chunks[q].first;
        const int64_t j0 = chunks[q].second;
        avx512::quantized_product_amx(member.format, m, std::min(chunk, member.n - j0), blocks, a_values, a_scales,
                                      static_cast<const uint8_t*>(member.values) +
                                          j0 * quantized_row_bytes(member.format, k),
                                      member.scales + j0 * blocks, member.c + j0, member.ldc, scratch.data());
      }
    });
    return;
  }
#endif
  const auto kernel = EMBER_KERNEL(quantized_product_rows);
  const bool vnni = cpu_has_vnni();
  // Each thread streams one contiguous share of the members' rows (Note [Weight streaming] in
  // src/cpu/simd/simd_common.h); each row's sum does not depend on the split.
  parallel_for(0, rows, (rows + num_threads() - 1) / num_threads(), [&](int64_t j0, int64_t j1) {
    int64_t first = 0;
    for (const QuantizedGroupMember& member : members) {
      const int64_t lo = std::max(j0, first) - first, hi = std::min(j1, first + member.n) - first;
      if (lo < hi)
        kernel(member.format, vnni, m, hi - lo, blocks, a_values, a_scales,
               static_cast<const uint8_t*>(member.values) + lo * quantized_row_bytes(member.format, k),
               member.scales + lo * blocks, member.c + lo, member.ldc);
      first += member.n;
    }
  });
}

}  // namespace ember::cpu
