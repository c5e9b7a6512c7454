// Weight-only quantization for inference: weights in blocks of 32 values with one float16
// scale each, int8 (llama.cpp's Q8_0) or int4 (llama.cpp's Q4_0); products that quantize
// activations per block on the fly and sum each block exactly in int32 (Note [Block-quantized
// weights]).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::quantized {

inline constexpr int64_t kBlockSize = 32;

enum class Format {
  kInt8,  // int8 values q in [-127, 127], w ~ scale * q
  kInt4,  // 4-bit values q in [0, 15] two a byte, w ~ scale * (q - 8)
};
// "int8", "int4".
const char* format_name(Format format);
// The format named "int8" or "int4"; anything else is an Error naming `op`.
Format parse_format(const std::string& name, const std::string& op);

// A linear layer's weight [out_features, in_features], quantized along in_features.
struct QuantizedWeight {
  Format format = Format::kInt8;
  // kInt8: int8 [out_features, in_features]. kInt4: uint8 [out_features, in_features / 2],
  // each block's 16 bytes holding its values t in the low and t + 16 in the high four bits.
  Tensor values;
  Tensor scales;  // float16 [out_features, in_features / kBlockSize]

  bool defined() const { return values.defined(); }
  int64_t out_features() const { return scales.size(0); }
  int64_t in_features() const { return scales.size(1) * kBlockSize; }
};

// weight: 2-D, a floating dtype, in_features a multiple of kBlockSize, finite.
QuantizedWeight quantize(const Tensor& weight, Format format);
QuantizedWeight quantize_int8(const Tensor& weight);
QuantizedWeight quantize_int4(const Tensor& weight);
// Checks the pair's shapes and dtypes (as read from a file) and returns it.
QuantizedWeight quantized_weight(Format format, Tensor values, Tensor scales);
// The weight the blocks stand for, in `dtype`.
Tensor dequantize(const QuantizedWeight& weight, ScalarType dtype = kFloat32);
// input [..., in_features] (float32, bf16 or f16) times the weight's transpose, plus bias:
// [..., out_features] in input's dtype. Inference only: no gradient flows through it.
Tensor linear(const Tensor& input, const QuantizedWeight& weight, const Tensor& bias = {});
// What products of more rows than a decoding step's run here: "amx_int8" (the activations
// quantized as a step's are, the blocks' products on AMX-INT8 tiles) or "widened_float32" (the
// weights widened, the activations as they are, the float32 GEMM).
const char* prompt_kernel();
// linear(input, w) for every w (no bias), the products of a decoding step in one job: one
// input against a layer's query, key and value weights (Note [Grouped products]).
std::vector<Tensor> linear_group(const Tensor& input, const std::vector<QuantizedWeight>& weights);

}  // namespace ember::quantized
