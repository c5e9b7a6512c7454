// Ready-made mask_mods and score_mods for flex_attention and create_block_mask: windows,
// documents, prefix-LM, ALiBi, relative bias, soft-capping. Each returns a generic lambda or
// a small struct that calls like one, so it inlines into the kernels like a user's own.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "ember/nn/attention/mod_math.h"

namespace ember::nn::attention {

// The causal and sliding-window masks know each query's visible keys as one span
// [first, end), so flex attention fills their partial tiles' rows by span rather than testing
// every key (Note [Key spans] in block_mask.h).
struct CausalMask {
  auto operator()(auto, auto, auto q, auto kv) const { return q >= kv; }
  std::pair<int64_t, int64_t> key_span(int32_t, int32_t, int32_t q) const {
    return {std::numeric_limits<int64_t>::min(), int64_t{q} + 1};
  }
};
inline auto causal_mask() { return CausalMask{}; }
// Causal window: the query and the window - 1 keys before it.
struct SlidingWindowMask {
  int32_t window;
  auto operator()(auto, auto, auto q, auto kv) const { return q >= kv && q - kv < window; }
  std::pair<int64_t, int64_t> key_span(int32_t, int32_t, int32_t q) const {
    return {int64_t{q} - window + 1, int64_t{q} + 1};
  }
};
inline auto sliding_window_mask(int32_t window) { return SlidingWindowMask{window}; }
// Symmetric window: keys within `radius` positions either side.
inline auto symmetric_window_mask(int32_t radius) {
  return [radius](auto, auto, auto q, auto kv) { return q - kv <= radius && kv - q <= radius; };
}
// Packed sequences: document_id[i] names the document of position i (queries and keys).
inline auto document_mask(std::shared_ptr<const std::vector<int32_t>> document_id) {
  return [ids = std::move(document_id)](auto, auto, auto q, auto kv) { return (*ids)[q] == (*ids)[kv]; };
}
// Prefix-LM: the first prefix_length positions see each other; the rest are causal.
inline auto prefix_lm_mask(int32_t prefix_length) {
  return [prefix_length](auto, auto, auto q, auto kv) { return kv < prefix_length || q >= kv; };
}
// ALiBi: score - slope_h * (q - kv) with slope_h = 2^(-8 (h + 1) / num_heads).
inline auto alibi_score_mod(int32_t num_heads) {
  return [num_heads](auto score, auto, auto h, auto q, auto kv) {
    const double slope = std::exp2(-8.0 * (h + 1) / num_heads);
    return score - slope * (q - kv);
  };
}
// Relative position bias from a learnable table [2 * max_distance - 1] indexed by q - kv
// clamped to +-(max_distance - 1) (pass the table in FlexAttentionOptions::captured).
inline auto relative_bias_score_mod(CapturedTensor table, int32_t max_distance) {
  return [table, max_distance](auto score, auto, auto, auto q, auto kv) {
    const int32_t distance = std::clamp<int32_t>(q - kv, 1 - max_distance, max_distance - 1);
    return score + table(distance + max_distance - 1);
  };
}
// Soft-capping: cap * tanh(score / cap).
inline auto soft_cap_score_mod(double cap) {
  return [cap](auto score, auto, auto, auto, auto) { return cap * attention::tanh(score / cap); };
}

}  // namespace ember::nn::attention
