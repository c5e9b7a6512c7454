// Key/value caches for decoding: a contiguous cache with append, and a paged cache (a page
// table from each sequence's logical pages to shared physical pages) like PyTorch's
// experimental PagedAttention.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ember/nn/attention/block_mask.h"
#include "ember/tensor.h"

namespace ember::nn::attention {

// Keys [B, H, max_length, E] and values [B, H, max_length, Ev]; keys()/values() view the
// first length() positions.
class KVCache {
 public:
  KVCache(int64_t batch, int64_t heads, int64_t max_length, int64_t head_dim, int64_t value_dim,
          ScalarType dtype = kFloat32);
  // Over the caller's buffers keys [B, H, max_length, E] and values [B, H, max_length, Ev],
  // whose first `length` positions are filled (an exported program's cache inputs).
  KVCache(Tensor keys, Tensor values, int64_t length);
  // Appends k [B, H, n, E] and v [B, H, n, Ev] (no gradient flows into the cache).
  void append(const Tensor& k, const Tensor& v);
  Tensor keys() const;
  Tensor values() const;
  int64_t length() const { return length_; }
  int64_t max_length() const { return keys_.size(2); }
  // Writes k [B, H, n, E] and v [B, H, n, Ev] at the positions input_pos [n] (int64) given as
  // a tensor, so that a captured decode step (ember/graph.h) writes where each replay's
  // positions say. length() does not change.
  void assign(const Tensor& input_pos, const Tensor& k, const Tensor& v);
  // Marks the first `length` positions filled (0 <= length <= max_length()), after assign()
  // wrote them; append() continues from there.
  void set_length(int64_t length);
  // The whole buffers, [B, H, max_length, E] and [B, H, max_length, Ev].
  const Tensor& key_buffer() const { return keys_; }
  const Tensor& value_buffer() const { return values_; }
  void clear() { length_ = 0; }

 private:
  Tensor keys_, values_;
  int64_t length_ = 0;
};

// Attention of one query position a sequence over `cache`'s buffers at the position input_pos
// [1] (int64), read when the kernel runs, so that a graph captured once (ember/graph.h)
// replays at every position: query [B, Hq, 1, E] attends to the cache's keys 0 .. input_pos
// (window > 0: the last `window` of them, input_pos - key < window) and their values, query
// head h reading key head h / (Hq / Hkv). Flex attention's decoding kernel: the arithmetic of
// flex_attention over cache.keys() with a causal mask. Returns [B, Hq, 1, Ev] in query's dtype
// (no gradient; scale defaults to 1 / sqrt(E)). A position outside [0, max_length()) is an
// ember::Error when the kernel runs.
Tensor decode_attention(const Tensor& query, const KVCache& cache, const Tensor& input_pos,
                        std::optional<double> scale = std::nullopt, int64_t window = 0);

// Physical caches k_cache [1, H, n_pages * page_size, E], v_cache [1, H, n_pages *
// page_size, Ev]; sequence b's logical position p lives at physical position
// page_table[b][p / page_size] * page_size + p % page_size.
class PagedKVCache {
 public:
  PagedKVCache(int64_t n_pages, int64_t page_size, int64_t max_batch_size, int64_t heads, int64_t head_dim,
               int64_t value_dim, ScalarType dtype = kFloat32);

  // Gives sequence batch_idx pages until it holds seq_len positions; throws when the free
  // pages run out.
  void reserve(int64_t batch_idx, int64_t seq_len);
  // Returns the pages of sequence batch_idx to the free list.
  void erase(int64_t batch_idx);
  // Writes k [B, H, S, E], v [B, H, S, Ev] of the sequences batch_idx[i] at their logical
  // positions input_pos [B, S] (int64).
  void assign(const Tensor& batch_idx, const Tensor& input_pos, const Tensor& k, const Tensor& v);
  // The logical block mask [B, H, q_blocks, logical kv blocks] (kv block size must equal the
  // page size) of the sequences batch_idx, as a mask over the physical cache: block indices
  // become physical pages and the mask_mod sees logical key positions.
  BlockMask convert_logical_block_mask(const BlockMask& block_mask, const Tensor& batch_idx) const;

  const Tensor& k_cache() const { return k_cache_; }
  const Tensor& v_cache() const { return v_cache_; }
  // [max_batch_size, pages per sequence] int64, -1 where unassigned.
  const Tensor& page_table() const { return page_table_; }
  int64_t page_size() const { return page_size_; }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }

 private:
  int64_t physical_position(int64_t batch, int64_t logical) const;

  Tensor k_cache_, v_cache_, page_table_;
  int64_t page_size_, n_pages_;
  std::vector<int64_t> capacity_;  // positions reserved per sequence
  std::vector<int64_t> free_;      // free physical pages, next one at the back
};

}  // namespace ember::nn::attention
