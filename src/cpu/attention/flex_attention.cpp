#include "cpu/attention/flex_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "core/allocator.h"
#include "cpu/attention/flex_attention_tiles.h"
#include "cpu/parallel.h"
#include "ember/error.h"

namespace ember::cpu::attention {
namespace {

using ember::detail::ScoreTile;
using ember::detail::TilePass;

template <typename T> const TileKernels<T>& kernels();
template <> const TileKernels<float>& kernels<float>() { return *EMBER_KERNEL(flex_tile_kernels_f32)(); }
template <> const TileKernels<double>& kernels<double>() { return *EMBER_KERNEL(flex_tile_kernels_f64)(); }

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }

// Per-thread scratch buffers, grown on demand and kept between calls.
enum Buffer { kQ, kOut, kKeyT, kValueT, kScores, kGrad, kDmod, kRaw, kTransposed, kAccA, kAccB, kRowA, kRowB,
              kNumBuffers };
template <typename T>
T* scratch(Buffer which, int64_t size) {
  thread_local std::vector<T> buffers[kNumBuffers];
  auto& buffer = buffers[which];
  if (buffer.size() < static_cast<size_t>(size)) buffer.resize(static_cast<size_t>(size));
  return buffer.data();
}

const char* at(const Operand& o, int64_t b, int64_t h, int64_t row, size_t item) {
  return static_cast<const char*>(o.data) + (b * o.stride_b + h * o.stride_h + row * o.stride_row) * static_cast<int64_t>(item);
}

// Calls fn(block, partial) for the blocks visited from block `block` of (b, h): partial
// ones first, then full ones; every block as full without a block mask.
template <typename F>
void for_each_visited(const FlexProblem& p, const BlockLists& lists, int64_t all_blocks, int64_t b, int64_t h,
                      int64_t block, F fn) {
  if (!p.has_block_mask) {
    for (int64_t i = 0; i < all_blocks; ++i) fn(i, false);
    return;
  }
  const int64_t row = ((lists.batch == 1 ? 0 : b) * lists.heads + (lists.heads == 1 ? 0 : h)) * lists.blocks + block;
  for (int32_t j = 0; j < lists.num[row]; ++j) fn(lists.indices[row * lists.max_entries + j], true);
  if (lists.full_num)
    for (int32_t j = 0; j < lists.full_num[row]; ++j) fn(lists.full_indices[row * lists.max_entries + j], false);
}

template <typename T>
ScoreTile make_tile(int64_t b, int64_t h, int64_t q0, int64_t kv0, int64_t rows, int64_t cols, T* scores, int64_t ld) {
  ScoreTile t;
  t.b = static_cast<int32_t>(b);
  t.h = static_cast<int32_t>(h);
  t.q_start = static_cast<int32_t>(q0);
  t.kv_start = static_cast<int32_t>(kv0);
  t.rows = rows;
  t.cols = cols;
  t.rows_per_head = std::numeric_limits<int64_t>::max();
  t.f64 = std::is_same_v<T, double>;
  t.scores = scores;
  t.ld = ld;
  return t;
}

void apply_mods(const FlexProblem& p, const ScoreTile& tile, bool partial, TilePass pass) {
  if (p.score_mod) p.score_mod(tile, pass);
  if (partial && p.mask_mod) p.mask_mod(tile, pass);
}

// The geometry every kernel below shares.
template <typename T>
struct Layout {
  const TileKernels<T>& k = kernels<T>();
  int64_t bq, bkv, q_blocks, kv_blocks, group, ld_s, ld_e, ld_ev;
  size_t item;
  explicit Layout(const FlexProblem& p)
      : bq(p.q_block), bkv(p.kv_block), q_blocks(ceil_div(p.q_len, p.q_block)), kv_blocks(ceil_div(p.kv_len, p.kv_block)),
        group(p.heads_q / p.heads_kv), ld_s(round_up(p.kv_block, k.panel_width)),
        ld_e(round_up(p.head_dim, k.panel_width)), ld_ev(round_up(p.value_dim, k.panel_width)),
        item(element_size(p.dtype)) {}
  int64_t rows_of(int64_t qb, const FlexProblem& p) const { return std::min(bq, p.q_len - qb * bq); }
  int64_t cols_of(int64_t kvb, const FlexProblem& p) const { return std::min(bkv, p.kv_len - kvb * bkv); }
};

// ---- forward ------------------------------------------------------------------------------

// Every block of an operand [batch, heads, len, dim] in one packed form, packed once
// rather than once per visit: Rows (an A operand), Panels (B[row][dim]) or
// TransposedPanels (B[dim][row]); scaled by `scale`.
enum class Form { Rows, Panels, TransposedPanels };

template <typename T>
class PackedBlocks {
 public:
  PackedBlocks(const FlexProblem& p, const Layout<T>& g, const Operand& o, int64_t batch, int64_t heads, int64_t len,
               int64_t dim, int64_t block_len, Form form, T scale)
      : batch_(batch), heads_(heads), blocks_((len + block_len - 1) / block_len),
        block_size_(form == Form::Rows ? block_len * dim
                    : form == Form::Panels ? round_up(dim, g.k.panel_width) * block_len
                                           : round_up(block_len, g.k.panel_width) * dim),
        data_(allocate(batch * heads * blocks_ * block_size_)) {
    parallel_for(0, batch * heads * blocks_, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t blk = i % blocks_, h = i / blocks_ % heads, b = i / blocks_ / heads;
        const int64_t first = blk * block_len, rows = std::min(block_len, len - first);
        const char* src = at(o, b, h, first, g.item);
        T* dst = data_.get() + i * block_size_;
        if (form == Form::Rows) g.k.pack_rows(p.dtype, src, o.stride_row, o.stride_col, rows, dim, scale, dst, dim);
        else if (form == Form::Panels) g.k.pack_panels(p.dtype, src, o.stride_row, o.stride_col, rows, dim, scale, dst);
        else g.k.pack_panels(p.dtype, src, o.stride_col, o.stride_row, dim, rows, scale, dst);
      }
    });
  }
  // b of a broadcast operand (batch 1) is 0.
  const T* block(int64_t b, int64_t h, int64_t blk) const {
    return data_.get() + (((batch_ == 1 ? 0 : b) * heads_ + h) * blocks_ + blk) * block_size_;
  }

 private:
  struct Free {
    size_t bytes;
    void operator()(T* data) const { core::free_bytes(data, bytes); }
  };
  using Buffer = std::unique_ptr<T[], Free>;
  // From ember's allocator: its large-block cache spares the page faults of fresh memory.
  static Buffer allocate(int64_t count) {
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(T);
    return Buffer(static_cast<T*>(core::allocate_bytes(bytes)), Free{bytes});
  }

  int64_t batch_, heads_, blocks_, block_size_;
  Buffer data_;
};

// k and v broadcast over the batch when their batch stride is 0.
int64_t kv_batch_of(const FlexProblem& p) { return p.k.stride_b == 0 && p.batch > 1 ? 1 : p.batch; }

template <typename T>
PackedBlocks<T> pack_keys(const FlexProblem& p, const Layout<T>& g, const Operand& o, int64_t dim, Form form, T scale) {
  return PackedBlocks<T>(p, g, o, kv_batch_of(p), p.heads_kv, p.kv_len, dim, g.bkv, form, scale);
}

template <typename T>
PackedBlocks<T> pack_queries(const FlexProblem& p, const Layout<T>& g, const Operand& o, int64_t dim, Form form, T scale) {
  return PackedBlocks<T>(p, g, o, p.batch, p.heads_q, p.q_len, dim, g.bq, form, scale);
}

template <typename T>
void forward_impl(const FlexProblem& p, void* out, void* lse_out) {
  const Layout<T> g(p);
  const auto& K = g.k;
  const int64_t E = p.head_dim, Ev = p.value_dim;
  T* lse = static_cast<T*>(lse_out);
  const PackedBlocks<T> keys = pack_keys<T>(p, g, p.k, E, Form::TransposedPanels, T(1));
  const PackedBlocks<T> values = pack_keys<T>(p, g, p.v, Ev, Form::Panels, T(1));
  parallel_for(0, p.batch * p.heads_q * g.q_blocks, 1, [&](int64_t lo, int64_t hi) {
    T* q = scratch<T>(kQ, g.bq * E);
    T* scores = scratch<T>(kScores, g.bq * g.ld_s);
    T* acc = scratch<T>(kAccA, g.bq * g.ld_ev);
    T* row_max = scratch<T>(kRowA, g.bq);
    T* row_sum = scratch<T>(kRowB, g.bq);
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t qb = task % g.q_blocks, h = task / g.q_blocks % p.heads_q, b = task / g.q_blocks / p.heads_q;
      const int64_t hk = h / g.group, q0 = qb * g.bq, rows = g.rows_of(qb, p);
      K.pack_rows(p.dtype, at(p.q, b, h, q0, g.item), p.q.stride_row, p.q.stride_col, rows, E, static_cast<T>(p.scale), q, E);
      std::fill(row_max, row_max + rows, -std::numeric_limits<T>::infinity());
      std::fill(row_sum, row_sum + rows, T(0));
      std::fill(acc, acc + rows * g.ld_ev, T(0));
      for_each_visited(p, p.kv_lists, g.kv_blocks, b, h, qb, [&](int64_t kvb, bool partial) {
        const int64_t kv0 = kvb * g.bkv, cols = g.cols_of(kvb, p);
        if (cols <= 0) return;
        K.gemm(q, E, keys.block(b, hk, kvb), scores, g.ld_s, rows, cols, E, false);
        apply_mods(p, make_tile(b, h, q0, kv0, rows, cols, scores, g.ld_s), partial, TilePass::Forward);
        K.softmax_step(scores, g.ld_s, rows, cols, row_max, row_sum, acc, g.ld_ev, Ev);
        K.gemm(scores, g.ld_s, values.block(b, hk, kvb), acc, g.ld_ev, rows, Ev, cols, true);
      });
      // A row that saw nothing (fully masked) gives output 0 and lse -inf.
      T* row_lse = lse + (b * p.heads_q + h) * p.q_len + q0;
      for (int64_t r = 0; r < rows; ++r) {
        const bool seen = row_sum[r] > T(0);
        row_lse[r] = seen ? row_max[r] + std::log(row_sum[r]) : -std::numeric_limits<T>::infinity();
        row_sum[r] = seen ? T(1) / row_sum[r] : T(0);
      }
      char* out_rows = static_cast<char*>(out) + ((b * p.heads_q + h) * p.q_len + q0) * Ev * static_cast<int64_t>(g.item);
      K.store_rows(acc, g.ld_ev, rows, Ev, row_sum, p.dtype, out_rows, Ev, 1);
    }
  });
}

// ---- decode ------------------------------------------------------------------------------

// Note [Decode path]
// A decoding step has a handful of queries (L <= kMaxDecodeLength) and a long cache. The
// query heads of a GQA group share their keys, so they go into one tile (rows: head-major,
// then query), and the visited key blocks of each (batch, kv head) are split into a fixed
// number of ranges (from the shapes only, never the thread count) processed in parallel.
// The partial results merge by their row max and sum in range order: deterministic.
constexpr int64_t kMaxDecodeLength = 16;

bool use_decode_path(const FlexProblem& p) {
  return p.q_len <= kMaxDecodeLength && p.q_len <= p.q_block && (!p.has_block_mask || p.kv_lists.heads == 1);
}

template <typename T>
void decode_impl(const FlexProblem& p, void* out, void* lse_out) {
  const Layout<T> g(p);
  const auto& K = g.k;
  const int64_t E = p.head_dim, Ev = p.value_dim, rows = g.group * p.q_len, heads = p.batch * p.heads_kv;
  const int64_t splits = std::clamp<int64_t>(64 / std::max<int64_t>(heads, 1), 1, std::max<int64_t>(g.kv_blocks, 1));
  std::vector<T> part_acc(static_cast<size_t>(heads * splits * rows * g.ld_ev));
  std::vector<T> part_max(static_cast<size_t>(heads * splits * rows)), part_sum(part_max.size());
  parallel_for(0, heads * splits, 1, [&](int64_t lo, int64_t hi) {
    T* q = scratch<T>(kQ, rows * E);
    T* key_t = scratch<T>(kKeyT, g.ld_s * E);
    T* value = scratch<T>(kValueT, g.bkv * g.ld_ev);
    T* scores = scratch<T>(kScores, rows * g.ld_s);
    std::vector<std::pair<int64_t, bool>> visits;
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t split = task % splits, bh = task / splits, b = bh / p.heads_kv, hk = bh % p.heads_kv;
      const int64_t h0 = hk * g.group;
      for (int64_t j = 0; j < g.group; ++j)
        K.pack_rows(p.dtype, at(p.q, b, h0 + j, 0, g.item), p.q.stride_row, p.q.stride_col, p.q_len, E,
                    static_cast<T>(p.scale), q + j * p.q_len * E, E);
      T* acc = part_acc.data() + task * rows * g.ld_ev;
      T* row_max = part_max.data() + task * rows;
      T* row_sum = part_sum.data() + task * rows;
      std::fill(row_max, row_max + rows, -std::numeric_limits<T>::infinity());
      std::fill(row_sum, row_sum + rows, T(0));
      std::fill(acc, acc + rows * g.ld_ev, T(0));
      visits.clear();
      for_each_visited(p, p.kv_lists, g.kv_blocks, b, h0, 0, [&](int64_t kvb, bool partial) { visits.emplace_back(kvb, partial); });
      const auto n = static_cast<int64_t>(visits.size());
      for (int64_t i = split * n / splits; i < (split + 1) * n / splits; ++i) {
        const auto [kvb, partial] = visits[static_cast<size_t>(i)];
        const int64_t kv0 = kvb * g.bkv, cols = g.cols_of(kvb, p);
        if (cols <= 0) continue;
        K.pack_panels(p.dtype, at(p.k, b, hk, kv0, g.item), p.k.stride_col, p.k.stride_row, E, cols, T(1), key_t);
        K.gemm(q, E, key_t, scores, g.ld_s, rows, cols, E, false);
        ScoreTile tile = make_tile(b, h0, 0, kv0, rows, cols, scores, g.ld_s);
        tile.rows_per_head = p.q_len;
        apply_mods(p, tile, partial, TilePass::Forward);
        K.pack_panels(p.dtype, at(p.v, b, hk, kv0, g.item), p.v.stride_row, p.v.stride_col, cols, Ev, T(1), value);
        K.softmax_step(scores, g.ld_s, rows, cols, row_max, row_sum, acc, g.ld_ev, Ev);
        K.gemm(scores, g.ld_s, value, acc, g.ld_ev, rows, Ev, cols, true);
      }
    }
  });
  // Merge the ranges of each (batch, kv head); its rows are consecutive rows of out and lse.
  T* lse = static_cast<T*>(lse_out);
  std::vector<T> merged(static_cast<size_t>(rows * g.ld_ev)), inverse(static_cast<size_t>(rows));
  for (int64_t bh = 0; bh < heads; ++bh) {
    const int64_t row0 = ((bh / p.heads_kv) * p.heads_q + (bh % p.heads_kv) * g.group) * p.q_len;
    for (int64_t r = 0; r < rows; ++r) {
      T max = -std::numeric_limits<T>::infinity(), sum = 0;
      for (int64_t s = 0; s < splits; ++s) max = std::max(max, part_max[static_cast<size_t>((bh * splits + s) * rows + r)]);
      T* m = merged.data() + r * g.ld_ev;
      std::fill(m, m + Ev, T(0));
      for (int64_t s = 0; s < splits && max != -std::numeric_limits<T>::infinity(); ++s) {
        const int64_t at_row = (bh * splits + s) * rows + r;
        const T w = std::exp(part_max[static_cast<size_t>(at_row)] - max);
        sum += w * part_sum[static_cast<size_t>(at_row)];
        for (int64_t j = 0; j < Ev; ++j) m[j] += w * part_acc[static_cast<size_t>(at_row * g.ld_ev + j)];
      }
      lse[row0 + r] = sum > T(0) ? max + std::log(sum) : -std::numeric_limits<T>::infinity();
      inverse[static_cast<size_t>(r)] = sum > T(0) ? T(1) / sum : T(0);
    }
    K.store_rows(merged.data(), g.ld_ev, rows, Ev, inverse.data(), p.dtype,
                 static_cast<char*>(out) + row0 * Ev * static_cast<int64_t>(g.item), Ev, 1);
  }
}

// ---- backward -----------------------------------------------------------------------------

// delta[row] = sum_j grad_out[row, j] * out[row, j] over all B * Hq * L rows.
template <typename T>
std::vector<T> output_dot(const FlexProblem& p, const void* out, const void* grad_out) {
  const Layout<T> g(p);
  const int64_t rows = p.batch * p.heads_q * p.q_len, Ev = p.value_dim;
  std::vector<T> delta(static_cast<size_t>(rows));
  parallel_for(0, rows, 256, [&](int64_t lo, int64_t hi) {
    T* o = scratch<T>(kOut, (hi - lo) * Ev);
    T* d = scratch<T>(kGrad, (hi - lo) * Ev);
    const int64_t byte = static_cast<int64_t>(g.item) * Ev;
    g.k.pack_rows(p.dtype, static_cast<const char*>(out) + lo * byte, Ev, 1, hi - lo, Ev, T(1), o, Ev);
    g.k.pack_rows(p.dtype, static_cast<const char*>(grad_out) + lo * byte, Ev, 1, hi - lo, Ev, T(1), d, Ev);
    for (int64_t r = 0; r < hi - lo; ++r) {
      T sum = 0;
      for (int64_t j = 0; j < Ev; ++j) sum += o[r * Ev + j] * d[r * Ev + j];
      delta[static_cast<size_t>(lo + r)] = sum;
    }
  });
  return delta;
}

// What both backward passes recompute for one (query block, key block) tile: the
// probabilities P in `scores` and dL/d(score) in `grad` (rows x cols, ld_s).
template <typename T>
struct TileGrad {
  const FlexProblem& p;
  const Layout<T>& g;
  const T* lse;
  const T* delta;
  T* scores;
  T* grad;
  T* dmod;  // d mod / d score, when there is a score_mod
  T* raw;   // the unmodified scores, when captured tensors need gradients
  bool* overflow;

  // q: scaled query rows (A), key_t / value_t: key and value panels (B) of the block,
  // grad_out: rows of dO (A). param_grads: non-null when captured tensors need gradients.
  void run(int64_t b, int64_t h, int64_t q0, int64_t kv0, int64_t rows, int64_t cols, bool partial, const T* q,
           const T* grad_out, const T* key_t, const T* value_t, double* const* param_grads) {
    const auto& K = g.k;
    const int64_t E = p.head_dim, Ev = p.value_dim, row0 = (b * p.heads_q + h) * p.q_len + q0;
    K.gemm(q, E, key_t, scores, g.ld_s, rows, cols, E, false);
    if (param_grads) std::copy(scores, scores + rows * g.ld_s, raw);
    ScoreTile tile = make_tile(b, h, q0, kv0, rows, cols, scores, g.ld_s);
    tile.dscore = p.score_mod ? dmod : nullptr;
    apply_mods(p, tile, partial, TilePass::Derivative);
    K.probabilities(scores, g.ld_s, rows, cols, lse + row0);
    K.gemm(grad_out, Ev, value_t, grad, g.ld_s, rows, cols, Ev, false);
    if (!param_grads) {
      K.score_grad(scores, grad, p.score_mod ? dmod : nullptr, g.ld_s, rows, cols, delta + row0);
      return;
    }
    K.score_grad(scores, grad, nullptr, g.ld_s, rows, cols, delta + row0);
    ScoreTile params = make_tile(b, h, q0, kv0, rows, cols, raw, g.ld_s);
    params.grad = grad;
    params.param_grads = param_grads;
    params.overflow = overflow;
    p.score_mod(params, TilePass::ParamGrad);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        T& v = grad[r * g.ld_s + c];
        v = v == T(0) ? T(0) : v * dmod[r * g.ld_s + c];
      }
  }
};

// The operands of both backward passes, packed once.
template <typename T>
struct BackwardPacks {
  PackedBlocks<T> key_t, value_t, key_panels;      // K^T and V^T (B of q·k, dO·v), scale·K (B of dS·K)
  PackedBlocks<T> q_rows, q_panels, dout_rows, dout_panels;  // scale·Q, dO as A and as B operands

  BackwardPacks(const FlexProblem& p, const Layout<T>& g, const Operand& dO)
      : key_t(pack_keys<T>(p, g, p.k, p.head_dim, Form::TransposedPanels, T(1))),
        value_t(pack_keys<T>(p, g, p.v, p.value_dim, Form::TransposedPanels, T(1))),
        key_panels(pack_keys<T>(p, g, p.k, p.head_dim, Form::Panels, static_cast<T>(p.scale))),
        q_rows(pack_queries<T>(p, g, p.q, p.head_dim, Form::Rows, static_cast<T>(p.scale))),
        q_panels(pack_queries<T>(p, g, p.q, p.head_dim, Form::Panels, static_cast<T>(p.scale))),
        dout_rows(pack_queries<T>(p, g, dO, p.value_dim, Form::Rows, T(1))),
        dout_panels(pack_queries<T>(p, g, dO, p.value_dim, Form::Panels, T(1))) {}
};

// dK and dV: one task per key block owns its rows, summing over the query heads of its GQA
// group, the batch when k and v broadcast, and the query blocks that visit it.
template <typename T>
void key_value_grads(const FlexProblem& p, const BackwardPacks<T>& packs, const T* lse, const T* delta, void* dk,
                     void* dv, int64_t kv_batch) {
  const Layout<T> g(p);
  const auto& K = g.k;
  const int64_t E = p.head_dim, Ev = p.value_dim;
  parallel_for(0, kv_batch * p.heads_kv * g.kv_blocks, 1, [&](int64_t lo, int64_t hi) {
    T* transposed = scratch<T>(kTransposed, g.bkv * g.bq);
    T* dk_acc = scratch<T>(kAccA, g.bkv * g.ld_e);
    T* dv_acc = scratch<T>(kAccB, g.bkv * g.ld_ev);
    TileGrad<T> tg{p, g, lse, delta, scratch<T>(kScores, g.bq * g.ld_s), scratch<T>(kGrad, g.bq * g.ld_s),
                   scratch<T>(kDmod, g.bq * g.ld_s), nullptr, nullptr};
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t kvb = task % g.kv_blocks, hk = task / g.kv_blocks % p.heads_kv, bk = task / g.kv_blocks / p.heads_kv;
      const int64_t kv0 = kvb * g.bkv, cols = g.cols_of(kvb, p);
      const T* key_t = packs.key_t.block(bk, hk, kvb);
      const T* value_t = packs.value_t.block(bk, hk, kvb);
      std::fill(dk_acc, dk_acc + cols * g.ld_e, T(0));
      std::fill(dv_acc, dv_acc + cols * g.ld_ev, T(0));
      const int64_t b_begin = kv_batch == 1 ? 0 : bk, b_end = kv_batch == 1 ? p.batch : bk + 1;
      for (int64_t b = b_begin; b < b_end; ++b)
        for (int64_t h = hk * g.group; h < (hk + 1) * g.group; ++h)
          for_each_visited(p, p.q_lists, g.q_blocks, b, h, kvb, [&](int64_t qb, bool partial) {
            const int64_t q0 = qb * g.bq, rows = g.rows_of(qb, p);
            if (rows <= 0) return;
            tg.run(b, h, q0, kv0, rows, cols, partial, packs.q_rows.block(b, h, qb), packs.dout_rows.block(b, h, qb),
                   key_t, value_t, nullptr);
            K.transpose(tg.scores, g.ld_s, rows, cols, transposed, g.bq);
            K.gemm(transposed, g.bq, packs.dout_panels.block(b, h, qb), dv_acc, g.ld_ev, cols, Ev, rows, true);
            K.transpose(tg.grad, g.ld_s, rows, cols, transposed, g.bq);
            K.gemm(transposed, g.bq, packs.q_panels.block(b, h, qb), dk_acc, g.ld_e, cols, E, rows, true);
          });
      const int64_t row0 = (bk * p.heads_kv + hk) * p.kv_len + kv0;
      K.store_rows(dk_acc, g.ld_e, cols, E, nullptr, p.dtype, static_cast<char*>(dk) + row0 * E * static_cast<int64_t>(g.item), E, 1);
      K.store_rows(dv_acc, g.ld_ev, cols, Ev, nullptr, p.dtype, static_cast<char*>(dv) + row0 * Ev * static_cast<int64_t>(g.item), Ev, 1);
    }
  });
}

// dQ (and captured-tensor gradients): one task per query block. Captured-tensor gradients
// go to a fixed number of chunk buffers summed in chunk order, so they are deterministic.
template <typename T>
void query_grads(const FlexProblem& p, const BackwardPacks<T>& packs, const T* lse, const T* delta, void* dq,
                 int num_params, const int64_t* param_sizes, double* const* param_grads) {
  const Layout<T> g(p);
  const auto& K = g.k;
  const int64_t E = p.head_dim, tasks = p.batch * p.heads_q * g.q_blocks;
  constexpr int64_t kParamChunks = 64;
  const int64_t grain = num_params > 0 ? std::max<int64_t>(1, ceil_div(tasks, kParamChunks)) : 1;
  const int64_t chunks = num_chunks(0, tasks, grain);
  int64_t param_total = 0;
  for (int i = 0; i < num_params; ++i) param_total += param_sizes[i];
  std::vector<double> chunk_grads(static_cast<size_t>(num_params > 0 ? chunks * param_total : 0));
  bool overflow = false;
  parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
    std::vector<double*> chunk_params(static_cast<size_t>(num_params));
    double* base = num_params > 0 ? chunk_grads.data() + (lo / grain) * param_total : nullptr;
    for (int i = 0; i < num_params; ++i) {
      chunk_params[static_cast<size_t>(i)] = base;
      base += param_sizes[i];
    }
    bool chunk_overflow = false;
    T* dq_acc = scratch<T>(kAccA, g.bq * g.ld_e);
    TileGrad<T> tg{p, g, lse, delta, scratch<T>(kScores, g.bq * g.ld_s), scratch<T>(kGrad, g.bq * g.ld_s),
                   scratch<T>(kDmod, g.bq * g.ld_s), scratch<T>(kRaw, g.bq * g.ld_s), &chunk_overflow};
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t qb = task % g.q_blocks, h = task / g.q_blocks % p.heads_q, b = task / g.q_blocks / p.heads_q;
      const int64_t hk = h / g.group, q0 = qb * g.bq, rows = g.rows_of(qb, p);
      std::fill(dq_acc, dq_acc + rows * g.ld_e, T(0));
      for_each_visited(p, p.kv_lists, g.kv_blocks, b, h, qb, [&](int64_t kvb, bool partial) {
        const int64_t kv0 = kvb * g.bkv, cols = g.cols_of(kvb, p);
        if (cols <= 0) return;
        tg.run(b, h, q0, kv0, rows, cols, partial, packs.q_rows.block(b, h, qb), packs.dout_rows.block(b, h, qb),
               packs.key_t.block(b, hk, kvb), packs.value_t.block(b, hk, kvb),
               num_params > 0 ? chunk_params.data() : nullptr);
        K.gemm(tg.grad, g.ld_s, packs.key_panels.block(b, hk, kvb), dq_acc, g.ld_e, rows, E, cols, true);
      });
      char* dq_rows = static_cast<char*>(dq) + ((b * p.heads_q + h) * p.q_len + q0) * E * static_cast<int64_t>(g.item);
      K.store_rows(dq_acc, g.ld_e, rows, E, nullptr, p.dtype, dq_rows, E, 1);
    }
    if (chunk_overflow) overflow = true;
  });
  EMBER_CHECK(!overflow, "flex_attention", "a score_mod read more than ", ember::detail::kMaxScoreParams,
              " captured tensor elements for one score; their gradients are not supported");
  for (int64_t c = 0; c < (num_params > 0 ? chunks : 0); ++c) {
    const double* chunk = chunk_grads.data() + c * param_total;
    for (int i = 0; i < num_params; ++i)
      for (int64_t j = 0; j < param_sizes[i]; ++j) param_grads[i][j] += *chunk++;
  }
}

template <typename T>
void backward_impl(const FlexProblem& p, const void* out, const void* lse, const void* grad_out, void* dq, void* dk,
                   void* dv, int num_params, const int64_t* param_sizes, double* const* param_grads) {
  const std::vector<T> delta = output_dot<T>(p, out, grad_out);
  const Layout<T> g(p);
  const int64_t Ev = p.value_dim;
  const BackwardPacks<T> packs(p, g, Operand{grad_out, p.heads_q * p.q_len * Ev, p.q_len * Ev, Ev, 1});
  key_value_grads<T>(p, packs, static_cast<const T*>(lse), delta.data(), dk, dv, kv_batch_of(p));
  query_grads<T>(p, packs, static_cast<const T*>(lse), delta.data(), dq, num_params, param_sizes, param_grads);
}

}  // namespace

void flex_forward(const FlexProblem& problem, void* out, void* lse) {
  const bool decode = use_decode_path(problem);
  if (problem.dtype == kFloat64) decode ? decode_impl<double>(problem, out, lse) : forward_impl<double>(problem, out, lse);
  else decode ? decode_impl<float>(problem, out, lse) : forward_impl<float>(problem, out, lse);
}

void flex_backward(const FlexProblem& problem, const void* out, const void* lse, const void* grad_out, void* dq,
                   void* dk, void* dv, int num_params, const int64_t* param_sizes, double* const* param_grads) {
  if (problem.dtype == kFloat64)
    backward_impl<double>(problem, out, lse, grad_out, dq, dk, dv, num_params, param_sizes, param_grads);
  else backward_impl<float>(problem, out, lse, grad_out, dq, dk, dv, num_params, param_sizes, param_grads);
}

}  // namespace ember::cpu::attention
