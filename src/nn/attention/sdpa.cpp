#include "ember/nn/attention/sdpa.h"

#include <cmath>
#include <limits>

#include "ember/functions.h"
#include "ember/nn/attention/flex_attention.h"
#include "ember/nn/attention/mods.h"

namespace ember::nn::attention {
namespace {

const char* kOp = "scaled_dot_product_attention";

// attn_mask as a mask_mod over tiles: bool masks set -inf, float masks are added.
class AttentionMaskMod final : public detail::MaskMod {
 public:
  AttentionMaskMod(const Tensor& mask, int64_t B, int64_t H, int64_t L, int64_t S)
      : mask_(mask.expand({B, H, L, S})), data_(static_cast<const char*>(mask_.data_ptr())) {}

  bool at(int32_t b, int32_t h, int32_t q, int32_t kv) const override {
    return mask_.scalar_type() != kBool || *reinterpret_cast<const bool*>(data_ + offset(b, h, q, kv));
  }
  TileState classify(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t) const override { return TileState::Partial; }
  detail::TileFunction tile_function() const override { return {&apply, this}; }

 private:
  int64_t offset(int64_t b, int64_t h, int64_t q, int64_t kv) const {
    return (b * mask_.stride(0) + h * mask_.stride(1) + q * mask_.stride(2) + kv * mask_.stride(3)) *
           static_cast<int64_t>(mask_.element_size());
  }

  template <typename T, typename M>
  void run(const detail::ScoreTile& t) const {
    const int64_t step = mask_.stride(3);
    for (int64_t r = 0; r < t.rows; ++r) {
      const M* m = reinterpret_cast<const M*>(data_ + offset(t.b, t.head(r), t.query(r), t.kv_start));
      T* s = static_cast<T*>(t.scores) + r * t.ld;
      if (step == 1) apply_row<T, M>(s, m, t.cols);  // contiguous: a loop the compiler vectorizes
      else
        for (int64_t c = 0; c < t.cols; ++c) s[c] = combine<T, M>(s[c], m[c * step]);
    }
  }
  template <typename T, typename M>
  static T combine(T score, M m) {
    if constexpr (std::is_same_v<M, bool>) return m ? score : -std::numeric_limits<T>::infinity();
    else return score + static_cast<T>(m);
  }
  template <typename T, typename M>
  static void apply_row(T* __restrict s, const M* __restrict m, int64_t n) {
    for (int64_t c = 0; c < n; ++c) s[c] = combine<T, M>(s[c], m[c]);
  }
  template <typename T>
  void run_typed(const detail::ScoreTile& t) const {
    switch (mask_.scalar_type()) {
      case kBool: run<T, bool>(t); break;
      case kFloat32: run<T, float>(t); break;
      default: run<T, double>(t); break;  // the op converts other float masks to float64
    }
  }
  static void apply(const void* self, const detail::ScoreTile& t, detail::TilePass pass) {
    if (pass == detail::TilePass::ParamGrad) return;
    const auto* m = static_cast<const AttentionMaskMod*>(self);
    if (t.f64) m->run_typed<double>(t);
    else m->run_typed<float>(t);
  }

  Tensor mask_;
  const char* data_;
};

// Every block, each one partial so the attention mask is applied everywhere.
BlockMask all_blocks_partial(std::shared_ptr<const detail::MaskMod> mod, int64_t L, int64_t S, int64_t block) {
  detail::TileStates t{1, 1, (L + block - 1) / block, (S + block - 1) / block, {}};
  t.states.assign(static_cast<size_t>(t.q_blocks * t.kv_blocks), TileState::Partial);
  return BlockMask::from_tile_states(t, block, L, S, std::move(mod));
}

// Causal blocks from their corners: full below the diagonal, partial across it.
BlockMask causal_blocks(int64_t L, int64_t S, int64_t block) {
  detail::TileStates t{1, 1, (L + block - 1) / block, (S + block - 1) / block, {}};
  for (int64_t qb = 0; qb < t.q_blocks; ++qb)
    for (int64_t kb = 0; kb < t.kv_blocks; ++kb) {
      const int64_t q_first = qb * block, q_last = std::min(L, q_first + block) - 1;
      const int64_t kv_first = kb * block, kv_last = std::min(S, kv_first + block) - 1;
      t.states.push_back(q_first >= kv_last ? TileState::Full : q_last >= kv_first ? TileState::Partial : TileState::Empty);
    }
  auto mod = std::make_shared<detail::MaskModHolder<decltype(causal_mask())>>(causal_mask());
  return BlockMask::from_tile_states(t, block, L, S, std::move(mod));
}

// Dropout needs the probabilities themselves, so that case runs on ordinary ops.
Tensor composite_with_dropout(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double dropout_p,
                              bool is_causal, double scale) {
  const int64_t group = q.size(1) / k.size(1);
  auto expand_heads = [group](const Tensor& t) {
    if (group == 1) return t;
    const auto& s = t.sizes();
    return t.unsqueeze(2).expand({s[0], s[1], group, s[2], s[3]}).reshape({s[0], s[1] * group, s[2], s[3]});
  };
  const double inf = std::numeric_limits<double>::infinity();
  Tensor scores = q.matmul(expand_heads(k).transpose(-2, -1)) * scale;
  if (is_causal) scores = scores.masked_fill(tril(ones({q.size(2), k.size(2)})).eq(0), -inf);
  if (mask.defined()) scores = mask.scalar_type() == kBool ? scores.masked_fill(mask.logical_not(), -inf) : scores + mask;
  return dropout(softmax(scores, -1), dropout_p, true).matmul(expand_heads(v));
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa) {
  EMBER_CHECK(dropout_p >= 0 && dropout_p < 1, kOp, "dropout_p must be in [0, 1); got ", dropout_p);
  EMBER_CHECK(!(is_causal && attn_mask.defined()), kOp, "pass either attn_mask or is_causal, not both");
  EMBER_CHECK(query.defined() && query.dim() == 4 && key.defined() && key.dim() == 4, kOp,
              "expects 4-D query and key; got ", query.defined() ? query.sizes() : IntArrayRef(), " and ",
              key.defined() ? key.sizes() : IntArrayRef());
  const int64_t B = query.size(0), H = query.size(1), L = query.size(2), S = key.size(2);
  FlexAttentionOptions options;
  options.scale = scale;
  options.enable_gqa = enable_gqa;
  constexpr int64_t kBlock = 128;
  std::optional<BlockMask> blocks;
  if (is_causal) blocks = causal_blocks(L, S, kBlock);
  if (attn_mask.defined()) {
    const ScalarType mt = attn_mask.scalar_type();
    EMBER_CHECK(mt == kBool || is_floating_point(mt), kOp, "attn_mask must be bool or floating, not ", dtype_name(mt));
    EMBER_CHECK(attn_mask.dim() <= 4, kOp, "attn_mask must have at most 4 dims; got shape ", attn_mask.sizes());
    Tensor mask = mt == kBool || mt == kFloat32 ? attn_mask.detach() : attn_mask.detach().to(kFloat64);
    while (mask.dim() < 4) mask = mask.unsqueeze(0);
    for (int64_t d = 0; d < 4; ++d) {
      const int64_t want = std::vector<int64_t>{B, H, L, S}[static_cast<size_t>(d)];
      EMBER_CHECK(mask.size(d) == want || mask.size(d) == 1, kOp, "attn_mask of shape ", attn_mask.sizes(),
                  " does not broadcast to [", B, ", ", H, ", ", L, ", ", S, "]");
    }
    blocks = all_blocks_partial(std::make_shared<AttentionMaskMod>(mask, B, H, L, S), L, S, kBlock);
  }
  if (dropout_p > 0) {
    const double s = scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(3))));
    return composite_with_dropout(query, key, value, attn_mask, dropout_p, is_causal, s);
  }
  return detail::flex_attention(query, key, value, {}, blocks ? &*blocks : nullptr, options).output;
}

}  // namespace ember::nn::attention
