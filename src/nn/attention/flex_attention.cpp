// flex_attention's op layer: validation, the kernel call, and the backward node.
#include "ember/nn/attention/flex_attention.h"

#include <cmath>

#include "autograd/function.h"
#include "core/record_op.h"
#include "cpu/attention/flex_attention.h"
#include "nn/attention/flex_problem.h"

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

using cpu::attention::FlexProblem;

// Gradients of the captured tensors listed in options that require grad.
struct CapturedGrads {
  std::vector<int64_t> sizes;
  std::vector<std::vector<double>> buffers;
  std::vector<double*> pointers;
};

Tensor to_dtype_of(const std::vector<double>& values, const Tensor& like) {
  Tensor t = empty({static_cast<int64_t>(values.size())}, kFloat64);
  std::copy(values.begin(), values.end(), t.data_ptr<double>());
  return t.view(like.sizes()).to(like.scalar_type());
}

std::vector<Tensor> flex_backward(const FlexInputs& in, const Tensor& out, const Tensor& lse, const Tensor& grad,
                                  const std::vector<bool>& needs) {
  const Tensor& q = in.query;
  const Tensor& k = in.key;
  const Tensor& v = in.value;
  Tensor grad_out = grad.to(q.scalar_type()).contiguous();
  Tensor dq = empty(q.sizes(), q.scalar_type());
  Tensor dk = empty(k.sizes(), k.scalar_type());
  Tensor dv = empty(v.sizes(), v.scalar_type());
  CapturedGrads params;
  for (size_t i = 0; i < in.captured.size(); ++i) {
    const bool wanted = needs.size() > 3 + i && needs[3 + i];
    in.captured[i].set_slot(wanted ? static_cast<int>(params.sizes.size()) : -1);
    if (!wanted) continue;
    params.sizes.push_back(in.captured[i].numel());
    params.buffers.emplace_back(static_cast<size_t>(in.captured[i].numel()), 0.0);
  }
  for (auto& buffer : params.buffers) params.pointers.push_back(buffer.data());
  const FlexProblem problem = make_problem(in);
  cpu::attention::flex_backward(problem, out.data_ptr(), lse.data_ptr(), grad_out.data_ptr(), dq.data_ptr(),
                                dk.data_ptr(), dv.data_ptr(), static_cast<int>(params.sizes.size()),
                                params.sizes.data(), params.pointers.data());
  std::vector<Tensor> grads = {dq, dk, dv};
  size_t next = 0;
  for (size_t i = 0; i < in.captured.size(); ++i) {
    const bool wanted = needs.size() > 3 + i && needs[3 + i];
    grads.push_back(wanted ? to_dtype_of(params.buffers[next++], in.captured[i].tensor()) : Tensor());
    in.captured[i].set_slot(-1);
  }
  return grads;
}

}  // namespace

namespace detail {

FlexAttentionOutput flex_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const std::shared_ptr<const TileMod>& score_mod, const BlockMask* block_mask,
                                   const FlexAttentionOptions& options) {
  EMBER_RECORD_OP("flex_attention", query, key, value);
  FlexInputs in = validate_inputs("flex_attention", query, key, value, block_mask, options.enable_gqa);
  in.score_mod = score_mod;
  in.scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(3))));
  in.captured = options.captured;
  for (const auto& c : in.captured) c.refresh();
  auto [out, lse] = run_forward(in);
  if (ember_trace_op_.active()) {
    // Note [Export trace]: only masks whose semantics are data (causal_block_mask) export.
    EMBER_CHECK(!score_mod && in.captured.empty() && (!block_mask || block_mask->causal), "flex_attention",
                "cannot be exported: a score_mod or a mask_mod is opaque code; use causal_block_mask (or no mask)");
    ember_trace_op_.attr("mask", std::string(block_mask ? "causal" : "none"));
    if (block_mask) {
      ember_trace_op_.attr("q_offset", block_mask->causal->q_offset)
          .attr("window", block_mask->causal->window)
          .attr("block_q", block_mask->BLOCK_SIZE.q)
          .attr("block_kv", block_mask->BLOCK_SIZE.kv);
    }
    ember_trace_op_.attr("scale", in.scale).attr("enable_gqa", static_cast<int64_t>(options.enable_gqa));
    ember_trace_op_.result(out);
  }

  std::vector<Tensor> inputs = {query, key, value};
  for (const auto& c : in.captured) inputs.push_back(c.tensor());
  if (autograd::should_record(inputs)) {
    autograd::SavedTensor saved_out(out, true), saved_lse(lse, true);
    autograd::record("FlexAttentionBackward", inputs, {out},
                     [in, saved_out, saved_lse](std::vector<Tensor>& g, const std::vector<bool>& needs) {
                       return flex_backward(in, saved_out.get(), saved_lse.get(), g[0], needs);
                     });
  }
  return {out, options.return_lse ? lse : Tensor()};
}

}  // namespace detail

FlexAttentionOutput flex_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const std::optional<BlockMask>& block_mask, const FlexAttentionOptions& options) {
  return detail::flex_attention(query, key, value, {}, block_mask ? &*block_mask : nullptr, options);
}

}  // namespace ember::nn::attention
