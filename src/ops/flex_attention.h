// The flex attention op behind nn::attention::flex_attention (internal): the call in plain
// data (tensors, the block mask's lists, the mods as tile functions), so that ops does not see
// nn's types.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "ember/detail/score_tile.h"
#include "ember/tensor.h"

namespace ember::ops {

// One direction of a block mask: counts [B, H, rows] and indices [B, H, rows, cols] (int32) of
// the partial blocks, and of the full blocks (undefined when there are none).
struct FlexBlockLists {
  Tensor num, indices, full_num, full_indices;
};

// A BlockMask as the kernel reads it.
struct FlexBlockMask {
  FlexBlockLists kv_lists;  // per query block (forward, dQ)
  FlexBlockLists q_lists;   // per key block (dK, dV)
  int64_t q_block = 128, kv_block = 128;
  int64_t q_len = 0, kv_len = 0;  // the lengths the mask was made for
};

struct FlexAttentionCall {
  Tensor query, key, value;  // [B, Hq, L, E], [B|1, Hkv, S, E], [B|1, Hkv, S, Ev]
  std::optional<FlexBlockMask> block_mask;
  // The mods (none when empty), and the objects they apply, kept alive by the backward node.
  detail::TileFunction score_mod, mask_mod;
  std::shared_ptr<const void> score_mod_owner, mask_mod_owner;
  std::optional<double> scale;  // default 1 / sqrt(E)
  bool enable_gqa = false;
  // Tensors the score_mod reads whose gradients flow, and how to tell the score_mod which
  // gradient buffer each one fills in the backward pass (-1: none).
  std::vector<Tensor> captured;
  std::function<void(size_t index, int slot)> set_captured_slot;
};

// Checks the call (shapes, dtypes, the block mask against the lengths) and returns (output
// [B, Hq, L, Ev] laid out as the query, ops::empty_in_layout_of; lse [B, Hq, L] in float32,
// float64 for float64 inputs), recording the backward for query, key, value and the captured
// tensors (their gradients laid out as they are). `op` names the caller in errors.
std::pair<Tensor, Tensor> flex_attention(const char* op, const FlexAttentionCall& call);

// One query position a sequence against a cache's whole buffers at the position input_pos [1]
// (int64), which the kernel reads when it runs (so that a graph captured once replays at every
// position): query [B, Hq, 1, E] attends to keys 0 .. input_pos, or with window > 0 to the last
// `window` of them, of keys [B, Hkv, M, E] and values [B, Hkv, M, Ev] (Hq a multiple of Hkv),
// through flex attention's decode path; [B, Hq, 1, Ev] in query's dtype, no autograd. A
// position outside [0, M) is an ember::Error naming `op` when the kernel runs.
Tensor flex_attention_at_position(const char* op, const Tensor& query, const Tensor& keys, const Tensor& values,
                                  const Tensor& input_pos, std::optional<double> scale, int64_t window);

}  // namespace ember::ops
