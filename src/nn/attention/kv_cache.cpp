#include "ember/nn/attention/kv_cache.h"

#include "core/record_op.h"
#include "ember/autograd.h"
#include "ember/functions.h"
#include "ops/flex_attention.h"

namespace ember::nn::attention {
namespace {

void check_block(const char* op, const Tensor& t, int64_t batch, int64_t heads, int64_t dim, const char* name) {
  EMBER_CHECK(t.defined() && t.dim() == 4, op, name, " must be 4-D [B, H, n, D]");
  EMBER_CHECK(t.size(0) == batch && t.size(1) == heads && t.size(3) == dim, op, name, " of shape ", t.sizes(),
              " does not fit a cache of batch ", batch, ", heads ", heads, ", dim ", dim);
}

// The paged mask_mod: a physical key tile (one page) is the logical page it holds, so the
// logical mask_mod runs on the tile with its logical key offset.
class PagedMaskMod final : public detail::MaskMod {
 public:
  PagedMaskMod(std::shared_ptr<const detail::MaskMod> logical, std::vector<int64_t> logical_page, int64_t n_pages,
               int64_t page_size)
      : logical_(std::move(logical)), logical_page_(std::move(logical_page)), n_pages_(n_pages), page_size_(page_size) {}

  bool at(int32_t b, int32_t h, int32_t q, int32_t kv) const override {
    const int64_t page = logical_page_[static_cast<size_t>(b * n_pages_ + kv / page_size_)];
    return page >= 0 && logical_->at(b, h, q, static_cast<int32_t>(page * page_size_ + kv % page_size_));
  }
  TileState classify(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t) const override { return TileState::Partial; }
  detail::TileFunction tile_function() const override { return {&apply, this}; }

 private:
  static void apply(const void* self, const detail::ScoreTile& tile, detail::TilePass pass) {
    const auto* m = static_cast<const PagedMaskMod*>(self);
    detail::ScoreTile logical = tile;
    const int64_t page = m->logical_page_[static_cast<size_t>(tile.b * m->n_pages_ + tile.kv_start / m->page_size_)];
    logical.kv_start = static_cast<int32_t>(page * m->page_size_ + tile.kv_start % m->page_size_);
    m->logical_->tile_function()(logical, pass);
  }

  std::shared_ptr<const detail::MaskMod> logical_;
  std::vector<int64_t> logical_page_;  // [B, n_pages]: the logical page a physical page holds, or -1
  int64_t n_pages_, page_size_;
};

}  // namespace

KVCache::KVCache(int64_t batch, int64_t heads, int64_t max_length, int64_t head_dim, int64_t value_dim,
                 ScalarType dtype)
    : keys_(zeros({batch, heads, max_length, head_dim}, dtype)), values_(zeros({batch, heads, max_length, value_dim}, dtype)) {}

KVCache::KVCache(Tensor keys, Tensor values, int64_t length)
    : keys_(std::move(keys)), values_(std::move(values)), length_(length) {
  EMBER_CHECK(keys_.defined() && keys_.dim() == 4, "KVCache", "keys must be 4-D [B, H, max_length, E]");
  check_block("KVCache", values_, keys_.size(0), keys_.size(1), values_.defined() ? values_.size(3) : 0, "values");
  EMBER_CHECK(values_.size(2) == keys_.size(2), "KVCache", "keys hold ", keys_.size(2), " positions but values ",
              values_.size(2));
  EMBER_CHECK(length >= 0 && length <= keys_.size(2), "KVCache", "length ", length, " outside [0, ", keys_.size(2),
              "]");
}

void KVCache::append(const Tensor& k, const Tensor& v) {
  check_block("KVCache", k, keys_.size(0), keys_.size(1), keys_.size(3), "k");
  check_block("KVCache", v, values_.size(0), values_.size(1), values_.size(3), "v");
  EMBER_CHECK(k.size(2) == v.size(2), "KVCache", "k has ", k.size(2), " positions but v ", v.size(2));
  EMBER_CHECK(length_ + k.size(2) <= max_length(), "KVCache", "appending ", k.size(2), " positions to ", length_,
              " exceeds max_length ", max_length());
  NoGradGuard no_grad;
  keys_.narrow(2, length_, k.size(2)).copy_(k.detach());
  values_.narrow(2, length_, v.size(2)).copy_(v.detach());
  length_ += k.size(2);
}

void KVCache::assign(const Tensor& input_pos, const Tensor& k, const Tensor& v) {
  check_block("KVCache::assign", k, keys_.size(0), keys_.size(1), keys_.size(3), "k");
  check_block("KVCache::assign", v, values_.size(0), values_.size(1), values_.size(3), "v");
  EMBER_CHECK(input_pos.defined() && input_pos.dim() == 1 && input_pos.scalar_type() == kInt64 &&
                  input_pos.size(0) == k.size(2) && k.size(2) == v.size(2),
              "KVCache::assign", "input_pos must be int64 [n] with n the positions of k and v, got shape ",
              input_pos.defined() ? input_pos.sizes() : IntArrayRef(), " for k ", k.sizes(), " and v ", v.sizes());
  NoGradGuard no_grad;
  Tensor rows = input_pos.view({1, 1, -1, 1});
  keys_.scatter_(2, rows.expand(k.sizes()), k.detach());
  values_.scatter_(2, rows.expand(v.sizes()), v.detach());
}

void KVCache::set_length(int64_t length) {
  EMBER_CHECK(length >= 0 && length <= max_length(), "KVCache::set_length", "length ", length, " outside [0, ",
              max_length(), "]");
  length_ = length;
}

Tensor KVCache::keys() const { return keys_.narrow(2, 0, length_); }
Tensor KVCache::values() const { return values_.narrow(2, 0, length_); }

Tensor decode_attention(const Tensor& query, const KVCache& cache, const Tensor& input_pos, std::optional<double> scale,
                        int64_t window) {
  EMBER_RECORD_OP("decode_attention", query, input_pos);
  EMBER_CHECK(!(is_grad_enabled() && query.defined() && query.requires_grad()), "decode_attention",
              "no backward: run it under NoGradGuard (decoding only)");
  return ops::flex_attention_at_position("decode_attention", query, cache.key_buffer(), cache.value_buffer(), input_pos,
                                         scale, window);
}

PagedKVCache::PagedKVCache(int64_t n_pages, int64_t page_size, int64_t max_batch_size, int64_t heads, int64_t head_dim,
                           int64_t value_dim, ScalarType dtype)
    : page_size_(page_size), n_pages_(n_pages) {
  EMBER_CHECK(n_pages > 0 && page_size > 0 && max_batch_size > 0, "PagedKVCache",
              "n_pages, page_size and max_batch_size must be positive; got ", n_pages, ", ", page_size, ", ", max_batch_size);
  k_cache_ = zeros({1, heads, n_pages * page_size, head_dim}, dtype);
  v_cache_ = zeros({1, heads, n_pages * page_size, value_dim}, dtype);
  page_table_ = full({max_batch_size, n_pages}, -1, kInt64);
  capacity_.assign(static_cast<size_t>(max_batch_size), 0);
  for (int64_t p = n_pages - 1; p >= 0; --p) free_.push_back(p);
}

void PagedKVCache::reserve(int64_t batch_idx, int64_t seq_len) {
  EMBER_CHECK(batch_idx >= 0 && batch_idx < page_table_.size(0), "PagedKVCache", "batch_idx ", batch_idx,
              " out of range [0, ", page_table_.size(0), ")");
  int64_t* table = page_table_.data_ptr<int64_t>() + batch_idx * n_pages_;
  int64_t& capacity = capacity_[static_cast<size_t>(batch_idx)];
  const int64_t needed = (seq_len - capacity + page_size_ - 1) / page_size_;
  EMBER_CHECK(needed <= free_pages(), "PagedKVCache", "sequence ", batch_idx, " needs ", needed, " more pages for length ",
              seq_len, " but only ", free_pages(), " are free");
  for (int64_t i = 0; i < needed; ++i) {
    table[capacity / page_size_] = free_.back();
    free_.pop_back();
    capacity += page_size_;
  }
}

void PagedKVCache::erase(int64_t batch_idx) {
  EMBER_CHECK(batch_idx >= 0 && batch_idx < page_table_.size(0), "PagedKVCache", "batch_idx ", batch_idx,
              " out of range [0, ", page_table_.size(0), ")");
  int64_t* table = page_table_.data_ptr<int64_t>() + batch_idx * n_pages_;
  for (int64_t i = 0; i < n_pages_; ++i)
    if (table[i] >= 0) {
      free_.push_back(table[i]);
      table[i] = -1;
    }
  capacity_[static_cast<size_t>(batch_idx)] = 0;
}

int64_t PagedKVCache::physical_position(int64_t batch, int64_t logical) const {
  EMBER_CHECK(batch >= 0 && batch < page_table_.size(0), "PagedKVCache", "batch_idx ", batch, " out of range [0, ",
              page_table_.size(0), ")");
  EMBER_CHECK(logical >= 0 && logical < capacity_[static_cast<size_t>(batch)], "PagedKVCache", "position ", logical,
              " of sequence ", batch, " is beyond its reserved ", capacity_[static_cast<size_t>(batch)], "; reserve() first");
  return page_table_.data_ptr<int64_t>()[batch * n_pages_ + logical / page_size_] * page_size_ + logical % page_size_;
}

void PagedKVCache::assign(const Tensor& batch_idx, const Tensor& input_pos, const Tensor& k, const Tensor& v) {
  EMBER_CHECK(batch_idx.dim() == 1 && input_pos.dim() == 2 && input_pos.size(0) == batch_idx.size(0), "PagedKVCache",
              "batch_idx [B] and input_pos [B, S] expected; got ", batch_idx.sizes(), " and ", input_pos.sizes());
  const int64_t B = batch_idx.size(0), S = input_pos.size(1);
  check_block("PagedKVCache", k, B, k_cache_.size(1), k_cache_.size(3), "k");
  check_block("PagedKVCache", v, B, v_cache_.size(1), v_cache_.size(3), "v");
  EMBER_CHECK(k.size(2) == S && v.size(2) == S, "PagedKVCache", "k and v need ", S, " positions; got ", k.size(2), ", ", v.size(2));
  const Tensor batches = batch_idx.to(kInt64).contiguous(), positions = input_pos.to(kInt64).contiguous();
  NoGradGuard no_grad;
  for (int64_t i = 0; i < B; ++i)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t at = physical_position(batches.data_ptr<int64_t>()[i], positions.data_ptr<int64_t>()[i * S + s]);
      k_cache_[0].narrow(1, at, 1).copy_(k[i].narrow(1, s, 1).detach());
      v_cache_[0].narrow(1, at, 1).copy_(v[i].narrow(1, s, 1).detach());
    }
}

BlockMask PagedKVCache::convert_logical_block_mask(const BlockMask& block_mask, const Tensor& batch_idx) const {
  EMBER_CHECK(block_mask.BLOCK_SIZE.kv == page_size_, "PagedKVCache", "the block mask's kv block size ",
              block_mask.BLOCK_SIZE.kv, " must equal the page size ", page_size_);
  const Tensor batches = batch_idx.to(kInt64).contiguous();
  const int64_t B = batches.numel(), H = block_mask.kv_num_blocks.size(1), QB = block_mask.num_q_blocks();
  const int64_t mask_batch = block_mask.kv_num_blocks.size(0);
  EMBER_CHECK(mask_batch == 1 || mask_batch == B, "PagedKVCache", "block mask batch ", mask_batch,
              " does not match ", B, " sequences");
  detail::TileStates tiles{B, H, QB, n_pages_, {}};
  tiles.states.assign(static_cast<size_t>(B * H * QB * n_pages_), TileState::Empty);
  std::vector<int64_t> logical_page(static_cast<size_t>(B * n_pages_), -1);
  const int64_t* table = page_table_.data_ptr<int64_t>();
  const detail::TileStates logical = block_mask.tile_states();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t seq = batches.data_ptr<int64_t>()[b];
    EMBER_CHECK(seq >= 0 && seq < page_table_.size(0), "PagedKVCache", "batch_idx ", seq, " out of range");
    for (int64_t page = 0; page < n_pages_; ++page) {
      const int64_t physical = table[seq * n_pages_ + page];
      if (physical >= 0) logical_page[static_cast<size_t>(b * n_pages_ + physical)] = page;
    }
    for (int64_t h = 0; h < H; ++h)
      for (int64_t qb = 0; qb < QB; ++qb)
        for (int64_t kvb = 0; kvb < std::min(block_mask.num_kv_blocks(), n_pages_); ++kvb) {
          const int64_t physical = table[seq * n_pages_ + kvb];
          const TileState s =
              logical.states[static_cast<size_t>((((mask_batch == 1 ? 0 : b) * H + h) * QB + qb) * logical.kv_blocks + kvb)];
          if (physical >= 0 && s != TileState::Empty)
            tiles.states[static_cast<size_t>(((b * H + h) * QB + qb) * n_pages_ + physical)] = s;
        }
  }
  std::shared_ptr<const detail::MaskMod> mod;
  if (block_mask.mask_mod) mod = std::make_shared<PagedMaskMod>(block_mask.mask_mod, std::move(logical_page), n_pages_, page_size_);
  return BlockMask::from_tile_states(tiles, block_mask.BLOCK_SIZE, block_mask.q_len, n_pages_ * page_size_, std::move(mod));
}

}  // namespace ember::nn::attention
