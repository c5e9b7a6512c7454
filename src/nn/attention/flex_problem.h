// What flex_attention, scaled_dot_product_attention and the decode path share: validated
// inputs, the kernel problem built from them, and the forward call (internal).
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "cpu/attention/flex_attention.h"
#include "ember/nn/attention/flex_attention.h"

namespace ember::nn::attention {

struct FlexInputs {
  Tensor query, key, value;  // detached: the backward node keeps these
  std::optional<BlockMask> block_mask;
  std::shared_ptr<const detail::TileMod> score_mod;  // null: scores as they are
  std::shared_ptr<const detail::TileMod> mask_mod;   // the block mask's mask_mod, or sdpa's attn_mask
  double scale = 1;
  std::vector<CapturedTensor> captured;
  int64_t q_block = 128, kv_block = 128;
};

// Checks shapes and dtypes (q [B, Hq, L, E], k [B|1, Hkv, S, E], v [B|1, Hkv, S, Ev],
// the block mask's lengths and batch/head sizes) and fills query/key/value/block_mask.
FlexInputs validate_inputs(const char* op, const Tensor& query, const Tensor& key, const Tensor& value,
                           const BlockMask* block_mask, bool enable_gqa);

cpu::attention::FlexProblem make_problem(const FlexInputs& in);

// (output [B, Hq, L, Ev], lse [B, Hq, L]) without autograd.
std::pair<Tensor, Tensor> run_forward(const FlexInputs& in);

}  // namespace ember::nn::attention
