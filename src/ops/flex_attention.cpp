// The flex attention op: checks, the kernel problem, the forward and the backward node over
// the kernels of src/cpu/attention/flex_attention.h. nn::attention::flex_attention
// (src/nn/attention/flex_attention.cpp) turns its mods and BlockMask into the plain call.
#include "ops/flex_attention.h"

#include <cmath>
#include <limits>

#include "autograd/function.h"
#include "core/graph_capture.h"
#include "core/tensor_impl.h"
#include "cpu/attention/flex_attention.h"
#include "cpu/parallel.h"
#include "ember/functions.h"
#include "ops/op_utils.h"

namespace ember::ops {
namespace {

// The validated call, as the forward and the backward node read it.
struct FlexInputs {
  Tensor query, key, value;  // detached: the backward node keeps these
  std::optional<FlexBlockMask> block_mask;
  detail::TileFunction score_mod, mask_mod;
  std::shared_ptr<const void> score_mod_owner, mask_mod_owner;
  double scale = 1;
  std::vector<Tensor> captured;
  std::function<void(size_t, int)> set_captured_slot;
  int64_t q_block = 128, kv_block = 128;
};

cpu::attention::Operand operand(const Tensor& t, int64_t batch) {
  return {t.data_ptr(), t.size(0) == 1 && batch > 1 ? 0 : t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

cpu::attention::BlockLists lists(const FlexBlockLists& in) {
  cpu::attention::BlockLists l;
  l.num = in.num.data_ptr<int32_t>();
  l.indices = in.indices.data_ptr<int32_t>();
  if (in.full_num.defined()) {
    l.full_num = in.full_num.data_ptr<int32_t>();
    l.full_indices = in.full_indices.data_ptr<int32_t>();
  }
  l.batch = in.num.size(0);
  l.heads = in.num.size(1);
  l.blocks = in.num.size(2);
  l.max_entries = in.indices.size(3);
  return l;
}

void check_block_mask(const char* op, const FlexBlockMask& mask, int64_t B, int64_t Hq, int64_t L, int64_t S) {
  EMBER_CHECK(mask.kv_lists.num.defined(), op, "block_mask is empty");
  EMBER_CHECK(mask.q_len == L && mask.kv_len == S, op, "block_mask was made for Q_LEN ", mask.q_len, ", KV_LEN ",
              mask.kv_len, " but query has length ", L, " and key ", S, "; create it for these lengths or adjust() it");
  const int64_t mb = mask.kv_lists.num.size(0), mh = mask.kv_lists.num.size(1);
  EMBER_CHECK(mb == 1 || mb == B, op, "block_mask batch ", mb, " does not broadcast to batch ", B);
  EMBER_CHECK(mh == 1 || mh == Hq, op, "block_mask heads ", mh, " does not broadcast to ", Hq, " query heads");
  const int64_t q_blocks = (L + mask.q_block - 1) / mask.q_block;
  const int64_t kv_blocks = (S + mask.kv_block - 1) / mask.kv_block;
  EMBER_CHECK(mask.kv_lists.num.size(2) >= q_blocks && mask.q_lists.num.size(2) >= kv_blocks, op, "block_mask has ",
              mask.kv_lists.num.size(2), " x ", mask.q_lists.num.size(2), " blocks; lengths ", L, ", ", S, " need ", q_blocks,
              " x ", kv_blocks);
}

// Checks shapes and dtypes (q [B, Hq, L, E], k [B|1, Hkv, S, E], v [B|1, Hkv, S, Ev], the block
// mask's lengths and batch/head sizes) and fills the kernel problem's tensors and settings.
FlexInputs validate_inputs(const char* op, const FlexAttentionCall& call) {
  const Tensor &query = call.query, &key = call.key, &value = call.value;
  EMBER_CHECK(query.defined() && key.defined() && value.defined(), op, "query, key and value must be defined");
  EMBER_CHECK(query.dim() == 4 && key.dim() == 4 && value.dim() == 4, op,
              "expects 4-D query [B, H, L, E], key [B, H, S, E] and value [B, H, S, Ev]; got shapes ", query.sizes(),
              ", ", key.sizes(), ", ", value.sizes());
  const ScalarType dtype = query.scalar_type();
  EMBER_CHECK(dtype == kFloat32 || dtype == kFloat64 || dtype == kBFloat16 || dtype == kFloat16, op,
              "supports float32, float64, bfloat16 and float16, not ", dtype_name(dtype));
  EMBER_CHECK(key.scalar_type() == dtype && value.scalar_type() == dtype, op, "query, key and value must share a dtype; got ",
              dtype_name(dtype), ", ", dtype_name(key.scalar_type()), ", ", dtype_name(value.scalar_type()));
  const int64_t B = query.size(0), Hq = query.size(1), L = query.size(2), E = query.size(3);
  const int64_t Bk = key.size(0), Hkv = key.size(1), S = key.size(2);
  EMBER_CHECK(Bk == B || Bk == 1, op, "key batch ", Bk, " does not broadcast to query batch ", B);
  EMBER_CHECK(value.size(0) == Bk && value.size(1) == Hkv && value.size(2) == S, op, "key ", key.sizes(),
              " and value ", value.sizes(), " disagree in batch, heads or length");
  EMBER_CHECK(key.size(3) == E, op, "query head dim ", E, " != key head dim ", key.size(3));
  EMBER_CHECK(Hkv > 0 || Hq == 0, op, "key has no heads");
  if (Hq != Hkv) {
    EMBER_CHECK(call.enable_gqa, op, "query has ", Hq, " heads and key ", Hkv, "; pass enable_gqa for grouped-query attention");
    EMBER_CHECK(Hkv > 0 && Hq % Hkv == 0, op, "query heads ", Hq, " must be a multiple of key heads ", Hkv);
  }
  constexpr int64_t kMaxLength = std::numeric_limits<int32_t>::max();
  EMBER_CHECK(L < kMaxLength && S < kMaxLength && B < kMaxLength && Hq < kMaxLength, op,
              "lengths, batch and heads must fit in int32; got shape ", query.sizes(), " and key ", key.sizes());
  FlexInputs in;
  in.query = query.detach();
  in.key = key.detach();
  in.value = value.detach();
  if (call.block_mask) {
    check_block_mask(op, *call.block_mask, B, Hq, L, S);
    in.block_mask = call.block_mask;
    in.q_block = call.block_mask->q_block;
    in.kv_block = call.block_mask->kv_block;
  }
  in.score_mod = call.score_mod;
  in.mask_mod = call.mask_mod;
  in.score_mod_owner = call.score_mod_owner;
  in.mask_mod_owner = call.mask_mod_owner;
  in.scale = call.scale.value_or(1.0 / std::sqrt(static_cast<double>(E)));
  in.captured = call.captured;
  in.set_captured_slot = call.set_captured_slot;
  return in;
}

cpu::attention::FlexProblem make_problem(const FlexInputs& in) {
  cpu::attention::FlexProblem p;
  const Tensor& q = in.query;
  p.dtype = q.scalar_type();
  p.batch = q.size(0);
  p.heads_q = q.size(1);
  p.q_len = q.size(2);
  p.head_dim = q.size(3);
  p.heads_kv = in.key.size(1);
  p.kv_len = in.key.size(2);
  p.value_dim = in.value.size(3);
  p.q = operand(q, p.batch);
  p.k = operand(in.key, p.batch);
  p.v = operand(in.value, p.batch);
  p.scale = in.scale;
  p.q_block = in.q_block;
  p.kv_block = in.kv_block;
  if (in.block_mask) {
    p.has_block_mask = true;
    p.kv_lists = lists(in.block_mask->kv_lists);
    p.q_lists = lists(in.block_mask->q_lists);
  }
  p.score_mod = in.score_mod;
  p.mask_mod = in.mask_mod;
  return p;
}

cpu::attention::Target target(const Tensor& t) {
  return {t.data_ptr(), t.stride(0), t.stride(1), t.stride(2)};
}

// (output [B, Hq, L, Ev], lse [B, Hq, L]) without autograd.
std::pair<Tensor, Tensor> run_forward(const FlexInputs& in) {
  const Tensor& q = in.query;
  const std::vector<int64_t> sizes = {q.size(0), q.size(1), q.size(2), in.value.size(3)};
  Tensor out = empty_in_layout_of(q, sizes, q.scalar_type());
  Tensor lse = empty({q.size(0), q.size(1), q.size(2)}, q.scalar_type() == kFloat64 ? kFloat64 : kFloat32);
  cpu::attention::flex_forward(make_problem(in), target(out), lse.data_ptr());
  return {out, lse};
}

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
  Tensor grad_out = grad.to(q.scalar_type());
  if (grad_out.stride(3) != 1) grad_out = grad_out.contiguous();
  // The gradients laid out as their inputs are (a transposed projection's stays a view back).
  Tensor dq = empty_in_layout_of(q, q.sizes(), q.scalar_type());
  Tensor dk = empty_in_layout_of(k, k.sizes(), k.scalar_type());
  Tensor dv = empty_in_layout_of(v, v.sizes(), v.scalar_type());
  CapturedGrads params;
  for (size_t i = 0; i < in.captured.size(); ++i) {
    const bool wanted = needs.size() > 3 + i && needs[3 + i];
    in.set_captured_slot(i, wanted ? static_cast<int>(params.sizes.size()) : -1);
    if (!wanted) continue;
    params.sizes.push_back(in.captured[i].numel());
    params.buffers.emplace_back(static_cast<size_t>(in.captured[i].numel()), 0.0);
  }
  for (auto& buffer : params.buffers) params.pointers.push_back(buffer.data());
  const cpu::attention::FlexProblem problem = make_problem(in);
  cpu::attention::flex_backward(problem, operand(out, problem.batch), lse.data_ptr(), operand(grad_out, problem.batch),
                                {target(dq), target(dk), target(dv)}, static_cast<int>(params.sizes.size()),
                                params.sizes.data(), params.pointers.data());
  std::vector<Tensor> grads = {dq, dk, dv};
  size_t next = 0;
  for (size_t i = 0; i < in.captured.size(); ++i) {
    const bool wanted = needs.size() > 3 + i && needs[3 + i];
    grads.push_back(wanted ? to_dtype_of(params.buffers[next++], in.captured[i]) : Tensor());
    in.set_captured_slot(i, -1);
  }
  return grads;
}

}  // namespace

std::pair<Tensor, Tensor> flex_attention(const char* op, const FlexAttentionCall& call) {
  const FlexInputs in = validate_inputs(op, call);
  auto [out, lse] = run_forward(in);
  std::vector<Tensor> inputs = {call.query, call.key, call.value};
  for (const Tensor& c : call.captured) inputs.push_back(c);
  if (autograd::should_record(inputs)) {
    autograd::SavedTensor saved_out(out, true), saved_lse(lse, true);
    autograd::record("FlexAttentionBackward", inputs, {out},
                     [in, saved_out, saved_lse](std::vector<Tensor>& g, const std::vector<bool>& needs) {
                       return flex_backward(in, saved_out.get(), saved_lse.get(), g[0], needs);
                     });
  }
  return {out, lse};
}

Tensor flex_attention_at_position(const char* op, const Tensor& query, const Tensor& keys, const Tensor& values,
                                  const Tensor& input_pos, std::optional<double> scale, int64_t window) {
  FlexAttentionCall call;
  call.query = query;
  call.key = keys;
  call.value = values;
  call.scale = scale;
  call.enable_gqa = true;
  const FlexInputs in = validate_inputs(op, call);
  EMBER_CHECK(query.size(2) == 1 && keys.size(0) == query.size(0), op,
              "expects one query position per sequence, query [B, Hq, 1, E] with keys of the same batch; got ",
              query.sizes(), " and ", keys.sizes());
  EMBER_CHECK(input_pos.defined() && input_pos.dim() == 1 && input_pos.size(0) == 1 && input_pos.scalar_type() == kInt64,
              op, "input_pos must be int64 of shape [1], got ",
              input_pos.defined() ? dtype_name(input_pos.scalar_type()) : "an undefined tensor", " of shape ",
              input_pos.defined() ? input_pos.sizes() : IntArrayRef());
  EMBER_CHECK(window >= 0, op, "window must be >= 0 (0: none), got ", window);
  EMBER_CHECK(keys.stride(3) == 1 && values.stride(3) == 1, op, "keys and values need unit steps along their last dim");
  const int64_t max_length = keys.size(2);
  const ScalarType dtype = query.scalar_type();
  Tensor out = core::make_tensor({query.size(0), query.size(1), 1, values.size(3)}, dtype);
  Tensor lse = core::make_tensor({query.size(0), query.size(1), 1}, dtype == kFloat64 ? kFloat64 : kFloat32);
  // The decode path's memory for the longest span, made here so that a run allocates nothing.
  const int64_t slots = cpu::num_threads();
  Tensor workspace;
  {
    cpu::attention::FlexProblem largest;
    largest.dtype = dtype;
    largest.batch = query.size(0);
    largest.heads_q = query.size(1);
    largest.heads_kv = keys.size(1);
    largest.q_len = 1;
    largest.kv_len = max_length;
    largest.head_dim = query.size(3);
    largest.value_dim = values.size(3);
    workspace = core::make_tensor({cpu::attention::flex_forward_workspace_bytes(largest, slots)}, kUInt8);
  }
  core::launch(op, [&] {
    cpu::attention::FlexProblem problem = make_problem(in);
    problem.workspace = workspace.data_ptr();
    problem.workspace_slots = slots;
    return [problem, op, window, max_length, position = input_pos.data_ptr<int64_t>(), key_base = problem.k.data,
            value_base = problem.v.data, item = static_cast<int64_t>(element_size(dtype)), o = target(out),
            l = lse.data_ptr()]() mutable {
      const int64_t at = *position;
      EMBER_CHECK(at >= 0 && at < max_length, op, "input_pos ", at, " outside the cache's [0, ", max_length, ")");
      const int64_t first = window > 0 ? std::max<int64_t>(0, at + 1 - window) : 0;
      problem.kv_len = at + 1 - first;
      problem.k.data = static_cast<const char*>(key_base) + first * problem.k.stride_row * item;
      problem.v.data = static_cast<const char*>(value_base) + first * problem.v.stride_row * item;
      cpu::attention::flex_forward(problem, o, l);
    };
  });
  return out;
}

}  // namespace ember::ops
