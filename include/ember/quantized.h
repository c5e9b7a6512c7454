// Weight-only int8 quantization for inference: weights in blocks of 32 int8 values with one
// float16 scale each (llama.cpp's Q8_0), products that quantize activations per block on the
// fly and sum each block exactly in int32 (Note [Block-quantized weights]).
#pragma once
#include <cstdint>

#include "ember/tensor.h"

namespace ember::quantized {

inline constexpr int64_t kBlockSize = 32;

// A linear layer's weight [out_features, in_features], quantized along in_features.
struct Int8Weight {
  Tensor values;  // int8 [out_features, in_features]
  Tensor scales;  // float16 [out_features, in_features / kBlockSize]

  int64_t out_features() const { return values.size(0); }
  int64_t in_features() const { return values.size(1); }
};

// weight: 2-D, a floating dtype, in_features a multiple of kBlockSize, finite.
Int8Weight quantize_int8(const Tensor& weight);
// Checks the pair's shapes and dtypes (as read from a file) and returns it.
Int8Weight int8_weight(Tensor values, Tensor scales);
// The weight the blocks stand for: scale * value, in `dtype`.
Tensor dequantize(const Int8Weight& weight, ScalarType dtype = kFloat32);
// input [..., in_features] (float32, bf16 or f16) times the weight's transpose, plus bias:
// [..., out_features] in input's dtype. Inference only: no gradient flows through it.
Tensor linear(const Tensor& input, const Int8Weight& weight, const Tensor& bias = {});

}  // namespace ember::quantized
