// flex_attention with the causal mask of the exported GPT (nn::attention::causal_block_mask):
// key kv is visible to query q iff q + q_offset >= kv and (window == 0 or q + q_offset - kv <
// window). The block lists are built into scratch memory as create_block_mask builds them
// (B = H = 1, tiles Empty/Partial/Full), the mask is applied to Partial tiles through the
// same tile contract (ember/detail/score_tile.h), and cpu::attention::flex_forward runs the
// forward, decoding path included, as nn::attention::flex_attention does.
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/attention/flex_attention.h"
#include "cpu/parallel.h"
#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

using ember::detail::ScoreTile;
using ember::detail::TilePass;

struct CausalMask {
  int32_t offset = 0, window = 0;
  bool visible(int32_t q, int32_t kv) const { return q + offset >= kv && (window == 0 || q + offset - kv < window); }
};

// MaskModHolder::mask_tile for the causal mask: masked scores become -inf.
template <typename T>
void mask_tile(const CausalMask& mask, const ScoreTile& t) {
  for (int64_t r = 0; r < t.rows; ++r) {
    const int32_t q = t.query(r);
    T* scores = static_cast<T*>(t.scores) + r * t.ld;
    T* dscore = t.dscore ? static_cast<T*>(t.dscore) + r * t.ld : nullptr;
    for (int32_t c = 0; c < static_cast<int32_t>(t.cols); ++c) {
      const bool visible = mask.visible(q, t.kv_start + c);
      scores[c] = visible ? scores[c] : -std::numeric_limits<T>::infinity();
      if (dscore && !visible) dscore[c] = T(0);
    }
  }
}

void apply_mask(const void* self, const ScoreTile& t, TilePass pass) {
  if (pass == TilePass::ParamGrad) return;
  const auto& mask = *static_cast<const CausalMask*>(self);
  if (t.f64) mask_tile<double>(mask, t);
  else mask_tile<float>(mask, t);
}

// MaskModHolder::classify over [q0, q1) x [kv0, kv1).
int classify(const CausalMask& mask, int32_t q0, int32_t q1, int32_t kv0, int32_t kv1) {
  bool any = false, all = true;
  for (int32_t q = q0; q < q1; ++q) {
    int32_t visible = 0;
    for (int32_t kv = kv0; kv < kv1; ++kv) visible += mask.visible(q, kv) ? 1 : 0;
    any |= visible > 0;
    all &= visible == kv1 - kv0;
    if (any && !all) return 1;  // Partial
  }
  return all ? 2 : any ? 1 : 0;  // Full, Partial, Empty
}

struct Attributes {
  int64_t q_offset = 0, window = 0, block_q = 128, block_kv = 128, enable_gqa = 0;
  double scale = 0;
  bool has_scale = false;
};

bool read_attributes(const program::Call* call, const int64_t* symbols, Attributes* a) {
  const program::Attribute* mask = find_attribute(call, "mask");
  if (mask == nullptr || mask->kind() != program::AttributeKind::String || mask->string_value() == nullptr ||
      std::strcmp(mask->string_value()->c_str(), "causal") != 0)
    return false;
  a->has_scale = find_attribute(call, "scale") != nullptr;
  return int_attribute(call, "q_offset", symbols, 0, &a->q_offset) &&
         int_attribute(call, "window", symbols, 0, &a->window) &&
         int_attribute(call, "block_q", symbols, 128, &a->block_q) &&
         int_attribute(call, "block_kv", symbols, 128, &a->block_kv) &&
         int_attribute(call, "enable_gqa", symbols, 0, &a->enable_gqa) && float_attribute(call, "scale", 0, &a->scale) &&
         a->block_q > 0 && a->block_kv > 0 && a->window >= 0;
}

int64_t ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }

// Scratch: lse, then the kv-wise lists num, indices, full_num, full_indices (int32), then
// the forward's workspace (Note [Flex workspace] in src/cpu/attention/flex_attention.cpp).
struct Layout {
  int64_t lse_bytes, q_blocks, kv_blocks;
  int64_t bytes() const { return aligned_bytes(lse_bytes) + 2 * aligned_bytes(q_blocks * 4) + 2 * aligned_bytes(q_blocks * kv_blocks * 4); }
};

// The problem of q [B, Hq, L, E], k [Bk, Hkv, S, E], v [Bk, Hkv, S, Ev] without its data.
cpu::attention::FlexProblem problem_of(program::ScalarType dtype, const int64_t* q, const int64_t* k, const int64_t* v,
                                       const Attributes& a) {
  cpu::attention::FlexProblem p;
  p.dtype = to_ember(dtype);
  p.batch = q[0];
  p.heads_q = q[1];
  p.q_len = q[2];
  p.head_dim = q[3];
  p.heads_kv = k[1];
  p.kv_len = k[2];
  p.value_dim = v[3];
  p.q_block = a.block_q;
  p.kv_block = a.block_kv;
  p.has_block_mask = true;
  return p;
}

bool check(const KernelSignature& s, Error& error) {
  if (!check_operands(s, 3, 3, 1, error) || !check_same_dtype(s, error)) return false;
  const program::ScalarType t = s.outputs[0].dtype;
  if (t != program::ScalarType::Float32 && t != program::ScalarType::Float64 && t != program::ScalarType::Float16 &&
      t != program::ScalarType::BFloat16)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[flex_attention] supports float32, float64, bfloat16 and "
                      "float16, not %s", dtype_name(t));
  for (const OperandType& operand : s.inputs)
    if (operand.dim != 4 || s.outputs[0].dim != 4)
      return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                        "[flex_attention] expects 4-D query, key, value and output [B, H, L, E]");
  Attributes a;
  if (!read_attributes(s.call, nullptr, &a))
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                      "[flex_attention] needs mask \"causal\" and Int (or Exprs) q_offset, window >= 0, block_q, "
                      "block_kv > 0, enable_gqa, and a Float scale if any");
  const int64_t lse_element = t == program::ScalarType::Float64 ? 8 : 4;
  const OperandType &q = s.inputs[0], &k = s.inputs[1];
  // Bounds that keep the scratch arithmetic below 2^63 (a run refuses lengths past int32).
  constexpr int64_t kMaxOperandBytes = int64_t{1} << 48, kMaxListEntries = int64_t{1} << 40;
  int64_t list_entries = 0;
  for (const OperandType& operand : s.inputs)
    if (operand.max_bytes > kMaxOperandBytes)
      return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[flex_attention] an operand of up to %lld bytes (limit 2^48)",
                        static_cast<long long>(operand.max_bytes));
  if (q.max_sizes[2] > INT32_MAX || k.max_sizes[2] > INT32_MAX ||
      __builtin_mul_overflow(ceil_div(q.max_sizes[2], a.block_q), ceil_div(k.max_sizes[2], a.block_kv), &list_entries) ||
      list_entries > kMaxListEntries)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[flex_attention] lengths up to %lld and %lld with blocks %lld "
                      "and %lld: beyond int32 lengths or 2^40 block pairs", static_cast<long long>(q.max_sizes[2]),
                      static_cast<long long>(k.max_sizes[2]), static_cast<long long>(a.block_q),
                      static_cast<long long>(a.block_kv));
  const Layout layout{q.max_sizes[0] * q.max_sizes[1] * q.max_sizes[2] * lse_element, ceil_div(q.max_sizes[2], a.block_q),
                      ceil_div(k.max_sizes[2], a.block_kv)};
  if (s.inputs[0].max_sizes[1] == 0 || s.inputs[1].max_sizes[1] == 0)
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[flex_attention] query and key need at least one head");
  // One workspace slot per pool thread at the largest sizes; a run with fewer threads or
  // smaller sizes uses part of it.
  const cpu::attention::FlexProblem largest =
      problem_of(t, q.max_sizes, k.max_sizes, s.inputs[2].max_sizes, a);
  *s.scratch_bytes = aligned_bytes(layout.bytes()) + cpu::attention::flex_forward_workspace_bytes(largest, cpu::num_threads());
  return true;
}

bool run(const KernelCall& c, Error& error) {
  const TensorView &q = c.inputs[0], &k = c.inputs[1], &v = c.inputs[2], &out = c.outputs[0];
  Attributes a;
  read_attributes(c.call, c.symbols, &a);
  const int64_t B = q.sizes[0], Hq = q.sizes[1], L = q.sizes[2], E = q.sizes[3];
  const int64_t Hkv = k.sizes[1], S = k.sizes[2];
  if ((k.sizes[0] != B && k.sizes[0] != 1) || v.sizes[0] != k.sizes[0] || v.sizes[1] != Hkv || v.sizes[2] != S ||
      k.sizes[3] != E)
    return fail(error, "flex_attention", "query, key and value disagree in batch, heads, length or head dim");
  if (Hq != Hkv && (!a.enable_gqa || Hkv == 0 || Hq % Hkv != 0))
    return fail(error, "flex_attention", "query heads must equal key heads, or be a multiple with enable_gqa");
  if (out.sizes[0] != B || out.sizes[1] != Hq || out.sizes[2] != L || out.sizes[3] != v.sizes[3] || !out.is_contiguous())
    return fail(error, "flex_attention", "the output must be contiguous [B, Hq, L, Ev]");
  if (out.numel() == 0) return true;
  constexpr int64_t kMaxLength = std::numeric_limits<int32_t>::max();
  if (L >= kMaxLength || S >= kMaxLength || a.q_offset >= kMaxLength || a.q_offset < 0 || a.window >= kMaxLength)
    return fail(error, "flex_attention", "lengths, q_offset and window must fit in int32");
  const CausalMask mask{static_cast<int32_t>(a.q_offset), static_cast<int32_t>(a.window)};
  const Layout layout{B * Hq * L * (q.dtype == program::ScalarType::Float64 ? 8 : 4), ceil_div(L, a.block_q),
                      ceil_div(S, a.block_kv)};
  char* scratch = static_cast<char*>(c.scratch);
  void* lse = scratch;
  auto* num = reinterpret_cast<int32_t*>(scratch + aligned_bytes(layout.lse_bytes));
  auto* full_num = num + aligned_bytes(layout.q_blocks * 4) / 4;
  auto* indices = full_num + aligned_bytes(layout.q_blocks * 4) / 4;
  auto* full_indices = indices + aligned_bytes(layout.q_blocks * layout.kv_blocks * 4) / 4;
  for (int64_t qb = 0; qb < layout.q_blocks; ++qb) {
    num[qb] = full_num[qb] = 0;
    const auto q0 = static_cast<int32_t>(qb * a.block_q), q1 = static_cast<int32_t>(std::min(L, (qb + 1) * a.block_q));
    for (int64_t kb = 0; kb < layout.kv_blocks; ++kb) {
      const auto kv0 = static_cast<int32_t>(kb * a.block_kv);
      const auto kv1 = static_cast<int32_t>(std::min(S, (kb + 1) * a.block_kv));
      const int state = classify(mask, q0, q1, kv0, kv1);
      if (state == 1) indices[qb * layout.kv_blocks + num[qb]++] = static_cast<int32_t>(kb);
      if (state == 2) full_indices[qb * layout.kv_blocks + full_num[qb]++] = static_cast<int32_t>(kb);
    }
  }
  cpu::attention::FlexProblem p = problem_of(q.dtype, q.sizes, k.sizes, v.sizes, a);
  // As many workspace slots as fit, up to one per pool thread (check() sized the scratch).
  p.workspace = scratch + aligned_bytes(layout.bytes());
  const int64_t workspace_bytes = c.scratch_bytes - aligned_bytes(layout.bytes());
  for (p.workspace_slots = cpu::num_threads();
       p.workspace_slots > 0 && cpu::attention::flex_forward_workspace_bytes(p, p.workspace_slots) > workspace_bytes;)
    --p.workspace_slots;
  if (p.workspace_slots == 0) return fail(error, "flex_attention", "sizes beyond the bounds its scratch was sized for");
  auto operand = [B](const TensorView& t) {
    return cpu::attention::Operand{t.data, t.sizes[0] == 1 && B > 1 ? 0 : t.strides[0], t.strides[1], t.strides[2],
                                   t.strides[3]};
  };
  p.q = operand(q);
  p.k = operand(k);
  p.v = operand(v);
  p.scale = a.has_scale ? a.scale : 1.0 / std::sqrt(static_cast<double>(E));
  p.kv_lists = cpu::attention::BlockLists{num, indices, full_num, full_indices, 1, 1, layout.q_blocks, layout.kv_blocks};
  p.mask_mod = ember::detail::TileFunction{&apply_mask, &mask};
  cpu::attention::flex_forward(p, cpu::attention::contiguous_target(out.data, p.heads_q, p.q_len, p.value_dim), lse);
  return true;
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL(flex_attention, check, run)
