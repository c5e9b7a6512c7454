#include "nn/attention/flex_problem.h"

#include <limits>

namespace ember::nn::attention {
namespace {

cpu::attention::Operand operand(const Tensor& t, int64_t batch) {
  return {t.data_ptr(), t.size(0) == 1 && batch > 1 ? 0 : t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

cpu::attention::BlockLists lists(const Tensor& num, const Tensor& indices, const Tensor& full_num,
                                 const Tensor& full_indices) {
  cpu::attention::BlockLists l;
  l.num = num.data_ptr<int32_t>();
  l.indices = indices.data_ptr<int32_t>();
  if (full_num.defined()) {
    l.full_num = full_num.data_ptr<int32_t>();
    l.full_indices = full_indices.data_ptr<int32_t>();
  }
  l.batch = num.size(0);
  l.heads = num.size(1);
  l.blocks = num.size(2);
  l.max_entries = indices.size(3);
  return l;
}

void check_block_mask(const char* op, const BlockMask& mask, int64_t B, int64_t Hq, int64_t L, int64_t S) {
  EMBER_CHECK(mask.kv_num_blocks.defined(), op, "block_mask is empty");
  EMBER_CHECK(mask.q_len == L && mask.kv_len == S, op, "block_mask was made for Q_LEN ", mask.q_len, ", KV_LEN ",
              mask.kv_len, " but query has length ", L, " and key ", S, "; create it for these lengths or adjust() it");
  const int64_t mb = mask.kv_num_blocks.size(0), mh = mask.kv_num_blocks.size(1);
  EMBER_CHECK(mb == 1 || mb == B, op, "block_mask batch ", mb, " does not broadcast to batch ", B);
  EMBER_CHECK(mh == 1 || mh == Hq, op, "block_mask heads ", mh, " does not broadcast to ", Hq, " query heads");
  const int64_t q_blocks = (L + mask.BLOCK_SIZE.q - 1) / mask.BLOCK_SIZE.q;
  const int64_t kv_blocks = (S + mask.BLOCK_SIZE.kv - 1) / mask.BLOCK_SIZE.kv;
  EMBER_CHECK(mask.num_q_blocks() >= q_blocks && mask.q_num_blocks.size(2) >= kv_blocks, op, "block_mask has ",
              mask.num_q_blocks(), " x ", mask.q_num_blocks.size(2), " blocks; lengths ", L, ", ", S, " need ", q_blocks,
              " x ", kv_blocks);
}

}  // namespace

FlexInputs validate_inputs(const char* op, const Tensor& query, const Tensor& key, const Tensor& value,
                           const BlockMask* block_mask, bool enable_gqa) {
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
    EMBER_CHECK(enable_gqa, op, "query has ", Hq, " heads and key ", Hkv, "; pass enable_gqa for grouped-query attention");
    EMBER_CHECK(Hkv > 0 && Hq % Hkv == 0, op, "query heads ", Hq, " must be a multiple of key heads ", Hkv);
  }
  constexpr int64_t kMaxLength = std::numeric_limits<int32_t>::max();
  EMBER_CHECK(L < kMaxLength && S < kMaxLength && B < kMaxLength && Hq < kMaxLength, op,
              "lengths, batch and heads must fit in int32; got shape ", query.sizes(), " and key ", key.sizes());
  FlexInputs in;
  in.query = query.detach();
  in.key = key.detach();
  in.value = value.detach();
  if (block_mask) {
    check_block_mask(op, *block_mask, B, Hq, L, S);
    in.block_mask = *block_mask;
    in.q_block = block_mask->BLOCK_SIZE.q;
    in.kv_block = block_mask->BLOCK_SIZE.kv;
    in.mask_mod = block_mask->mask_mod;
  }
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
    const BlockMask& m = *in.block_mask;
    p.has_block_mask = true;
    p.kv_lists = lists(m.kv_num_blocks, m.kv_indices, m.full_kv_num_blocks, m.full_kv_indices);
    p.q_lists = lists(m.q_num_blocks, m.q_indices, m.full_q_num_blocks, m.full_q_indices);
  }
  if (in.score_mod) p.score_mod = in.score_mod->tile_function();
  if (in.mask_mod) p.mask_mod = in.mask_mod->tile_function();
  return p;
}

std::pair<Tensor, Tensor> run_forward(const FlexInputs& in) {
  const Tensor& q = in.query;
  Tensor out = empty({q.size(0), q.size(1), q.size(2), in.value.size(3)}, q.scalar_type());
  Tensor lse = empty({q.size(0), q.size(1), q.size(2)}, q.scalar_type() == kFloat64 ? kFloat64 : kFloat32);
  cpu::attention::flex_forward(make_problem(in), out.data_ptr(), lse.data_ptr());
  return {out, lse};
}

}  // namespace ember::nn::attention
