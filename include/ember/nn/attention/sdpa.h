// scaled_dot_product_attention: dense attention on the same tiled (flash-style) kernel as
// flex_attention, skipping blocks only for is_causal. The baseline flex_attention is
// measured against.
#pragma once
#include <optional>

#include "ember/tensor.h"

namespace ember::nn::attention {

// q [B, Hq, L, E], k [B|1, Hkv, S, E], v [B|1, Hkv, S, Ev] -> [B, Hq, L, Ev]. attn_mask
// broadcasts to [B, Hq, L, S]: bool (true takes part) or floating (added to the scores).
// is_causal: query i sees keys 0..i (top-left aligned, as PyTorch). dropout_p > 0 runs the
// unfused composite (softmax, dropout, matmul).
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt, bool enable_gqa = false);

}  // namespace ember::nn::attention
