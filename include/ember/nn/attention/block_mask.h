// BlockMask: which (query block, key block) tiles an attention kernel visits, as in
// PyTorch's torch.nn.attention.flex_attention.BlockMask, and the mask_mod it came from.
#pragma once
#include <algorithm>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/detail/score_tile.h"
#include "ember/functions.h"
#include "ember/nn/attention/mod_math.h"
#include "ember/tensor.h"

// create_block_mask evaluates mask_mod on every element (it must be exact), and flex attention
// on every element of its partial tiles, in the caller's code: so these loops are vectorized
// even when the user builds at -O2, where GCC barely vectorizes, and with GCC on x86-64 built
// three times (AVX-512, AVX2 and the baseline, chosen as the program loads: the caller's
// baseline SSE2 left the mask at a fifth of a bfloat16 forward on an AVX-512 CPU).
// EMBER_VECTORIZE_DISPATCHED cannot go on a virtual function (GCC multiversions none).
#if defined(__GNUC__) && !defined(__clang__)
#define EMBER_VECTORIZE __attribute__((optimize("O3")))
#if defined(__x86_64__)
#define EMBER_VECTORIZE_DISPATCHED \
  __attribute__((optimize("O3"), target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define EMBER_VECTORIZE_DISPATCHED EMBER_VECTORIZE
#endif
#else
#define EMBER_VECTORIZE
#define EMBER_VECTORIZE_DISPATCHED
#endif

namespace ember::nn::attention {

// mask_mod(b, h, q_idx, kv_idx) -> bool, with int32_t indices; generic lambdas are best
// (inlined into the kernels); this type-erased form is for convenience.
using MaskModFunction = std::function<bool(int32_t, int32_t, int32_t, int32_t)>;

struct BlockSize {
  int64_t q = 128, kv = 128;
  BlockSize(int64_t both = 128) : q(both), kv(both) {}  // NOLINT: BLOCK_SIZE = 64
  BlockSize(int64_t q_block, int64_t kv_block) : q(q_block), kv(kv_block) {}
};

enum class TileState : uint8_t { Empty, Partial, Full };

namespace detail {

// The kernels' side of the tile contract, under the names the attention code uses.
using ember::detail::ScoreTile;
using ember::detail::TileFunction;
using ember::detail::TilePass;

// A user mod, mask_mod or score_mod, behind one indirect call per tile (Note [Mods over
// tiles]): the kernels call its tile_function(). Held by shared_ptr, so that the backward
// pass can still run it after the call that built it has returned.
class TileMod {
 public:
  virtual ~TileMod() = default;
  virtual TileFunction tile_function() const = 0;
};

// A mask_mod: its tile function sets masked-out scores to -inf (and their dscore to 0 in
// the Derivative pass); block masks also ask it about single elements and whole tiles.
class MaskMod : public TileMod {
 public:
  virtual bool at(int32_t b, int32_t h, int32_t q, int32_t kv) const = 0;
  // Looks at every element of the tile [q_begin, q_end) x [kv_begin, kv_end).
  virtual TileState classify(int32_t b, int32_t h, int32_t q_begin, int32_t q_end, int32_t kv_begin,
                             int32_t kv_end) const = 0;
};

// Note [Key spans]
// A mask_mod with key_span(b, h, q) -> [first, end) (the causal and sliding-window masks of
// mods.h) sees exactly the keys of one span per query: its partial tiles are filled row by
// row, -inf before and after the span, and create_block_mask counts a row's visible keys
// from the span, without calling the mask on every key. Its operator() must agree with the
// span (the tests check both built-ins). Sliding window W=256 at S=8192, bf16 on AMX: the
// per-key mask was 6% of the forward.
template <typename F>
concept HasKeySpan = requires(const F& f, int32_t i) {
  { f.key_span(i, i, i) } -> std::convertible_to<std::pair<int64_t, int64_t>>;
};

template <typename F>
class MaskModHolder final : public MaskMod {
 public:
  explicit MaskModHolder(F f) : f_(std::move(f)) {}

  bool at(int32_t b, int32_t h, int32_t q, int32_t kv) const override { return static_cast<bool>(f_(b, h, q, kv)); }

  TileState classify(int32_t b, int32_t h, int32_t q_begin, int32_t q_end, int32_t kv_begin,
                     int32_t kv_end) const override {
    return classify_rows(b, h, q_begin, q_end, kv_begin, kv_end);
  }

  TileFunction tile_function() const override { return {&apply, this}; }

 private:
  EMBER_VECTORIZE_DISPATCHED TileState classify_rows(int32_t b, int32_t h, int32_t q_begin, int32_t q_end,
                                                     int32_t kv_begin, int32_t kv_end) const {
    // Counting visible keys per row is a plain sum the compiler vectorizes (with the
    // captures in a local copy, not re-read through `this` after every store).
    const F f = f_;
    bool any = false, all = true;
    for (int32_t q = q_begin; q < q_end; ++q) {
      int32_t visible = 0;
      if constexpr (HasKeySpan<F>) {
        const auto [first, end] = span_in(f, b, h, q, kv_begin, kv_end);
        visible = static_cast<int32_t>(end - first);
      } else {
        for (int32_t kv = kv_begin; kv < kv_end; ++kv) visible += static_cast<bool>(f(b, h, q, kv)) ? 1 : 0;
      }
      any |= visible > 0;
      all &= visible == kv_end - kv_begin;
      if (any && !all) return TileState::Partial;
    }
    return all ? TileState::Full : any ? TileState::Partial : TileState::Empty;
  }

  // The key span of query q within [kv_begin, kv_end), as offsets from kv_begin.
  static std::pair<int64_t, int64_t> span_in(const F& f, int32_t b, int32_t h, int32_t q, int64_t kv_begin,
                                             int64_t kv_end) {
    const auto [first, end] = f.key_span(b, h, q);
    const int64_t lo = std::clamp<int64_t>(first, kv_begin, kv_end), hi = std::clamp<int64_t>(end, lo, kv_end);
    return {lo - kv_begin, hi - kv_begin};
  }

  template <typename T>
  EMBER_VECTORIZE_DISPATCHED void mask_tile(const ScoreTile& t) const {
    const F f = f_;
    if constexpr (HasKeySpan<F>) {
      for (int64_t r = 0; r < t.rows; ++r) {
        const auto [first, end] = span_in(f, t.b, t.head(r), t.query(r), t.kv_start, t.kv_start + t.cols);
        T* scores = static_cast<T*>(t.scores) + r * t.ld;
        std::fill(scores, scores + first, -std::numeric_limits<T>::infinity());
        std::fill(scores + end, scores + t.cols, -std::numeric_limits<T>::infinity());
        if (!t.dscore) continue;
        T* dscore = static_cast<T*>(t.dscore) + r * t.ld;
        std::fill(dscore, dscore + first, T(0));
        std::fill(dscore + end, dscore + t.cols, T(0));
      }
      return;
    }
    // Branch-free selects so the loop vectorizes.
    for (int64_t r = 0; r < t.rows; ++r) {
      const int32_t h = t.head(r), q = t.query(r);
      T* scores = static_cast<T*>(t.scores) + r * t.ld;
      T* dscore = t.dscore ? static_cast<T*>(t.dscore) + r * t.ld : nullptr;
      for (int32_t c = 0; c < static_cast<int32_t>(t.cols); ++c) {
        const bool visible = static_cast<bool>(f(t.b, h, q, t.kv_start + c));
        scores[c] = visible ? scores[c] : -std::numeric_limits<T>::infinity();
      }
      if (!dscore) continue;
      for (int32_t c = 0; c < static_cast<int32_t>(t.cols); ++c)
        dscore[c] = static_cast<bool>(f(t.b, h, q, t.kv_start + c)) ? dscore[c] : T(0);
    }
  }
  static void apply(const void* self, const ScoreTile& t, TilePass pass) {
    if (pass == TilePass::ParamGrad) return;  // grad is 0 where masked
    const auto* holder = static_cast<const MaskModHolder*>(self);
    if (t.f64) holder->template mask_tile<double>(t);
    else holder->template mask_tile<float>(t);
  }

  F f_;
};

// Builds the index tensors from per-tile states [B, H, QB, KVB] (row-major).
struct TileStates {
  int64_t batch, heads, q_blocks, kv_blocks;
  std::vector<TileState> states;
};
TileStates classify_tiles(const MaskMod& mask, int64_t B, int64_t H, int64_t q_len, int64_t kv_len, BlockSize size);

}  // namespace detail

class BlockMask {
 public:
  // [B, H, q_blocks] counts and [B, H, q_blocks, kv_blocks] indices (int32) of the partial
  // blocks (mask applied element-wise) and the full blocks (mask skipped) of each query
  // block; the q_* forms list query blocks per key block, for the backward pass.
  Tensor kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices;
  Tensor q_num_blocks, q_indices, full_q_num_blocks, full_q_indices;
  BlockSize BLOCK_SIZE;
  int64_t q_len = 0, kv_len = 0;  // seq_lengths
  std::shared_ptr<const detail::MaskMod> mask_mod;  // null: every element of a listed block is visible
  // Set by causal_block_mask: what the mask computes, so that an exported program can
  // rebuild it (a mask_mod is opaque code; ember::export_program refuses masks without one).
  struct CausalSpec {
    int64_t q_offset = 0, window = 0;
  };
  std::optional<CausalSpec> causal;

  BlockMask() = default;

  // From the kv-wise lists (PyTorch's BlockMask.from_kv_blocks); the full lists may be
  // undefined. seq_lengths default to the number of blocks times the block size.
  static BlockMask from_kv_blocks(const Tensor& kv_num_blocks, const Tensor& kv_indices,
                                  const Tensor& full_kv_num_blocks = {}, const Tensor& full_kv_indices = {},
                                  BlockSize block_size = {}, std::shared_ptr<const detail::MaskMod> mask_mod = {},
                                  std::optional<std::pair<int64_t, int64_t>> seq_lengths = std::nullopt);
  static BlockMask from_tile_states(const detail::TileStates& tiles, BlockSize block_size, int64_t q_len,
                                    int64_t kv_len, std::shared_ptr<const detail::MaskMod> mask_mod);

  // [B, H, Q_LEN, KV_LEN]
  std::vector<int64_t> shape() const;
  // Percent of blocks skipped.
  double sparsity() const;
  // Per (b, h): a grid of blocks, '#' full, '.' partial, ' ' empty (at most max_blocks per side).
  std::string to_string(int64_t max_blocks = 32) const;
  // Every block's state, [B, H, q_blocks, kv_blocks] row-major.
  detail::TileStates tile_states() const;
  // The state of one block (h and b as stored: 0 when broadcast).
  TileState state(int64_t b, int64_t h, int64_t q_block, int64_t kv_block) const;
  // block_mask[b], block_mask[b, h], block_mask[b, h, q_blocks begin:end] (keeps dims). The
  // mask_mod is kept as is: it sees indices relative to the call the result is used in.
  BlockMask index(int64_t b, std::optional<int64_t> h = std::nullopt,
                  std::optional<std::pair<int64_t, int64_t>> q_blocks = std::nullopt) const;
  // The same mask for new sequence lengths, cutting (or, with a mask_mod, re-evaluating)
  // the block lists (PyTorch's _adjust).
  BlockMask adjust(int64_t new_q_len, int64_t new_kv_len) const;
  // The block picture [B, H, q_blocks, kv_blocks] (int32): 1 where a block is visited, as
  // PyTorch's to_dense. create_mask gives the element mask.
  Tensor to_dense() const;
  int64_t num_q_blocks() const { return kv_num_blocks.size(2); }
  int64_t num_kv_blocks() const { return kv_indices.size(3); }
};

// mask_mod that keeps everything.
inline auto noop_mask() {
  return [](auto, auto, auto, auto) { return true; };
}

template <typename... M>
auto and_masks(M... masks) {
  return [=](auto b, auto h, auto q, auto kv) { return (static_cast<bool>(masks(b, h, q, kv)) && ...); };
}

template <typename... M>
auto or_masks(M... masks) {
  return [=](auto b, auto h, auto q, auto kv) { return (static_cast<bool>(masks(b, h, q, kv)) || ...); };
}

// Evaluates mask_mod on every tile of [B, H, Q_LEN, KV_LEN] without materialising the dense
// mask (O(blocks) memory): a tile is empty, partial or full by its elements. B or H of 1
// broadcast over the batch or heads of the attention call.
template <typename MaskMod>
BlockMask create_block_mask(MaskMod mask_mod, int64_t B, int64_t H, int64_t Q_LEN, int64_t KV_LEN,
                            BlockSize BLOCK_SIZE = {}) {
  auto holder = std::make_shared<detail::MaskModHolder<MaskMod>>(std::move(mask_mod));
  detail::TileStates tiles = detail::classify_tiles(*holder, B, H, Q_LEN, KV_LEN, BLOCK_SIZE);
  return BlockMask::from_tile_states(tiles, BLOCK_SIZE, Q_LEN, KV_LEN, std::move(holder));
}

// The causal mask of `q_len` queries at positions q_offset .. q_offset + q_len - 1 over
// keys 0 .. kv_len - 1 (B = H = 1, broadcast): query q sees key kv when kv <= q_offset + q
// and, with a window, q_offset + q - kv < window. Its spec travels with it (for export).
BlockMask causal_block_mask(int64_t q_len, int64_t kv_len, int64_t q_offset, int64_t window, BlockSize block_size);

// The dense bool mask [B, H, Q_LEN, KV_LEN] of mask_mod (for tests and small shapes).
template <typename MaskMod>
Tensor create_mask(MaskMod mask_mod, int64_t B, int64_t H, int64_t Q_LEN, int64_t KV_LEN) {
  Tensor out = empty({B, H, Q_LEN, KV_LEN}, kBool);
  bool* data = out.data_ptr<bool>();
  for (int32_t b = 0; b < B; ++b)
    for (int32_t h = 0; h < H; ++h)
      for (int32_t q = 0; q < Q_LEN; ++q)
        for (int32_t kv = 0; kv < KV_LEN; ++kv) *data++ = static_cast<bool>(mask_mod(b, h, q, kv));
  return out;
}

}  // namespace ember::nn::attention
