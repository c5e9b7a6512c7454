// nn::attention::flex_attention: its mods and BlockMask as the plain call of the flex
// attention op (src/ops/flex_attention.cpp), and the export trace's record of the call.
#include "ember/nn/attention/flex_attention.h"

#include <cmath>
#include <string>

#include "core/record_op.h"
#include "ops/flex_attention.h"

namespace ember::nn::attention {

CapturedTensor::CapturedTensor(const Tensor& tensor) : state_(std::make_shared<State>()) {
  EMBER_CHECK(tensor.defined(), "CapturedTensor", "tensor is undefined");
  state_->tensor = tensor;
  refresh();
}

void CapturedTensor::refresh() const {
  Tensor values = state_->tensor.detach().to(kFloat64).contiguous();
  const double* data = values.data_ptr<double>();
  state_->values.assign(data, data + values.numel());
  state_->strides = values.strides();
}

void CapturedTensor::throw_out_of_range(int64_t flat) const {
  EMBER_FAIL("CapturedTensor", "index (flat ", flat, ") out of range for a tensor of shape ", state_->tensor.sizes());
}

namespace {

ops::FlexBlockMask plain_block_mask(const BlockMask& m) {
  ops::FlexBlockMask out;
  out.kv_lists = {m.kv_num_blocks, m.kv_indices, m.full_kv_num_blocks, m.full_kv_indices};
  out.q_lists = {m.q_num_blocks, m.q_indices, m.full_q_num_blocks, m.full_q_indices};
  out.q_block = m.BLOCK_SIZE.q;
  out.kv_block = m.BLOCK_SIZE.kv;
  out.q_len = m.q_len;
  out.kv_len = m.kv_len;
  return out;
}

}  // namespace

namespace detail {

FlexAttentionOutput flex_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const std::shared_ptr<const TileMod>& score_mod, const BlockMask* block_mask,
                                   const FlexAttentionOptions& options) {
  EMBER_RECORD_OP("flex_attention", query, key, value);
  ops::FlexAttentionCall call;
  call.query = query;
  call.key = key;
  call.value = value;
  if (block_mask) {
    call.block_mask = plain_block_mask(*block_mask);
    if (block_mask->mask_mod) call.mask_mod = block_mask->mask_mod->tile_function();
    call.mask_mod_owner = block_mask->mask_mod;
  }
  if (score_mod) call.score_mod = score_mod->tile_function();
  call.score_mod_owner = score_mod;
  call.scale = options.scale;
  call.enable_gqa = options.enable_gqa;
  for (const CapturedTensor& c : options.captured) {
    c.refresh();
    call.captured.push_back(c.tensor());
  }
  call.set_captured_slot = [captured = options.captured](size_t i, int slot) { captured[i].set_slot(slot); };
  auto [out, lse] = ops::flex_attention("flex_attention", call);
  if (ember_trace_op_.active()) {
    // Note [Export trace]: only masks whose semantics are data (causal_block_mask) export.
    EMBER_CHECK(!score_mod && options.captured.empty() && (!block_mask || block_mask->causal), "flex_attention",
                "cannot be exported: a score_mod or a mask_mod is opaque code; use causal_block_mask (or no mask)");
    ember_trace_op_.attr("mask", std::string(block_mask ? "causal" : "none"));
    if (block_mask) {
      ember_trace_op_.attr("q_offset", block_mask->causal->q_offset)
          .attr("window", block_mask->causal->window)
          .attr("block_q", block_mask->BLOCK_SIZE.q)
          .attr("block_kv", block_mask->BLOCK_SIZE.kv);
    }
    const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(3))));
    ember_trace_op_.attr("scale", scale).attr("enable_gqa", static_cast<int64_t>(options.enable_gqa));
    ember_trace_op_.result(out);
  }
  return {out, options.return_lse ? lse : Tensor()};
}

}  // namespace detail

FlexAttentionOutput flex_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const std::optional<BlockMask>& block_mask, const FlexAttentionOptions& options) {
  return detail::flex_attention(query, key, value, {}, block_mask ? &*block_mask : nullptr, options);
}

}  // namespace ember::nn::attention
