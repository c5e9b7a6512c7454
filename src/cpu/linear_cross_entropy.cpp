#include "cpu/linear_cross_entropy.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/gemm.h"
#include "cpu/parallel.h"
#include "cpu/softmax.h"

namespace ember::cpu {
namespace {

bool is_low_precision(ScalarType dtype) { return dtype == kBFloat16 || dtype == kFloat16; }

// Rows per parallel chunk so that each chunk touches about 32K elements.
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(cols, 1)); }

// dst [rows, cols] (row stride cols) = float(src rows), src a float16/bfloat16 matrix.
void widen_rows(ScalarType dtype, const void* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst) {
  parallel_for(0, rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    const uint16_t* from = static_cast<const uint16_t*>(src) + r0 * ld_src;
    if (dtype == kBFloat16) {
      EMBER_KERNEL(gemm_widen_bf16)(from, ld_src, r1 - r0, cols, dst + r0 * cols, cols);
    } else {
      EMBER_KERNEL(gemm_widen_f16)(from, ld_src, r1 - r0, cols, dst + r0 * cols, cols);
    }
  });
}

// dst [rows, cols] (contiguous float16/bfloat16) = src rounded to nearest even.
void narrow_rows(ScalarType dtype, const float* src, int64_t rows, int64_t cols, void* dst) {
  parallel_for(0, rows, row_grain(cols), [&](int64_t r0, int64_t r1) {
    uint16_t* to = static_cast<uint16_t*>(dst) + r0 * cols;
    if (dtype == kBFloat16) {
      EMBER_KERNEL(gemm_narrow_bf16)(src + r0 * cols, cols, r1 - r0, cols, 0.0f, to, cols);
    } else {
      EMBER_KERNEL(gemm_narrow_f16)(src + r0 * cols, cols, r1 - r0, cols, 0.0f, to, cols);
    }
  });
}

// Sums in float64 with eight interleaved partial sums (fixed order, latency hidden).
template <typename T>
double sum_in_double(const T* values, int64_t n) {
  double partial[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) partial[k] += static_cast<double>(values[i + k]);
  double total = 0;
  for (double p : partial) total += p;
  for (; i < n; ++i) total += static_cast<double>(values[i]);
  return total;
}

// The largest value. NaNs are skipped here; they still reach the sum of exps (NaN loss).
template <typename T>
T row_max(const T* values, int64_t n) {
  T partial[8];
  std::fill(partial, partial + 8, -std::numeric_limits<T>::infinity());
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) partial[k] = values[i + k] > partial[k] ? values[i + k] : partial[k];
  T best = -std::numeric_limits<T>::infinity();
  for (T p : partial) best = p > best ? p : best;
  for (; i < n; ++i) best = values[i] > best ? values[i] : best;
  return best;
}

// out[c] = exp(z[c] - shift).
void exp_shifted(const float* z, float shift, float* out, int64_t n) {
  for (int64_t c = 0; c < n; ++c) out[c] = z[c] - shift;
  EMBER_KERNEL(exp_f32)(out, out, n);
}

void exp_shifted(const double* z, double shift, double* out, int64_t n) {
  for (int64_t c = 0; c < n; ++c) out[c] = std::exp(z[c] - shift);
}

template <typename Acc>
struct RowPass {
  const LceProblem& p;
  const LceGradScale& scale;
  const Acc* bias;
  const Acc* class_weight;
  double class_weight_sum;  // sum of the class weights (classes when unweighted)
  bool want_grad;

  // Turns logits row z of `token` into d loss / d logits (when want_grad); e: scratch [classes].
  void run(int64_t token, Acc* z, Acc* e, double& ce, double& lse) const {
    const int64_t classes = p.classes;
    const int64_t t = p.target[token];
    if (t == p.ignore_index) {
      ce = lse = 0;
      if (want_grad) std::fill(z, z + classes, Acc(0));
      return;
    }
    if (bias)
      for (int64_t c = 0; c < classes; ++c) z[c] += bias[c];
    const Acc cap = static_cast<Acc>(p.softcap);
    if (p.softcap > 0)
      for (int64_t c = 0; c < classes; ++c) z[c] = cap * std::tanh(z[c] / cap);

    const double eps = p.label_smoothing;
    const double smooth = eps / static_cast<double>(classes);
    const double target_weight = class_weight ? static_cast<double>(class_weight[t]) : 1.0;
    double weighted_logits = 0;  // sum_c w_c z_c, for smoothing
    if (eps > 0) {
      if (class_weight) {
        for (int64_t c = 0; c < classes; ++c) e[c] = class_weight[c] * z[c];
        weighted_logits = sum_in_double(e, classes);
      } else {
        weighted_logits = sum_in_double(z, classes);
      }
    }
    const Acc shift = row_max(z, classes);
    exp_shifted(z, shift, e, classes);
    const double sum_exp = sum_in_double(e, classes);
    lse = static_cast<double>(shift) + std::log(sum_exp);
    ce = (1 - eps) * target_weight * (lse - static_cast<double>(z[t])) +
         smooth * (class_weight_sum * lse - weighted_logits);
    if (!want_grad) return;

    const double ce_scale = scale.per_token ? scale.per_token[token] : scale.ce;
    const double z_scale = scale.per_token ? scale.per_token[token] : scale.z;
    // d/dz_c = p_c * total - smooth * ce_scale * w_c - [c == t] (1 - eps) w_t ce_scale.
    const double total = ce_scale * ((1 - eps) * target_weight + smooth * class_weight_sum) +
                         z_scale * 2 * p.z_loss * lse;
    const Acc per_exp = static_cast<Acc>(total / sum_exp);
    const Acc smooth_term = static_cast<Acc>(smooth * ce_scale);
    const Acc target_term = static_cast<Acc>((1 - eps) * target_weight * ce_scale);
    if (class_weight) {
      for (int64_t c = 0; c < classes; ++c) e[c] = e[c] * per_exp - smooth_term * class_weight[c];
    } else {
      for (int64_t c = 0; c < classes; ++c) e[c] = e[c] * per_exp - smooth_term;
    }
    e[t] -= target_term;
    if (p.softcap > 0) {
      // d tanh = 1 - tanh^2, with tanh = z / cap.
      for (int64_t c = 0; c < classes; ++c) z[c] = e[c] * (Acc(1) - (z[c] / cap) * (z[c] / cap));
    } else {
      std::copy(e, e + classes, z);
    }
  }
};

template <typename Acc>
constexpr ScalarType acc_dtype = std::is_same_v<Acc, double> ? kFloat64 : kFloat32;

int64_t tile_count(int64_t n, int64_t tile) { return (n + tile - 1) / tile; }

// Classes per tile of the logits and weight-gradient products: kLceClassTile, or half the
// classes (rounded up to 16) when that is fewer, so a small vocabulary (256 bytes) still
// gives the pool two tiles.
int64_t class_tile(int64_t classes) {
  return std::min(kLceClassTile, std::max<int64_t>(16, (classes / 2 + 15) / 16 * 16));
}

// Calls fn(t) for t in [0, count) on the pool, always as a parallel region, even for one
// tile: gemm then keeps BLAS on the calling thread (see Note [Fixed product tiles]).
template <typename Fn>
void for_each_tile(int64_t count, const Fn& fn) {
  parallel_for(0, std::max<int64_t>(count, 2), 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < std::min(t1, count); ++t) fn(t);
  });
}

// A float32 buffer of the calling thread, kept between tiles so they do not page-fault.
float* thread_buffer(int64_t count) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < count) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

// A 64-byte aligned buffer of `values` bf16 values (tile loads straddling cache lines run slower).
uint16_t* aligned_values(std::vector<uint16_t>& buffer, int64_t values) {
  if (static_cast<int64_t>(buffer.size()) < values + 32) buffer.resize(static_cast<size_t>(values + 32));
  const auto address = reinterpret_cast<uintptr_t>(buffer.data());
  return reinterpret_cast<uint16_t*>((address + 63) & ~uintptr_t(63));
}

// The calling thread's buffer for one tile's packed B panels, kept between tiles.
uint16_t* panel_buffer(int64_t values) {
  thread_local std::vector<uint16_t> buffer;
  return aligned_values(buffer, values);
}

// A product operand: `dtype` values from `data` with row stride `ld`.
struct Operand {
  ScalarType dtype;
  const void* data;
  int64_t ld;
};

// One chunk after another; within a chunk every product is tiled (Note [Fixed product tiles]).
template <typename Acc>
class Driver {
 public:
  Driver(const LceProblem& p, const LceGradScale& scale, const LceOutputs& out, const LceWorkspace& ws)
      : p_(p),
        out_(out),
        ws_(ws),
        low_(is_low_precision(p.dtype)),
        widened_(lce_widens_operands(p.dtype)),
        amx_(std::is_same_v<Acc, float> && p.dtype == kBFloat16 && amx_products_available()),
        class_tile_(class_tile(p.classes)),
        weight_wide_(widened_ && p.classes * p.hidden <= kWidenedWeightLimit
                         ? std::vector<float>(static_cast<size_t>(p.classes * p.hidden))
                         : std::vector<float>()),
        rows_{p, scale, static_cast<const Acc*>(p.bias), static_cast<const Acc*>(p.class_weight),
              class_weight_sum(p), out.grad_x || out.grad_weight || out.grad_bias} {}

  void run() {
    if (!weight_wide_.empty())
      widen_rows(p_.dtype, p_.weight, p_.ld_weight, p_.classes, p_.hidden, weight_wide_.data());
    Acc* logits = static_cast<Acc*>(ws_.logits);
    for (int64_t c0 = 0; c0 < p_.tokens; c0 += p_.chunk_tokens) {
      const int64_t rows = std::min(p_.chunk_tokens, p_.tokens - c0);
      // x rows of this chunk: in place (Acc or bf16), or widened to float32 (lce_widens_operands).
      Operand x{acc_dtype<Acc>, static_cast<const Acc*>(p_.x) + c0 * p_.ld_x, p_.ld_x};
      if (p_.dtype == kBFloat16) x = {kBFloat16, static_cast<const uint16_t*>(p_.x) + c0 * p_.ld_x, p_.ld_x};
      if (widened_) {
        widen_rows(p_.dtype, static_cast<const uint16_t*>(p_.x) + c0 * p_.ld_x, p_.ld_x, rows, p_.hidden,
                   ws_.x_wide);
        x = {kFloat32, ws_.x_wide, p_.hidden};
      }
      compute_logits(x, rows, logits);
      row_pass(c0, rows, logits);
      if (!rows_.want_grad) continue;
      if (out_.grad_bias) accumulate_grad_bias(logits, rows);
      if (!out_.grad_x && !out_.grad_weight) continue;
      const Operand d = gradient_operand(logits, rows);
      if (ws_.deferred_tokens > 0) {
        add_to_group(rows, c0);
        continue;
      }
      if (out_.grad_x) compute_grad_x(d, rows, c0);
      if (out_.grad_weight) accumulate_grad_weight(d, x, rows);
    }
  }

 private:
  static double class_weight_sum(const LceProblem& p) {
    return p.class_weight ? sum_in_double(static_cast<const Acc*>(p.class_weight), p.classes)
                          : static_cast<double>(p.classes);
  }

  // Weight rows [v0, v0 + count) x columns [h0, h0 + width): in place (Acc or bf16), or
  // widened into this thread's buffer (lce_widens_operands).
  Operand weight_tile(int64_t v0, int64_t count, int64_t h0, int64_t width) const {
    if (!weight_wide_.empty()) return {kFloat32, weight_wide_.data() + v0 * p_.hidden + h0, p_.hidden};
    if (widened_) {
      float* buffer = thread_buffer(count * width);
      widen_rows(p_.dtype, static_cast<const uint16_t*>(p_.weight) + v0 * p_.ld_weight + h0, p_.ld_weight, count,
                 width, buffer);
      return {kFloat32, buffer, width};
    }
    const int64_t offset = v0 * p_.ld_weight + h0;
    if (p_.dtype == kBFloat16) return {kBFloat16, static_cast<const uint16_t*>(p_.weight) + offset, p_.ld_weight};
    return {acc_dtype<Acc>, static_cast<const Acc*>(p_.weight) + offset, p_.ld_weight};
  }

  // c (Acc) = op(a) op(b) (+ c when beta is 1); bf16 operands accumulate into float32 C.
  void product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const Operand& a, int64_t a_offset,
               const Operand& b, int64_t b_offset, double beta, Acc* c, int64_t ldc) const {
    assert(a.dtype == b.dtype);
    const int64_t item = static_cast<int64_t>(element_size(a.dtype));
    const char* a_data = static_cast<const char*>(a.data) + a_offset * item;
    const char* b_data = static_cast<const char*>(b.data) + b_offset * item;
    if constexpr (std::is_same_v<Acc, float>) {
      if (a.dtype == kBFloat16)
        return gemm_float32_out(kBFloat16, trans_a, trans_b, m, n, k, 1.0, a_data, a.ld, b_data, b.ld, beta, c, ldc);
    }
    gemm(acc_dtype<Acc>, trans_a, trans_b, m, n, k, 1.0, a_data, a.ld, b_data, b.ld, beta, c, ldc);
  }

  // The chunk's d = d loss / d logits as the backward products' operand: the float32/float64
  // logits buffer (also where operands are widened), or for bf16 d rounded to bf16, so both
  // products run as bf16 x bf16 products: into the group's buffer after the chunks already there (Note [Deferred
  // gradients]), else in place, packed at the start of each row (row stride 2 * classes).
  Operand gradient_operand(Acc* logits, int64_t rows) const {
    const int64_t classes = p_.classes;
    if (p_.dtype != kBFloat16 || widened_) return {acc_dtype<Acc>, logits, classes};
    uint16_t* group_rows = ws_.deferred_tokens > 0 ? ws_.deferred_grad + pending_ * classes : nullptr;
    parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
      uint16_t* rounded = group_rows ? nullptr : reinterpret_cast<uint16_t*>(thread_buffer((classes + 1) / 2));
      for (int64_t r = r0; r < r1; ++r) {
        float* row = reinterpret_cast<float*>(logits) + r * classes;
        EMBER_KERNEL(gemm_narrow_bf16)(row, classes, 1, classes, 0.0f, group_rows ? group_rows + r * classes : rounded,
                                       classes);
        if (!group_rows) std::memcpy(row, rounded, static_cast<size_t>(classes) * 2);
      }
    });
    if (group_rows) return {kBFloat16, group_rows, classes};
    return {kBFloat16, logits, 2 * classes};
  }

  // The chunk's d joins its group (Note [Deferred gradients]); a full group, or the last,
  // goes to grad_x and grad_weight as one chunk of all its tokens.
  void add_to_group(int64_t rows, int64_t c0) {
    if (pending_ == 0) pending_c0_ = c0;
    pending_ += rows;
    if (pending_ + p_.chunk_tokens <= ws_.deferred_tokens && c0 + rows < p_.tokens) return;
    const Operand d{kBFloat16, ws_.deferred_grad, p_.classes};
    if (out_.grad_x) compute_grad_x(d, pending_, pending_c0_);
    if (out_.grad_weight)
      accumulate_grad_weight(d, {kBFloat16, static_cast<const uint16_t*>(p_.x) + pending_c0_ * p_.ld_x, p_.ld_x},
                             pending_);
    pending_ = 0;
  }

  // logits [rows, classes] = x @ weight^T, in parallel over class tiles.
  void compute_logits(const Operand& x, int64_t rows, Acc* logits) const {
    const int64_t classes = p_.classes, hidden = p_.hidden, block = p_.token_block;
    if constexpr (std::is_same_v<Acc, float>) {
      if (amx_) {  // logits tileᵀ = weight tile x chunkᵀ: the weight read by rows, the chunk packed once
        uint16_t* packed = aligned_values(x_panels_, amx_packed_b_size(hidden, rows));
        amx_pack_b(true, hidden, rows, x.data, x.ld, packed);
        return for_each_tile(tile_count(classes, class_tile_), [&](int64_t t) {
          const int64_t v0 = t * class_tile_, count = std::min(class_tile_, classes - v0);
          amx_product_packed_b_transposed_c(count, rows, hidden,
                                            static_cast<const uint16_t*>(p_.weight) + v0 * p_.ld_weight, p_.ld_weight,
                                            packed, logits + v0, classes);
        });
      }
    }
    for_each_tile(tile_count(classes, class_tile_), [&](int64_t t) {
      const int64_t v0 = t * class_tile_, count = std::min(class_tile_, classes - v0);
      const Operand w = weight_tile(v0, count, 0, hidden);
      for (int64_t b0 = 0; b0 < rows; b0 += block)
        product(false, true, std::min(block, rows - b0), count, hidden, x, b0 * x.ld, w, 0, 0.0,
                logits + b0 * classes + v0, classes);
    });
  }

  void row_pass(int64_t c0, int64_t rows, Acc* logits) const {
    const int64_t classes = p_.classes;
    parallel_for(0, rows, row_grain(classes), [&](int64_t r0, int64_t r1) {
      std::vector<Acc> scratch(static_cast<size_t>(classes));
      for (int64_t r = r0; r < r1; ++r)
        rows_.run(c0 + r, logits + r * classes, scratch.data(), out_.row_ce[c0 + r], out_.row_lse[c0 + r]);
    });
  }

  // grad_bias[v] += the chunk's d[:, v], summed in token order.
  void accumulate_grad_bias(const Acc* d, int64_t rows) const {
    Acc* grad_bias = static_cast<Acc*>(out_.grad_bias);
    const int64_t classes = p_.classes;
    parallel_for(0, classes, 4096, [&](int64_t v0, int64_t v1) {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t v = v0; v < v1; ++v) grad_bias[v] += d[r * classes + v];
    });
  }

  // compute_grad_x's products where amx_: groups of token blocks, as many as keep the pool busy,
  // each weight tile packed once a group; every element's sum one chain over the classes in
  // order, whatever the groups.
  void grad_x_on_amx(const Operand& d, int64_t rows, float* grad_x) const {
    const int64_t classes = p_.classes, hidden = p_.hidden, block = p_.token_block, class_step = kLceClassTile;
    const int64_t hidden_tiles = tile_count(hidden, kLceHiddenTile), blocks = tile_count(rows, block);
    const int64_t groups = std::clamp<int64_t>(tile_count(2 * num_threads(), hidden_tiles), 1, blocks);
    const int64_t group_rows = tile_count(blocks, groups) * block;
    for_each_tile(tile_count(rows, group_rows) * hidden_tiles, [&](int64_t t) {
      const int64_t r0 = (t / hidden_tiles) * group_rows, h0 = (t % hidden_tiles) * kLceHiddenTile;
      const int64_t count = std::min(group_rows, rows - r0), width = std::min(kLceHiddenTile, hidden - h0);
      uint16_t* packed = panel_buffer(amx_packed_b_size(class_step, width));
      for (int64_t v0 = 0; v0 < classes; v0 += class_step) {
        const int64_t span = std::min(class_step, classes - v0);
        amx_pack_b(false, span, width, static_cast<const uint16_t*>(p_.weight) + v0 * p_.ld_weight + h0,
                   p_.ld_weight, packed);
        for (int64_t b0 = r0; b0 < r0 + count; b0 += block)  // A's rows packed a block at a time, in L2
          amx_product_packed_b(false, std::min(block, r0 + count - b0), width, span,
                               static_cast<const uint16_t*>(d.data) + b0 * d.ld + v0, d.ld, packed, v0 > 0,
                               grad_x + b0 * hidden + h0, hidden);
      }
    });
  }

  // grad_x rows [c0, c0 + rows) = d @ weight, in parallel over (token block, hidden tile),
  // summing class tiles in order: one product over all classes (k = 128256) ran 10-20% slower
  // on oneDNN, and widened operands widen their weight tiles.
  void compute_grad_x(const Operand& d, int64_t rows, int64_t c0) const {
    const int64_t classes = p_.classes, hidden = p_.hidden, block = p_.token_block;
    const int64_t hidden_tiles = tile_count(hidden, kLceHiddenTile);
    Acc* grad_x = low_ ? reinterpret_cast<Acc*>(ws_.grad_x_wide) : static_cast<Acc*>(out_.grad_x) + c0 * hidden;
    const int64_t class_step = kLceClassTile;
    if (amx_) {
      grad_x_on_amx(d, rows, reinterpret_cast<float*>(grad_x));
    } else {
      for_each_tile(tile_count(rows, block) * hidden_tiles, [&](int64_t t) {
        const int64_t b0 = (t / hidden_tiles) * block, h0 = (t % hidden_tiles) * kLceHiddenTile;
        const int64_t count = std::min(block, rows - b0), width = std::min(kLceHiddenTile, hidden - h0);
        for (int64_t v0 = 0; v0 < classes; v0 += class_step) {
          const int64_t span = std::min(class_step, classes - v0);
          const Operand w = weight_tile(v0, span, h0, width);
          product(false, false, count, width, span, d, b0 * d.ld + v0, w, 0, v0 == 0 ? 0.0 : 1.0,
                  grad_x + b0 * hidden + h0, hidden);
        }
      });
    }
    if (low_) {
      const int64_t item = static_cast<int64_t>(element_size(p_.dtype));
      narrow_rows(p_.dtype, ws_.grad_x_wide, rows, hidden, static_cast<char*>(out_.grad_x) + c0 * hidden * item);
    }
  }

  // grad_weight += d^T @ x in parallel over class tiles, one product per token block in order.
  void accumulate_grad_weight(const Operand& d, const Operand& x, int64_t rows) const {
    const int64_t classes = p_.classes, hidden = p_.hidden, block = p_.token_block;
    Acc* grad_weight = static_cast<Acc*>(out_.grad_weight);
    if constexpr (std::is_same_v<Acc, float>) {
      if (amx_) {
        // The chunk's x packed once (column packs on the pool), shared by every class tile; each
        // element's sum one chain over all tokens in order, whatever the chunks.
        uint16_t* packed = aligned_values(x_panels_, amx_packed_b_size(rows, hidden));
        amx_pack_b(false, rows, hidden, x.data, x.ld, packed);
        return for_each_tile(tile_count(classes, class_tile_), [&](int64_t t) {
          const int64_t v0 = t * class_tile_, count = std::min(class_tile_, classes - v0);
          amx_product_packed_b(true, count, hidden, rows, static_cast<const uint16_t*>(d.data) + v0, d.ld, packed, true,
                               grad_weight + v0 * hidden, hidden);
        });
      }
    }
    for_each_tile(tile_count(classes, class_tile_), [&](int64_t t) {
      const int64_t v0 = t * class_tile_, count = std::min(class_tile_, classes - v0);
      for (int64_t b0 = 0; b0 < rows; b0 += block)
        product(true, false, count, hidden, std::min(block, rows - b0), d, b0 * d.ld + v0, x, b0 * x.ld, 1.0,
                grad_weight + v0 * hidden, hidden);
    });
  }

  const LceProblem& p_;
  const LceOutputs& out_;
  const LceWorkspace& ws_;
  const bool low_;
  const bool widened_;  // lce_widens_operands: operands widened to float32, d kept in float32
  // bf16 where the CPU has AMX-BF16: B operands packed once and shared (Note [Products sharing
  // B on AMX]); the packed x of the chunk for the weight gradient.
  const bool amx_;
  mutable std::vector<uint16_t> x_panels_;
  const int64_t class_tile_;
  // Where operands are widened and the weight is small (a GPT's byte-level head), all of it
  // widened once a call instead of tile by tile in every chunk's three products.
  static constexpr int64_t kWidenedWeightLimit = int64_t{1} << 20;  // 4 MB of float32
  std::vector<float> weight_wide_;
  const RowPass<Acc> rows_;
  // Tokens whose d waits in ws_.deferred_grad for the gradients, from token pending_c0_.
  int64_t pending_ = 0, pending_c0_ = 0;
};

}  // namespace

bool lce_widens_operands(ScalarType dtype) {
  return dtype == kFloat16 || (dtype == kBFloat16 && !capability_at_least(Capability::AVX512_BF16));
}

int64_t lce_deferred_gradient_tokens(ScalarType dtype, int64_t chunk_tokens, int64_t classes, int64_t memory_budget) {
  if (dtype != kBFloat16 || !amx_products_available()) return 0;
  // Two bytes a class a token in up to twice the budget: bf16 rows of as many tokens as the
  // budget holds in float32.
  const int64_t chunks = memory_budget / std::max<int64_t>(1, chunk_tokens * classes);
  return chunks >= 2 ? chunks * chunk_tokens : 0;
}

void linear_cross_entropy(const LceProblem& problem, const LceGradScale& scale, const LceOutputs& out,
                          const LceWorkspace& workspace) {
  if (problem.dtype == kFloat64) {
    Driver<double>(problem, scale, out, workspace).run();
  } else {
    Driver<float>(problem, scale, out, workspace).run();
  }
}

}  // namespace ember::cpu
