#include "cpu/attention/flex_attention.h"

#include <algorithm>
#include <cstdint>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "core/allocator.h"
#include "cpu/attention/flex_attention_tiles.h"
#include "cpu/parallel.h"
#include "ember/error.h"

namespace ember::cpu::attention {
namespace {

using ember::detail::ScoreTile;
using ember::detail::TilePass;

template <typename T> const TileKernels<T>& tile_kernels();
template <> const TileKernels<float>& tile_kernels<float>() { return *EMBER_KERNEL(flex_tile_kernels_f32)(); }
template <> const TileKernels<double>& tile_kernels<double>() { return *baseline::flex_tile_kernels_f64(); }

// The products' table for tiles of T and operands of `dtype` (Note [Attention products]):
// bfloat16 operands where the CPU multiplies them (on AMX tiles, EMBER_AMX_KERNEL, else
// VDPBF16PS, EMBER_BF16_KERNEL), else T.
template <typename T> const ProductKernels<T>& products_for(ScalarType dtype);
template <> const ProductKernels<double>& products_for<double>(ScalarType) { return *baseline::flex_products_f64(); }
template <> const ProductKernels<float>& products_for<float>(ScalarType dtype) {
  if (dtype == kBFloat16) {
    if (const auto amx = EMBER_AMX_KERNEL(flex_products_amx)) return *amx();
    if (const auto bf16 = EMBER_BF16_KERNEL(flex_products_bf16)) return *bf16();
  }
  return *EMBER_KERNEL(flex_products_f32)();
}

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }

// Per-thread scratch buffers, grown on demand and kept between calls.
enum Buffer { kQ, kOut, kKeyT, kValueT, kScores, kGrad, kDmod, kRaw, kTransposed, kOperand, kAccA, kAccB, kRowA,
              kRowB, kNumBuffers };
// 64-byte aligned, as the workspace's areas are: an AMX tile row or a vector that straddles two
// cache lines reads both (the AMX products ran at 0.6x unaligned).
template <typename T>
T* scratch(Buffer which, int64_t size) {
  thread_local std::vector<char> buffers[kNumBuffers];
  auto& buffer = buffers[which];
  const size_t bytes = static_cast<size_t>(size) * sizeof(T) + 64;
  if (buffer.size() < bytes) buffer.resize(bytes);
  return reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(buffer.data()) + 63) & ~uintptr_t(63));
}

const char* at(const Operand& o, int64_t b, int64_t h, int64_t row, size_t item) {
  return static_cast<const char*>(o.data) + (b * o.stride_b + h * o.stride_h + row * o.stride_row) * static_cast<int64_t>(item);
}

char* at(const Target& t, int64_t b, int64_t h, int64_t row, size_t item) {
  return static_cast<char*>(t.data) + (b * t.stride_b + h * t.stride_h + row * t.stride_row) * static_cast<int64_t>(item);
}

// The row of (b, h, block) in lists (b and h of a broadcast mask are 0).
int64_t list_row(const BlockLists& lists, int64_t b, int64_t h, int64_t block) {
  return ((lists.batch == 1 ? 0 : b) * lists.heads + (lists.heads == 1 ? 0 : h)) * lists.blocks + block;
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
  const int64_t row = list_row(lists, b, h, block);
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

// Note [Score strips]
// The forward computes a score tile's rows in strips of kStripBytes of scores (64 rows of 128
// float32 columns): each strip is stored by the product, masked, turned into probabilities and
// multiplied by the values while it is still in the cache nearest the core, where a whole
// 128 x 128 tile (64 KB) is larger than a 48 KB L1. bf16 forwards on AMX tiles at
// S=8192 ran 0.96-0.98x the time (sliding windows of 64 to 4096, alternated); float32 the same
// time. The strips' results are the tile's: each row's steps are the same.
constexpr int64_t kStripBytes = int64_t{32} << 10;
constexpr int64_t kStripRowsMin = 16;

// The geometry every kernel below shares: tiles of T, product operands as `mm` packs them.
template <typename T>
struct Layout {
  const TileKernels<T>& k = tile_kernels<T>();
  const ProductKernels<T>& mm;
  // ld_s, ld_e, ld_ev: rows of score, dK/dQ and output tiles (C of a product). ld_qe, ld_qv:
  // rows of E and Ev values as A operands; ld_t: rows of a transposed query-block tile.
  int64_t bq, bkv, q_blocks, kv_blocks, group, ld_s, ld_e, ld_ev, ld_qe, ld_qv, ld_t;
  int64_t strip;  // rows of a forward score tile at a time (Note [Score strips])
  size_t item;
  explicit Layout(const FlexProblem& p, const ProductKernels<T>& products)
      : mm(products), bq(p.q_block), bkv(p.kv_block), q_blocks(ceil_div(p.q_len, p.q_block)),
        kv_blocks(ceil_div(p.kv_len, p.kv_block)),
        group(p.heads_q / p.heads_kv), ld_s(round_up(p.kv_block, mm.panel_width)),
        ld_e(round_up(p.head_dim, mm.panel_width)), ld_ev(round_up(p.value_dim, mm.panel_width)),
        ld_qe(round_up(p.head_dim, mm.k_group)), ld_qv(round_up(p.value_dim, mm.k_group)),
        ld_t(round_up(p.q_block, mm.k_group)),
        strip(std::max<int64_t>(kStripRowsMin, kStripBytes / (ld_s * static_cast<int64_t>(sizeof(T))))),
        item(element_size(p.dtype)) {}
  // Bytes of `elements` operand elements, and the operand memory that many elements past `base`.
  int64_t bytes(int64_t elements) const { return elements * mm.operand_bytes; }
  const void* operand(const void* base, int64_t elements) const {
    return static_cast<const char*>(base) + bytes(elements);
  }
  void* operand(void* base, int64_t elements) const { return static_cast<char*>(base) + bytes(elements); }
  int64_t rows_of(int64_t qb, const FlexProblem& p) const { return std::min(bq, p.q_len - qb * bq); }
  int64_t cols_of(int64_t kvb, const FlexProblem& p) const { return std::min(bkv, p.kv_len - kvb * bkv); }
};

// ---- forward ------------------------------------------------------------------------------

// Every block of an operand [batch, heads, len, dim] in one packed form, packed once
// rather than once per visit: Rows (an A operand), Panels (B[row][dim]) or
// TransposedPanels (B[dim][row]).
enum class Form { Rows, Panels, TransposedPanels };

// Rows [first, first + rows) of operand o's (b, h) into dst in `form`.
template <typename T>
void pack_block(const FlexProblem& p, const Layout<T>& g, const Operand& o, int64_t b, int64_t h, int64_t first,
                int64_t rows, int64_t dim, Form form, char* dst) {
  const char* src = at(o, b, h, first, g.item);
  if (form == Form::Rows)
    g.mm.pack_rows(p.dtype, src, o.stride_row, o.stride_col, rows, dim, dst, round_up(dim, g.mm.k_group));
  else if (form == Form::Panels) g.mm.pack_panels(p.dtype, src, o.stride_row, o.stride_col, rows, dim, dst);
  else g.mm.pack_panels(p.dtype, src, o.stride_col, o.stride_row, dim, rows, dst);
}

struct FreeBytes {
  size_t bytes;  // 0: caller-owned storage
  void operator()(char* data) const {
    if (bytes > 0) core::free_bytes(data, bytes);
  }
};
using Bytes = std::unique_ptr<char[], FreeBytes>;
// From ember's allocator: its large-block cache spares the page faults of fresh memory.
Bytes allocate_bytes(int64_t count) {
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(count, 1));
  return Bytes(static_cast<char*>(core::allocate_bytes(bytes)), FreeBytes{bytes});
}

template <typename T>
class PackedBlocks {
 public:
  static int64_t block_size(const Layout<T>& g, int64_t dim, int64_t block_len, Form form) {
    const int64_t width = g.mm.panel_width, group = g.mm.k_group;
    return form == Form::Rows     ? block_len * round_up(dim, group)
           : form == Form::Panels ? round_up(dim, width) * round_up(block_len, group)
                                  : round_up(block_len, width) * round_up(dim, group);
  }
  // Elements of the packed operand: what `storage` must hold.
  static int64_t elements(const Layout<T>& g, int64_t batch, int64_t heads, int64_t len, int64_t dim,
                          int64_t block_len, Form form) {
    return batch * heads * ceil_div(len, block_len) * block_size(g, dim, block_len, form);
  }

  // Note [Keys packed on first use]
  // The forward packs a key or value block when a task first needs it: the tasks of a head
  // run in query-block order, so a block is packed just before the query blocks that share it
  // read it, while it is still in the cache, where packing all blocks first wrote them out to
  // memory and read them back (at S=8192 that was 16 MB each way). The task that claims a block
  // packs it; one that needs it meanwhile waits. Packing is the same whoever does it.
  enum class When { Now, OnFirstUse };

  // Packs into `storage` (caller-owned, elements() long), or into memory of its own when null;
  // every block now, or each on its first use (then p, g and o must outlive this).
  PackedBlocks(const FlexProblem& p, const Layout<T>& g, const Operand& o, int64_t batch, int64_t heads, int64_t len,
               int64_t dim, int64_t block_len, Form form, char* storage = nullptr, When when = When::Now)
      : p_(&p), g_(&g), o_(&o), len_(len), dim_(dim), block_len_(block_len), form_(form), batch_(batch), heads_(heads),
        blocks_(ceil_div(len, block_len)), block_size_(block_size(g, dim, block_len, form)),
        data_(storage ? Bytes(storage, FreeBytes{0}) : allocate_bytes(g.bytes(batch * heads * blocks_ * block_size_))),
        block_bytes_(g.bytes(block_size_)) {
#ifndef EMBER_RT_CPU  // not in ember-rt, whose callers pass a workspace (Note [Runtime size])
    if (when == When::OnFirstUse) {
      state_ = std::make_unique<std::atomic<uint8_t>[]>(static_cast<size_t>(batch * heads * blocks_));
      return;
    }
#endif
    parallel_for(0, batch * heads * blocks_, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) pack(i);
    });
  }
  // b of a broadcast operand (batch 1) is 0.
  const void* block(int64_t b, int64_t h, int64_t blk) const {
    const int64_t i = ((batch_ == 1 ? 0 : b) * heads_ + h) * blocks_ + blk;
#ifndef EMBER_RT_CPU
    if (state_) packed_once(i);
#endif
    return data_.get() + i * block_bytes_;
  }

 private:
  enum : uint8_t { kUnpacked, kPacking, kPacked };

  void pack(int64_t i) const {
    const int64_t blk = i % blocks_, h = i / blocks_ % heads_, b = i / blocks_ / heads_;
    const int64_t first = blk * block_len_;
    pack_block(*p_, *g_, *o_, b, h, first, std::min(block_len_, len_ - first), dim_, form_, data_.get() + i * block_bytes_);
  }
  void packed_once(int64_t i) const {
    std::atomic<uint8_t>& state = state_[i];
    if (state.load(std::memory_order_acquire) == kPacked) return;
    uint8_t unpacked = kUnpacked;
    if (state.compare_exchange_strong(unpacked, kPacking, std::memory_order_acquire)) {
      pack(i);
      state.store(kPacked, std::memory_order_release);
      return;
    }
    while (state.load(std::memory_order_acquire) != kPacked) std::this_thread::yield();
  }

  const FlexProblem* p_;
  const Layout<T>* g_;
  const Operand* o_;
  int64_t len_, dim_, block_len_;
  Form form_;
  int64_t batch_, heads_, blocks_, block_size_;
  Bytes data_;
  int64_t block_bytes_;
  std::unique_ptr<std::atomic<uint8_t>[]> state_;  // OnFirstUse: kUnpacked, kPacking or kPacked per block
};

// k and v broadcast over the batch when their batch stride is 0.
int64_t kv_batch_of(const FlexProblem& p) { return p.k.stride_b == 0 && p.batch > 1 ? 1 : p.batch; }

template <typename T>
PackedBlocks<T> pack_keys(const FlexProblem& p, const Layout<T>& g, const Operand& o, int64_t dim, Form form,
                          char* storage = nullptr,
                          typename PackedBlocks<T>::When when = PackedBlocks<T>::When::Now) {
  return PackedBlocks<T>(p, g, o, kv_batch_of(p), p.heads_kv, p.kv_len, dim, g.bkv, form, storage, when);
}

template <typename T>
int64_t packed_keys_elements(const FlexProblem& p, const Layout<T>& g, int64_t dim, Form form) {
  return PackedBlocks<T>::elements(g, kv_batch_of(p), p.heads_kv, p.kv_len, dim, g.bkv, form);
}

// Note [Flex workspace]
// A caller that may not allocate (the program runtime) passes one block of memory sized by
// flex_forward_workspace_bytes. Its shared buffers (packed keys and values, or the decode
// path's partial results) come first, then `workspace_slots` per-task scratch areas; the
// tasks then run as that many chunks, each with its own area. A task computes the same values
// whichever chunk runs it, so results equal the allocating path's bitwise.
class Carver {
 public:
  explicit Carver(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(int64_t count) {
    T* p = base_ ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += round_up(std::max<int64_t>(count, 1) * static_cast<int64_t>(sizeof(T)), 64);
    return p;
  }
  int64_t used() const { return used_; }

 private:
  char* base_;
  int64_t used_ = 0;
};

// A task's scratch: a slot of the workspace, else the calling thread's buffers.
class TaskScratch {
 public:
  explicit TaskScratch(void* slot) : slot_(slot), carver_(slot) {}
  template <typename U>
  U* get(Buffer which, int64_t size) {
    return slot_ ? carver_.take<U>(size) : scratch<U>(which, size);
  }

 private:
  void* slot_;
  Carver carver_;
};

// From a task's scratch, or counted by a Carver over no memory (a slot's size).
template <typename U>
U* take(TaskScratch& s, Buffer which, int64_t size) {
  return s.get<U>(which, size);
}
template <typename U>
U* take(Carver& c, Buffer, int64_t size) {
  return c.take<U>(size);
}

// Runs fn(task_begin, task_end, scratch) over [0, tasks): chunks of `grain` tasks with
// per-thread scratch, or one chunk per workspace slot (Note [Flex workspace]).
template <typename F>
void run_tasks(const FlexProblem& p, int64_t tasks, int64_t grain, char* slots, int64_t slot_bytes, F fn) {
  if (p.workspace == nullptr) {
    parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
      TaskScratch scratch(nullptr);
      fn(lo, hi, scratch);
    });
    return;
  }
  const int64_t n = p.workspace_slots;
  parallel_for(0, n, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) {
      TaskScratch scratch(slots + k * slot_bytes);
      fn(k * tasks / n, (k + 1) * tasks / n, scratch);
    }
  });
}

// Bytes of one slot: what a task's buffers (Buffers(layout..., carver)) carve from it.
template <typename Buffers, typename... Args>
int64_t slot_bytes_of(const Args&... args) {
  Carver slot(nullptr);
  Buffers(args..., slot);
  return slot.used();
}

template <typename T>
PackedBlocks<T> pack_queries(const FlexProblem& p, const Layout<T>& g, const Operand& o, int64_t dim, Form form) {
  return PackedBlocks<T>(p, g, o, p.batch, p.heads_q, p.q_len, dim, g.bq, form);
}

// The A operand of a product from a T tile (rows x cols, ld_s): the tile itself where tiles
// are operands (unless `copy`), else its operand copy in `buffer`.
template <typename T>
const void* tile_operand(const Layout<T>& g, const T* tile, int64_t rows, int64_t cols, void* buffer,
                         bool copy = false) {
  if (g.mm.tiles_are_operands && !copy) return tile;
  if (g.mm.tiles_are_operands) {
    T* rows_out = static_cast<T*>(buffer);
    for (int64_t r = 0; r < rows; ++r) std::copy(tile + r * g.ld_s, tile + r * g.ld_s + cols, rows_out + r * g.ld_s);
  } else {
    g.mm.operand_rows(tile, g.ld_s, rows, cols, false, buffer, g.ld_s);
  }
  return buffer;
}

// Note [Scale in the softmax]
// The scores are q·k times `scale`. Where the product table applies an alpha in a pass of its
// own over the tile (AMX tiles store their sums as they are) and no score_mod must see the
// scaled scores, the product runs with alpha 1 and the fused softmax multiplies each score by
// the scale in a register on its way to exp: the same products, rounded the same way, so the
// same bits, with one pass over the tile saved. For a positive scale a mask_mod commutes with
// it (-inf stays -inf), and the row max is the scale times the unscaled one (rounding is
// monotonic).

// The scale's two factors, in the score product and in the softmax: (scale, 1) or (1, scale).
template <typename T>
struct ScoreScale {
  T in_product, in_softmax;
  ScoreScale(const FlexProblem& p, const Layout<T>& g) {
    const bool in_softmax_pass = g.mm.alpha_is_a_pass && g.mm.softmax_to_operand && !p.score_mod && p.scale > 0;
    in_product = in_softmax_pass ? T(1) : static_cast<T>(p.scale);
    in_softmax = in_softmax_pass ? static_cast<T>(p.scale) : T(1);
  }
};

// One online-softmax step over a score tile (TileKernels::softmax_step) of the scores times
// score_scale (1 unless ScoreScale says otherwise), the probabilities then an A operand: the
// tile itself, `buffer` filled from it, or `buffer` written by the softmax directly where the
// table fuses the two.
template <typename T>
const void* softmax_operand(const Layout<T>& g, T* scores, int64_t rows, int64_t cols, bool masked, T score_scale,
                            T* row_max, T* row_sum, T* acc, int64_t acc_cols, void* buffer) {
  if (g.mm.softmax_to_operand) {
    g.mm.softmax_to_operand(scores, g.ld_s, rows, cols, masked, score_scale, row_max, row_sum, acc, g.ld_ev, acc_cols,
                            buffer, g.ld_s);
    return buffer;
  }
  g.k.softmax_step(scores, g.ld_s, rows, cols, row_max, row_sum, acc, g.ld_ev, acc_cols);
  return tile_operand(g, scores, rows, cols, buffer);
}

// C (cols x n) += alpha * tileᵀ · B for a T tile (rows x cols, ld_s): the tile read where it
// lies where the table can, else through its transposed operand copy in `buffer`.
template <typename T>
void transposed_tile_product(const Layout<T>& g, const T* tile, int64_t rows, int64_t cols, void* buffer,
                             const void* b_panels, T* c, int64_t ldc, int64_t n, T alpha) {
  if (g.mm.gemm_transposed_tile) {
    g.mm.gemm_transposed_tile(tile, g.ld_s, b_panels, c, ldc, cols, n, rows, alpha, true);
    return;
  }
  g.mm.operand_rows(tile, g.ld_s, rows, cols, true, buffer, g.ld_t);
  g.mm.gemm(buffer, g.ld_t, b_panels, c, ldc, cols, n, rows, alpha, true);
}

// A forward task's buffers: the query rows, the score tile, the probabilities as an operand
// (unused where operands are T), the output accumulator and the running row max and sum.
template <typename T>
struct ForwardBuffers {
  void* q;
  T* scores;
  void* probs;
  T* acc;
  T* row_max;
  T* row_sum;
  template <typename Source>
  ForwardBuffers(const FlexProblem& p, const Layout<T>& g, Source& s)
      : q(take<char>(s, kQ, g.bytes(g.bq * g.ld_qe))), scores(take<T>(s, kScores, g.bq * g.ld_s)),
        probs(take<char>(s, kOperand, g.mm.tiles_are_operands ? 0 : g.bytes(g.bq * g.ld_s))),
        acc(take<T>(s, kAccA, g.bq * g.ld_ev)),
        row_max(take<T>(s, kRowA, g.bq)), row_sum(take<T>(s, kRowB, g.bq)) {}
};

// forward_impl's workspace: packed keys and values, then the slots.
template <typename T>
struct ForwardWorkspace {
  char* keys;
  char* values;
  char* slots;
  int64_t slot_bytes, bytes;
  ForwardWorkspace(const FlexProblem& p, const Layout<T>& g, void* base, int64_t num_slots) {
    Carver c(base);
    keys = c.take<char>(g.bytes(packed_keys_elements(p, g, p.head_dim, Form::TransposedPanels)));
    values = c.take<char>(g.bytes(packed_keys_elements(p, g, p.value_dim, Form::Panels)));
    slot_bytes = slot_bytes_of<ForwardBuffers<T>>(p, g);
    slots = c.take<char>(num_slots * slot_bytes);
    bytes = c.used();
  }
};

#ifndef EMBER_RT_CPU  // ember-rt's callers pass a workspace (Note [Runtime size])
// Note [Packed blocks near the core]
// Without a workspace, a forward chunk (Note [Forward task chunks]) packs the key and value
// blocks its tasks visit into a ring of slots of its own, a block at slot kvb % slots, where a
// task finds it again while it is still in the core's cache. Packed once per call into buffers
// of the whole sequence (Note [Keys packed on first use]), every block went out to memory and
// back, and packing took an eighth of a bf16 sliding-window forward at S=8192; with the ring
// (and Note [Forward task chunks]) that forward ran 0.9x the time at W=256 in bf16 and 0.95x
// in float32, 0.8x at W=64 in both (2 cores, alternated builds). The ring serves masks whose
// query blocks each visit key blocks within `slots` consecutive ones (a sliding window, a short
// local mask), so that no task evicts a block it visits itself; with wider ones (causal) a
// block would be packed again on every visit, and they keep the packing per call. The packed
// bytes are the same either way.
constexpr int64_t kRingBytes = int64_t{512} << 10;

template <typename T>
class BlockRing {
 public:
  // Slots for a ring of about kRingBytes, or 0 where the mask's visits do not fit one.
  static int64_t slots_for(const FlexProblem& p, const Layout<T>& g) {
    const int64_t pair_bytes = key_bytes(p, g) + value_bytes(p, g);
    const int64_t slots = std::max<int64_t>(2, kRingBytes / pair_bytes);
    return widest_visit(p, g) <= slots ? slots : 0;
  }

  BlockRing(const FlexProblem& p, const Layout<T>& g, int64_t slots)
      : p_(p), g_(g), slots_(slots), key_bytes_(key_bytes(p, g)), value_bytes_(value_bytes(p, g)),
        keys_(scratch<char>(kKeyT, slots * key_bytes_)), values_(scratch<char>(kValueT, slots * value_bytes_)),
        tags_(static_cast<size_t>(slots), -1) {}

  // The packed key and value blocks kvb of (b, kv head hk), packed into their slot unless there.
  std::pair<const void*, const void*> blocks(int64_t b, int64_t hk, int64_t kvb) {
    const int64_t slot = kvb % slots_, tag = tag_of(b, hk, kvb);
    char* key = keys_ + slot * key_bytes_;
    char* value = values_ + slot * value_bytes_;
    if (tags_[static_cast<size_t>(slot)] != tag) {
      const int64_t first = kvb * g_.bkv, rows = g_.cols_of(kvb, p_);
      pack_block(p_, g_, p_.k, b, hk, first, rows, p_.head_dim, Form::TransposedPanels, key);
      pack_block(p_, g_, p_.v, b, hk, first, rows, p_.value_dim, Form::Panels, value);
      tags_[static_cast<size_t>(slot)] = tag;
    }
    return {key, value};
  }

 private:
  static int64_t key_bytes(const FlexProblem& p, const Layout<T>& g) {
    return g.bytes(PackedBlocks<T>::block_size(g, p.head_dim, g.bkv, Form::TransposedPanels));
  }
  static int64_t value_bytes(const FlexProblem& p, const Layout<T>& g) {
    return g.bytes(PackedBlocks<T>::block_size(g, p.value_dim, g.bkv, Form::Panels));
  }
  // The most consecutive key blocks, first to last visited, of any query block.
  static int64_t widest_visit(const FlexProblem& p, const Layout<T>& g) {
    if (!p.has_block_mask) return g.kv_blocks;
    const BlockLists& lists = p.kv_lists;
    int64_t widest = 0;
    for (int64_t row = 0; row < lists.batch * lists.heads * lists.blocks; ++row) {
      int64_t low = std::numeric_limits<int64_t>::max(), high = -1;
      auto see = [&](int32_t count, const int32_t* indices) {
        for (int32_t j = 0; j < count; ++j) {
          low = std::min<int64_t>(low, indices[row * lists.max_entries + j]);
          high = std::max<int64_t>(high, indices[row * lists.max_entries + j]);
        }
      };
      see(lists.num[row], lists.indices);
      if (lists.full_num) see(lists.full_num[row], lists.full_indices);
      if (high >= 0) widest = std::max(widest, high - low + 1);
    }
    return widest;
  }
  int64_t tag_of(int64_t b, int64_t hk, int64_t kvb) const { return (b * p_.heads_kv + hk) * g_.kv_blocks + kvb; }

  const FlexProblem& p_;
  const Layout<T>& g_;
  int64_t slots_, key_bytes_, value_bytes_;
  char* keys_;
  char* values_;
  std::vector<int64_t> tags_;
};

#endif

// Note [Queries in place]
// A forward task's query rows are the score product's A operand as they lie where they are
// already its operand type (bf16 into bf16 products, float32 into float32 ones), in
// contiguous rows of whole pairs whose starts are 64-byte aligned (an AMX tile row that
// straddles two cache lines reads both): no packed copy. The products read the same values,
// so the same bits. bf16 at S=8192, W=256 on AMX: 0.97x the forward's time (alternated
// builds; the copy was 4.6% of it, mostly the wait for the rows, which the products now pay);
// float32 unchanged.
template <typename T>
bool queries_in_place(const FlexProblem& p, const Layout<T>& g, const char* rows) {
  const bool operand_type = (p.dtype == kBFloat16 && g.mm.k_group == 2 && g.mm.operand_bytes == 2) ||
                            (p.dtype == kFloat32 && g.mm.k_group == 1 && g.mm.operand_bytes == 4);
  return operand_type && p.q.stride_col == 1 && p.head_dim % g.mm.k_group == 0 &&
         (p.q.stride_row * g.mm.operand_bytes) % 64 == 0 && reinterpret_cast<uintptr_t>(rows) % 64 == 0;
}

// Note [Forward task chunks]
// A forward task is one query block of one head. Where the key and value blocks go through
// rings (Note [Packed blocks near the core]), the pool runs the tasks in chunks of consecutive
// ones, about kForwardChunksPerThread chunks a thread, so that a chunk's next task finds most of
// its blocks in the ring (a sliding window's next query block reads two of its predecessor's
// three), and the query heads that share a key head (GQA) come one after another at each query
// block, so that they pack its blocks once, not once a head. Otherwise chunks of one task
// balance the load best (a causal mask's query blocks differ in cost by up to the number of
// blocks). A task computes the same values in any chunk, on any thread.
constexpr int64_t kForwardChunksPerThread = 4;

template <typename T>
void forward_impl(const FlexProblem& p, const Target& out, void* lse_out) {
  const Layout<T> g(p, products_for<T>(p.dtype));
  const auto& K = g.k;
  const int64_t E = p.head_dim, Ev = p.value_dim;
  const ScoreScale<T> scale(p, g);
  T* lse = static_cast<T*>(lse_out);
  const ForwardWorkspace<T> w(p, g, p.workspace, p.workspace_slots);
  // Note [Packed blocks near the core], else Note [Keys packed on first use]; a caller's
  // workspace (ember-rt's, always) has no room for the blocks' states.
#ifndef EMBER_RT_CPU
  const int64_t ring_slots = p.workspace ? 0 : BlockRing<T>::slots_for(p, g);
#else
  const int64_t ring_slots = 0;  // a workspace always (Note [Runtime size])
#endif
  const auto when = p.workspace ? PackedBlocks<T>::When::Now : PackedBlocks<T>::When::OnFirstUse;
  std::optional<PackedBlocks<T>> keys, values;
  if (ring_slots == 0) {
    keys.emplace(p, g, p.k, kv_batch_of(p), p.heads_kv, p.kv_len, E, g.bkv, Form::TransposedPanels,
                 p.workspace ? w.keys : nullptr, when);
    values.emplace(p, g, p.v, kv_batch_of(p), p.heads_kv, p.kv_len, Ev, g.bkv, Form::Panels,
                   p.workspace ? w.values : nullptr, when);
  }
  // Consecutive tasks share a chunk where blocks go through rings (Note [Forward task chunks]).
  const int64_t tasks = p.batch * p.heads_q * g.q_blocks;
  const int64_t grain = ring_slots > 0 ? std::max<int64_t>(1, tasks / (kForwardChunksPerThread * num_threads())) : 1;
  run_tasks(p, tasks, grain, w.slots, w.slot_bytes, [&](int64_t lo, int64_t hi, TaskScratch& s) {
    const ForwardBuffers<T> t(p, g, s);
#ifndef EMBER_RT_CPU
    std::optional<BlockRing<T>> ring;
    if (ring_slots > 0) ring.emplace(p, g, ring_slots);
#endif
    for (int64_t task = lo; task < hi; ++task) {
      // Query blocks vary fastest; with rings, the query heads of a GQA group vary faster still,
      // so that they read their key head's blocks from the ring in turn (Note [Forward task
      // chunks]).
      const int64_t inner = ring_slots > 0 ? g.group : 1;
      const int64_t j = task % inner, qb = task / inner % g.q_blocks, outer = task / inner / g.q_blocks;
      const int64_t h = ring_slots > 0 ? outer % p.heads_kv * g.group + j : outer % p.heads_q;
      const int64_t b = ring_slots > 0 ? outer / p.heads_kv : outer / p.heads_q;
      const int64_t hk = h / g.group, q0 = qb * g.bq, rows = g.rows_of(qb, p);
      T* const row_max = t.row_max;
      T* const row_sum = t.row_sum;
      T* const acc = t.acc;
      const char* q_source = at(p.q, b, h, q0, g.item);
      const bool q_in_place = queries_in_place(p, g, q_source);  // Note [Queries in place]
      const void* q_rows = q_in_place ? static_cast<const void*>(q_source) : t.q;
      const int64_t ld_q = q_in_place ? p.q.stride_row : g.ld_qe;
      if (!q_in_place) g.mm.pack_rows(p.dtype, q_source, p.q.stride_row, p.q.stride_col, rows, E, t.q, g.ld_qe);
      std::fill(row_max, row_max + rows, -std::numeric_limits<T>::infinity());
      std::fill(row_sum, row_sum + rows, T(0));
      std::fill(acc, acc + rows * g.ld_ev, T(0));
      for_each_visited(p, p.kv_lists, g.kv_blocks, b, h, qb, [&](int64_t kvb, bool partial) {
        const int64_t kv0 = kvb * g.bkv, cols = g.cols_of(kvb, p);
        if (cols <= 0) return;
#ifndef EMBER_RT_CPU
        const auto [key_block, value_block] =
            ring ? ring->blocks(b, hk, kvb) : std::pair{keys->block(b, hk, kvb), values->block(b, hk, kvb)};
#else
        const void* key_block = keys->block(b, hk, kvb);
        const void* value_block = values->block(b, hk, kvb);
#endif
        const bool masked = partial || p.score_mod;
        for (int64_t r0 = 0; r0 < rows; r0 += g.strip) {  // Note [Score strips]
          const int64_t sr = std::min(g.strip, rows - r0);
          g.mm.gemm(g.operand(q_rows, r0 * ld_q), ld_q, key_block, t.scores, g.ld_s, sr, cols, E, scale.in_product, false);
          apply_mods(p, make_tile(b, h, q0 + r0, kv0, sr, cols, t.scores, g.ld_s), partial, TilePass::Forward);
          g.mm.gemm(softmax_operand(g, t.scores, sr, cols, masked, scale.in_softmax, row_max + r0, row_sum + r0,
                                    acc + r0 * g.ld_ev, Ev, t.probs),
                    g.ld_s, value_block, acc + r0 * g.ld_ev, g.ld_ev, sr, Ev, cols, T(1), true);
        }
      });
      // A row that saw nothing (fully masked) gives output 0 and lse -inf.
      T* row_lse = lse + (b * p.heads_q + h) * p.q_len + q0;
      for (int64_t r = 0; r < rows; ++r) {
        const bool seen = row_sum[r] > T(0);
        row_lse[r] = seen ? row_max[r] + std::log(row_sum[r]) : -std::numeric_limits<T>::infinity();
        row_sum[r] = seen ? T(1) / row_sum[r] : T(0);
      }
      K.store_rows(acc, g.ld_ev, rows, Ev, row_sum, p.dtype, at(out, b, h, q0, g.item), out.stride_row, 1);
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

// The decode path's geometry: query rows per (batch, kv head) and ranges of key blocks.
struct DecodeShape {
  int64_t rows, heads, splits;
  template <typename T>
  DecodeShape(const FlexProblem& p, const Layout<T>& g)
      : rows(g.group * p.q_len), heads(p.batch * p.heads_kv),
        splits(std::clamp<int64_t>(64 / std::max<int64_t>(heads, 1), 1, std::max<int64_t>(g.kv_blocks, 1))) {}
};

// A decode task's buffers: the query rows of a GQA group, one key block's and one value
// block's panels, the score tile and the probabilities as an operand (unused where operands are T).
template <typename T>
struct DecodeBuffers {
  void* q;
  void* key_t;
  void* value;
  T* scores;
  void* probs;
  template <typename Source>
  DecodeBuffers(const FlexProblem& p, const Layout<T>& g, const DecodeShape& d, Source& s)
      : q(take<char>(s, kQ, g.bytes(d.rows * g.ld_qe))), key_t(take<char>(s, kKeyT, g.bytes(g.ld_s * g.ld_qe))),
        value(take<char>(s, kValueT, g.bytes(g.ld_ev * round_up(g.bkv, g.mm.k_group)))),
        scores(take<T>(s, kScores, d.rows * g.ld_s)),
        probs(take<char>(s, kOperand, g.mm.tiles_are_operands ? 0 : g.bytes(d.rows * g.ld_s))) {}
};

// decode_impl's workspace: the ranges' partial results, the merge's rows, then the slots.
template <typename T>
struct DecodeWorkspace {
  T *part_acc, *part_max, *part_sum, *merged, *inverse;
  char* slots;
  int64_t slot_bytes, bytes;
  DecodeWorkspace(const FlexProblem& p, const Layout<T>& g, const DecodeShape& d, void* base, int64_t num_slots) {
    Carver c(base);
    part_acc = c.take<T>(d.heads * d.splits * d.rows * g.ld_ev);
    part_max = c.take<T>(d.heads * d.splits * d.rows);
    part_sum = c.take<T>(d.heads * d.splits * d.rows);
    merged = c.take<T>(d.rows * g.ld_ev);
    inverse = c.take<T>(d.rows);
    slot_bytes = slot_bytes_of<DecodeBuffers<T>>(p, g, d);
    slots = c.take<char>(num_slots * slot_bytes);
    bytes = c.used();
  }
};

// The visited blocks of (b, h, block) as for_each_visited orders them: how many, and the i-th.
int64_t visit_count(const FlexProblem& p, const BlockLists& lists, int64_t all_blocks, int64_t b, int64_t h,
                    int64_t block) {
  if (!p.has_block_mask) return all_blocks;
  const int64_t row = list_row(lists, b, h, block);
  return lists.num[row] + (lists.full_num ? lists.full_num[row] : 0);
}

std::pair<int64_t, bool> visit_at(const FlexProblem& p, const BlockLists& lists, int64_t b, int64_t h, int64_t block,
                                  int64_t i) {
  if (!p.has_block_mask) return {i, false};
  const int64_t row = list_row(lists, b, h, block);
  if (i < lists.num[row]) return {lists.indices[row * lists.max_entries + i], true};
  return {lists.full_indices[row * lists.max_entries + i - lists.num[row]], false};
}

template <typename T>
void decode_impl(const FlexProblem& p, const Target& out, void* lse_out) {
  const Layout<T> g(p, products_for<T>(p.dtype));
  const auto& K = g.k;
  const DecodeShape d(p, g);
  const ScoreScale<T> scale(p, g);
  const int64_t E = p.head_dim, Ev = p.value_dim, rows = d.rows, heads = d.heads, splits = d.splits;
  // Without a workspace, the shared buffers come from memory of its own (the slots are unused).
  std::unique_ptr<char[]> owned;
  if (p.workspace == nullptr)
    owned.reset(new char[static_cast<size_t>(DecodeWorkspace<T>(p, g, d, nullptr, 0).bytes)]);
  const DecodeWorkspace<T> w(p, g, d, p.workspace ? p.workspace : owned.get(), p.workspace_slots);
  run_tasks(p, heads * splits, 1, w.slots, w.slot_bytes, [&](int64_t lo, int64_t hi, TaskScratch& s) {
    const DecodeBuffers<T> t(p, g, d, s);
    T* const scores = t.scores;
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t split = task % splits, bh = task / splits, b = bh / p.heads_kv, hk = bh % p.heads_kv;
      const int64_t h0 = hk * g.group;
      for (int64_t j = 0; j < g.group; ++j)
        g.mm.pack_rows(p.dtype, at(p.q, b, h0 + j, 0, g.item), p.q.stride_row, p.q.stride_col, p.q_len, E,
                       g.operand(t.q, j * p.q_len * g.ld_qe), g.ld_qe);
      T* acc = w.part_acc + task * rows * g.ld_ev;
      T* row_max = w.part_max + task * rows;
      T* row_sum = w.part_sum + task * rows;
      std::fill(row_max, row_max + rows, -std::numeric_limits<T>::infinity());
      std::fill(row_sum, row_sum + rows, T(0));
      std::fill(acc, acc + rows * g.ld_ev, T(0));
      const int64_t n = visit_count(p, p.kv_lists, g.kv_blocks, b, h0, 0);
      for (int64_t i = split * n / splits; i < (split + 1) * n / splits; ++i) {
        const auto [kvb, partial] = visit_at(p, p.kv_lists, b, h0, 0, i);
        const int64_t kv0 = kvb * g.bkv, cols = g.cols_of(kvb, p);
        if (cols <= 0) continue;
        g.mm.pack_panels(p.dtype, at(p.k, b, hk, kv0, g.item), p.k.stride_col, p.k.stride_row, E, cols, t.key_t);
        g.mm.gemm(t.q, g.ld_qe, t.key_t, scores, g.ld_s, rows, cols, E, scale.in_product, false);
        ScoreTile tile = make_tile(b, h0, 0, kv0, rows, cols, scores, g.ld_s);
        tile.rows_per_head = p.q_len;
        apply_mods(p, tile, partial, TilePass::Forward);
        g.mm.pack_panels(p.dtype, at(p.v, b, hk, kv0, g.item), p.v.stride_row, p.v.stride_col, cols, Ev, t.value);
        const bool masked = partial || p.score_mod;
        g.mm.gemm(softmax_operand(g, scores, rows, cols, masked, scale.in_softmax, row_max, row_sum, acc, Ev, t.probs),
                  g.ld_s, t.value, acc, g.ld_ev, rows, Ev, cols, T(1), true);
      }
    }
  });
  // Merge the ranges of each (batch, kv head); its rows are consecutive rows of out and lse.
  T* lse = static_cast<T*>(lse_out);
  for (int64_t bh = 0; bh < heads; ++bh) {
    const int64_t row0 = ((bh / p.heads_kv) * p.heads_q + (bh % p.heads_kv) * g.group) * p.q_len;
    for (int64_t r = 0; r < rows; ++r) {
      T max = -std::numeric_limits<T>::infinity(), sum = 0;
      for (int64_t s = 0; s < splits; ++s) max = std::max(max, w.part_max[(bh * splits + s) * rows + r]);
      T* m = w.merged + r * g.ld_ev;
      std::fill(m, m + Ev, T(0));
      for (int64_t s = 0; s < splits && max != -std::numeric_limits<T>::infinity(); ++s) {
        const int64_t at_row = (bh * splits + s) * rows + r;
        const T weight = std::exp(w.part_max[at_row] - max);
        sum += weight * w.part_sum[at_row];
        for (int64_t j = 0; j < Ev; ++j) m[j] += weight * w.part_acc[at_row * g.ld_ev + j];
      }
      lse[row0 + r] = sum > T(0) ? max + std::log(sum) : -std::numeric_limits<T>::infinity();
      w.inverse[r] = sum > T(0) ? T(1) / sum : T(0);
    }
    // The group's query heads in turn: their rows lie apart where out is not contiguous.
    for (int64_t j = 0; j < g.group; ++j)
      K.store_rows(w.merged + j * p.q_len * g.ld_ev, g.ld_ev, p.q_len, Ev, w.inverse + j * p.q_len, p.dtype,
                   at(out, bh / p.heads_kv, (bh % p.heads_kv) * g.group + j, 0, g.item), out.stride_row, 1);
  }
}

// ---- backward -----------------------------------------------------------------------------

// delta[row] = sum_j grad_out[row, j] * out[row, j] over all B * Hq * L rows.
template <typename T>
std::vector<T> output_dot(const FlexProblem& p, const Operand& out, const Operand& grad_out) {
  const TileKernels<T>& K = tile_kernels<T>();
  const int64_t rows = p.batch * p.heads_q * p.q_len, Ev = p.value_dim;
  const size_t item = element_size(p.dtype);
  std::vector<T> delta(static_cast<size_t>(rows));
  parallel_for(0, rows, 256, [&](int64_t lo, int64_t hi) {
    T* o = scratch<T>(kOut, (hi - lo) * Ev);
    T* d = scratch<T>(kGrad, (hi - lo) * Ev);
    for (int64_t r = lo; r < hi;) {  // a run of rows of one (b, h) at a time
      const int64_t bh = r / p.q_len, row = r % p.q_len, run = std::min(hi - r, p.q_len - row);
      const int64_t b = bh / p.heads_q, h = bh % p.heads_q;
      K.widen_rows(p.dtype, at(out, b, h, row, item), out.stride_row, out.stride_col, run, Ev, o + (r - lo) * Ev, Ev);
      K.widen_rows(p.dtype, at(grad_out, b, h, row, item), grad_out.stride_row, grad_out.stride_col, run, Ev,
                   d + (r - lo) * Ev, Ev);
      r += run;
    }
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

  // q: query rows (A), key_t / value_t: key and value panels (B) of the block, grad_out: rows
  // of dO (A). param_grads: non-null when captured tensors need gradients.
  void run(int64_t b, int64_t h, int64_t q0, int64_t kv0, int64_t rows, int64_t cols, bool partial, const void* q,
           const void* grad_out, const void* key_t, const void* value_t, double* const* param_grads) {
    const auto& K = g.k;
    const int64_t E = p.head_dim, Ev = p.value_dim, row0 = (b * p.heads_q + h) * p.q_len + q0;
    g.mm.gemm(q, g.ld_qe, key_t, scores, g.ld_s, rows, cols, E, static_cast<T>(p.scale), false);
    if (param_grads) std::copy(scores, scores + rows * g.ld_s, raw);
    ScoreTile tile = make_tile(b, h, q0, kv0, rows, cols, scores, g.ld_s);
    tile.dscore = p.score_mod ? dmod : nullptr;
    apply_mods(p, tile, partial, TilePass::Derivative);
    K.probabilities(scores, g.ld_s, rows, cols, lse + row0);
    g.mm.gemm(grad_out, g.ld_qv, value_t, grad, g.ld_s, rows, cols, Ev, T(1), false);
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
  PackedBlocks<T> key_t, value_t, key_panels;  // K^T and V^T (B of q·k, dO·v), K (B of dS·K)
  PackedBlocks<T> q_rows, q_panels, dout_rows, dout_panels;  // Q, dO as A and as B operands

  BackwardPacks(const FlexProblem& p, const Layout<T>& g, const Operand& dO)
      : key_t(pack_keys(p, g, p.k, p.head_dim, Form::TransposedPanels)),
        value_t(pack_keys(p, g, p.v, p.value_dim, Form::TransposedPanels)),
        key_panels(pack_keys(p, g, p.k, p.head_dim, Form::Panels)),
        q_rows(pack_queries(p, g, p.q, p.head_dim, Form::Rows)),
        q_panels(pack_queries(p, g, p.q, p.head_dim, Form::Panels)),
        dout_rows(pack_queries(p, g, dO, p.value_dim, Form::Rows)),
        dout_panels(pack_queries(p, g, dO, p.value_dim, Form::Panels)) {}
};

// Note [Kept score gradients]
// Both backward passes need dS = P * (dP - delta) of every visited (query block, key block)
// tile: the key pass for dK, the query pass for dQ. Where all of them fit 32 MB
// (kept_score_grads_limit(); one operand tile for every block pair of every (b, h), so short
// sequences: the GPT's training step keeps 6 MB), the key pass keeps each tile as the dQ product's operand and the
// query pass only multiplies, sparing two of every tile's seven products and its mask, softmax
// and score-gradient passes. The kept tiles are the ones the query pass would compute, so the
// gradients are bitwise the same. Not where captured tensors need gradients: the query pass
// computes those from the tiles.
std::atomic<int64_t> kept_score_grads_limit_bytes{int64_t{32} << 20};

template <typename T>
class KeptScoreGrads {
 public:
  KeptScoreGrads(const FlexProblem& p, const Layout<T>& g, bool keep)
      : blocks_(g.q_blocks * g.kv_blocks), kv_blocks_(g.kv_blocks), heads_(p.heads_q),
        tile_bytes_(g.bytes(g.bq * g.ld_s)),
        data_(keep && p.batch * p.heads_q * blocks_ * tile_bytes_ <= kept_score_grads_limit()
                  ? allocate_bytes(p.batch * p.heads_q * blocks_ * tile_bytes_)
                  : Bytes(nullptr, FreeBytes{0})) {}
  bool kept() const { return data_ != nullptr; }
  void* tile(int64_t b, int64_t h, int64_t qb, int64_t kvb) const {
    return data_.get() + ((b * heads_ + h) * blocks_ + qb * kv_blocks_ + kvb) * tile_bytes_;
  }

 private:
  int64_t blocks_, kv_blocks_, heads_, tile_bytes_;
  Bytes data_;
};

// dK and dV: one task per key block owns its rows, summing over the query heads of its GQA
// group, the batch when k and v broadcast, and the query blocks that visit it.
template <typename T>
void key_value_grads(const FlexProblem& p, const Layout<T>& g, const BackwardPacks<T>& packs, const T* lse,
                     const T* delta, const Target& dk, const Target& dv, int64_t kv_batch,
                     const KeptScoreGrads<T>& kept) {
  const auto& K = g.k;
  const int64_t E = p.head_dim, Ev = p.value_dim;
  parallel_for(0, kv_batch * p.heads_kv * g.kv_blocks, 1, [&](int64_t lo, int64_t hi) {
    void* transposed = scratch<char>(kTransposed, g.mm.gemm_transposed_tile ? 0 : g.bytes(g.bkv * g.ld_t));
    T* dk_acc = scratch<T>(kAccA, g.bkv * g.ld_e);
    T* dv_acc = scratch<T>(kAccB, g.bkv * g.ld_ev);
    TileGrad<T> tg{p, g, lse, delta, scratch<T>(kScores, g.bq * g.ld_s), scratch<T>(kGrad, g.bq * g.ld_s),
                      scratch<T>(kDmod, g.bq * g.ld_s), nullptr, nullptr};
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t kvb = task % g.kv_blocks, hk = task / g.kv_blocks % p.heads_kv, bk = task / g.kv_blocks / p.heads_kv;
      const int64_t kv0 = kvb * g.bkv, cols = g.cols_of(kvb, p);
      const void* key_t = packs.key_t.block(bk, hk, kvb);
      const void* value_t = packs.value_t.block(bk, hk, kvb);
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
            if (kept.kept()) tile_operand(g, tg.grad, rows, cols, kept.tile(b, h, qb, kvb), true);
            transposed_tile_product(g, tg.scores, rows, cols, transposed, packs.dout_panels.block(b, h, qb), dv_acc,
                                    g.ld_ev, Ev, T(1));
            transposed_tile_product(g, tg.grad, rows, cols, transposed, packs.q_panels.block(b, h, qb), dk_acc, g.ld_e,
                                    E, static_cast<T>(p.scale));
          });
      K.store_rows(dk_acc, g.ld_e, cols, E, nullptr, p.dtype, at(dk, bk, hk, kv0, g.item), dk.stride_row, 1);
      K.store_rows(dv_acc, g.ld_ev, cols, Ev, nullptr, p.dtype, at(dv, bk, hk, kv0, g.item), dv.stride_row, 1);
    }
  });
}

// dQ (and captured-tensor gradients): one task per query block. Captured-tensor gradients
// go to a fixed number of chunk buffers summed in chunk order, so they are deterministic.
template <typename T>
void query_grads(const FlexProblem& p, const Layout<T>& g, const BackwardPacks<T>& packs, const T* lse,
                 const T* delta, const KeptScoreGrads<T>& kept, const Target& dq, int num_params,
                 const int64_t* param_sizes, double* const* param_grads) {
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
    void* grad_operand = scratch<char>(kOperand, g.mm.tiles_are_operands ? 0 : g.bytes(g.bq * g.ld_s));
    TileGrad<T> tg{p, g, lse, delta, scratch<T>(kScores, g.bq * g.ld_s), scratch<T>(kGrad, g.bq * g.ld_s),
                      scratch<T>(kDmod, g.bq * g.ld_s), scratch<T>(kRaw, g.bq * g.ld_s), &chunk_overflow};
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t qb = task % g.q_blocks, h = task / g.q_blocks % p.heads_q, b = task / g.q_blocks / p.heads_q;
      const int64_t hk = h / g.group, q0 = qb * g.bq, rows = g.rows_of(qb, p);
      std::fill(dq_acc, dq_acc + rows * g.ld_e, T(0));
      for_each_visited(p, p.kv_lists, g.kv_blocks, b, h, qb, [&](int64_t kvb, bool partial) {
        const int64_t kv0 = kvb * g.bkv, cols = g.cols_of(kvb, p);
        if (cols <= 0) return;
        const void* grad = kept.kept() ? kept.tile(b, h, qb, kvb) : nullptr;
        if (!grad) {
          tg.run(b, h, q0, kv0, rows, cols, partial, packs.q_rows.block(b, h, qb), packs.dout_rows.block(b, h, qb),
                 packs.key_t.block(b, hk, kvb), packs.value_t.block(b, hk, kvb),
                 num_params > 0 ? chunk_params.data() : nullptr);
          grad = tile_operand(g, tg.grad, rows, cols, grad_operand);
        }
        g.mm.gemm(grad, g.ld_s, packs.key_panels.block(b, hk, kvb), dq_acc, g.ld_e, rows, E, cols,
                  static_cast<T>(p.scale), true);
      });
      K.store_rows(dq_acc, g.ld_e, rows, E, nullptr, p.dtype, at(dq, b, h, q0, g.item), dq.stride_row, 1);
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
void backward_impl(const FlexProblem& p, const Operand& out, const void* lse, const Operand& grad_out,
                   const BackwardTargets& grads, int num_params, const int64_t* param_sizes, double* const* param_grads) {
  const std::vector<T> delta = output_dot<T>(p, out, grad_out);
  const Layout<T> g(p, products_for<T>(p.dtype));
  const BackwardPacks<T> packs(p, g, grad_out);
  const KeptScoreGrads<T> kept(p, g, num_params == 0);  // Note [Kept score gradients]
  key_value_grads<T>(p, g, packs, static_cast<const T*>(lse), delta.data(), grads.dk, grads.dv, kv_batch_of(p), kept);
  query_grads<T>(p, g, packs, static_cast<const T*>(lse), delta.data(), kept, grads.dq, num_params, param_sizes,
                 param_grads);
}

template <typename T>
int64_t workspace_bytes(const FlexProblem& p, int64_t slots, const ProductKernels<T>& products) {
  FlexProblem decode = p;
  decode.q_len = std::min({p.q_len, kMaxDecodeLength, p.q_block});
  const Layout<T> g(p, products), decode_g(decode, products);
  return std::max(ForwardWorkspace<T>(p, g, nullptr, slots).bytes,
                  DecodeWorkspace<T>(decode, decode_g, DecodeShape(decode, decode_g), nullptr, slots).bytes);
}

}  // namespace

int64_t kept_score_grads_limit() { return kept_score_grads_limit_bytes.load(std::memory_order_relaxed); }
void set_kept_score_grads_limit(int64_t bytes) { kept_score_grads_limit_bytes.store(bytes, std::memory_order_relaxed); }

int64_t flex_forward_workspace_bytes(const FlexProblem& problem, int64_t slots) {
  if (problem.dtype == kFloat64) return workspace_bytes<double>(problem, slots, products_for<double>(kFloat64));
  // The float32 layout's size too where bfloat16 products are available: EMBER_CPU_CAPABILITY
  // (or a test) may lower the level between sizing a workspace and running on it.
  return std::max(workspace_bytes<float>(problem, slots, products_for<float>(kFloat32)),
                  workspace_bytes<float>(problem, slots, products_for<float>(problem.dtype)));
}

void flex_forward(const FlexProblem& problem, const Target& out, void* lse) {
  EMBER_CHECK(problem.workspace == nullptr || problem.workspace_slots > 0, "flex_attention",
              "a workspace needs at least one slot, got ", problem.workspace_slots);
  const bool decode = use_decode_path(problem);
  if (problem.dtype == kFloat64) decode ? decode_impl<double>(problem, out, lse) : forward_impl<double>(problem, out, lse);
  else decode ? decode_impl<float>(problem, out, lse) : forward_impl<float>(problem, out, lse);
}

void flex_backward(const FlexProblem& problem, const Operand& out, const void* lse, const Operand& grad_out,
                   const BackwardTargets& grads, int num_params, const int64_t* param_sizes, double* const* param_grads) {
  if (problem.dtype == kFloat64) backward_impl<double>(problem, out, lse, grad_out, grads, num_params, param_sizes, param_grads);
  else backward_impl<float>(problem, out, lse, grad_out, grads, num_params, param_sizes, param_grads);
}

}  // namespace ember::cpu::attention
