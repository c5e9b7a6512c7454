// flex_attention: attention with a user score_mod and a block-sparse mask, as
// torch.nn.attention.flex_attention, on a fused CPU kernel that visits only the blocks of
// the BlockMask.
//
//   using namespace ember::nn::attention;
//   BlockMask mask = create_block_mask(causal_mask(), 1, 1, L, S);
//   Tensor out = flex_attention(q, k, v, [](auto s, auto b, auto h, auto q, auto kv) {
//     return s + 0.1 * (kv - q); }, mask);
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "ember/nn/attention/block_mask.h"
#include "ember/nn/attention/mod_math.h"
#include "ember/tensor.h"

namespace ember::nn::attention {

// score_mod(score, b, h, q_idx, kv_idx): the type-erased form (Dual works for float
// scores too); generic lambdas are inlined and faster.
using ScoreModFunction = std::function<Dual(Dual, int32_t, int32_t, int32_t, int32_t)>;

struct FlexAttentionOptions {
  std::optional<double> scale;  // default 1 / sqrt(E)
  bool enable_gqa = false;      // allow Hq != Hkv (Hq % Hkv == 0)
  bool return_lse = false;
  // Tensors the score_mod reads through CapturedTensor whose gradients should flow.
  std::vector<CapturedTensor> captured;

  FlexAttentionOptions& set_scale(double s) { scale = s; return *this; }
  FlexAttentionOptions& set_enable_gqa(bool on) { enable_gqa = on; return *this; }
  FlexAttentionOptions& set_return_lse(bool on) { return_lse = on; return *this; }
  FlexAttentionOptions& set_captured(std::vector<CapturedTensor> tensors) { captured = std::move(tensors); return *this; }
};

struct FlexAttentionOutput {
  Tensor output;  // [B, Hq, L, Ev]
  Tensor lse;     // [B, Hq, L] float32 (float64 for float64 inputs) when return_lse; no gradient
  operator Tensor() const { return output; }  // NOLINT: Tensor out = flex_attention(...)
};

namespace detail {

// A score_mod as a TileMod.
template <typename F>
class ScoreModHolder final : public TileMod {
 public:
  explicit ScoreModHolder(F f) : f_(std::move(f)) {}
  TileFunction tile_function() const override { return {&apply, this}; }

 private:
  template <typename T>
  void run(const ScoreTile& t, TilePass pass) const {
    T* scores = static_cast<T*>(t.scores);
    for (int64_t r = 0; r < t.rows; ++r) {
      const int32_t h = t.head(r), q = t.query(r);
      T* row = scores + r * t.ld;
      if (pass == TilePass::Forward) {
        for (int64_t c = 0; c < t.cols; ++c)
          row[c] = static_cast<T>(value_of(f_(row[c], t.b, h, q, static_cast<int32_t>(t.kv_start + c))));
      } else if (pass == TilePass::Derivative) {
        T* drow = static_cast<T*>(t.dscore) + r * t.ld;
        for (int64_t c = 0; c < t.cols; ++c) {
          const Dual d = Dual(f_(Dual(row[c], 1.0), t.b, h, q, static_cast<int32_t>(t.kv_start + c)));
          row[c] = static_cast<T>(d.value);
          drow[c] = static_cast<T>(d.dscore);
        }
      } else {
        const T* grow = static_cast<const T*>(t.grad) + r * t.ld;
        for (int64_t c = 0; c < t.cols; ++c) {
          if (grow[c] == T(0)) continue;
          const Dual d = Dual(f_(Dual(row[c], 1.0), t.b, h, q, static_cast<int32_t>(t.kv_start + c)));
          if (d.overflow) *t.overflow = true;
          for (int i = 0; i < d.count; ++i)
            if (d.slot[i] >= 0) t.param_grads[d.slot[i]][d.index[i]] += static_cast<double>(grow[c]) * d.partial[i];
        }
      }
    }
  }
  static void apply(const void* self, const ScoreTile& t, TilePass pass) {
    const auto* holder = static_cast<const ScoreModHolder*>(self);
    if (t.f64) holder->template run<double>(t, pass);
    else holder->template run<float>(t, pass);
  }

  F f_;
};

FlexAttentionOutput flex_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const std::shared_ptr<const TileMod>& score_mod, const BlockMask* block_mask,
                                   const FlexAttentionOptions& options);

}  // namespace detail

// q [B, Hq, L, E], k [B or 1, Hkv, S, E], v [B or 1, Hkv, S, Ev] -> [B, Hq, L, Ev].
template <typename ScoreMod>
  requires std::invocable<const ScoreMod&, float, int32_t, int32_t, int32_t, int32_t>
FlexAttentionOutput flex_attention(const Tensor& query, const Tensor& key, const Tensor& value, ScoreMod score_mod,
                                   const std::optional<BlockMask>& block_mask = std::nullopt,
                                   const FlexAttentionOptions& options = {}) {
  auto holder = std::make_shared<const detail::ScoreModHolder<ScoreMod>>(std::move(score_mod));
  return detail::flex_attention(query, key, value, holder, block_mask ? &*block_mask : nullptr, options);
}

// Without a score_mod: plain attention over the blocks of block_mask (all when none).
FlexAttentionOutput flex_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const std::optional<BlockMask>& block_mask = std::nullopt,
                                   const FlexAttentionOptions& options = {});

}  // namespace ember::nn::attention
