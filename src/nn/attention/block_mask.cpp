#include "ember/nn/attention/block_mask.h"

#include <sstream>

#include "cpu/parallel.h"

namespace ember::nn::attention {
namespace {

const char* kOp = "BlockMask";

int64_t ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }

// The (num, indices, full_num, full_indices) lists of a [B, H, rows, cols] state grid, one
// list per row; with `transposed`, one per column (the q_* lists).
std::tuple<Tensor, Tensor, Tensor, Tensor> lists_of(const detail::TileStates& t, bool transposed) {
  const int64_t rows = transposed ? t.kv_blocks : t.q_blocks, cols = transposed ? t.q_blocks : t.kv_blocks;
  Tensor num = zeros({t.batch, t.heads, rows}, kInt32), indices = zeros({t.batch, t.heads, rows, cols}, kInt32);
  Tensor full_num = zeros({t.batch, t.heads, rows}, kInt32), full_indices = zeros({t.batch, t.heads, rows, cols}, kInt32);
  int32_t *n = num.data_ptr<int32_t>(), *idx = indices.data_ptr<int32_t>();
  int32_t *fn = full_num.data_ptr<int32_t>(), *fidx = full_indices.data_ptr<int32_t>();
  for (int64_t bh = 0; bh < t.batch * t.heads; ++bh)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = bh * rows + r;
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t at = transposed ? (bh * t.q_blocks + c) * t.kv_blocks + r : (bh * t.q_blocks + r) * t.kv_blocks + c;
        const TileState s = t.states[static_cast<size_t>(at)];
        if (s == TileState::Partial) idx[row * cols + n[row]++] = static_cast<int32_t>(c);
        if (s == TileState::Full) fidx[row * cols + fn[row]++] = static_cast<int32_t>(c);
      }
    }
  return {num, indices, full_num, full_indices};
}

// The state grid back from the kv-wise lists.
detail::TileStates states_of(const BlockMask& m) {
  detail::TileStates t{m.kv_num_blocks.size(0), m.kv_num_blocks.size(1), m.num_q_blocks(), m.num_kv_blocks(), {}};
  t.states.assign(static_cast<size_t>(t.batch * t.heads * t.q_blocks * t.kv_blocks), TileState::Empty);
  auto mark = [&](const Tensor& num, const Tensor& indices, TileState state) {
    if (!num.defined()) return;
    const int32_t* n = num.data_ptr<int32_t>();
    const int32_t* idx = indices.data_ptr<int32_t>();
    for (int64_t row = 0; row < t.batch * t.heads * t.q_blocks; ++row)
      for (int32_t j = 0; j < n[row]; ++j) t.states[static_cast<size_t>(row * t.kv_blocks + idx[row * t.kv_blocks + j])] = state;
  };
  mark(m.kv_num_blocks, m.kv_indices, TileState::Partial);
  mark(m.full_kv_num_blocks, m.full_kv_indices, TileState::Full);
  return t;
}

Tensor int32_contiguous(const Tensor& t, const char* name, int64_t dims) {
  EMBER_CHECK(t.dim() == dims, kOp, name, " must have ", dims, " dims; got shape ", t.sizes());
  EMBER_CHECK(!is_floating_point(t.scalar_type()) && t.scalar_type() != kBool, kOp, name, " must hold integers, not ",
              dtype_name(t.scalar_type()));
  return t.to(kInt32).contiguous();
}

void check_indices(const Tensor& num, const Tensor& indices, const char* name) {
  const int64_t cols = indices.size(3);
  const int32_t* n = num.data_ptr<int32_t>();
  const int32_t* idx = indices.data_ptr<int32_t>();
  for (int64_t row = 0; row < num.numel(); ++row) {
    EMBER_CHECK(n[row] >= 0 && n[row] <= cols, kOp, name, " count ", n[row], " out of range [0, ", cols, "]");
    for (int32_t j = 0; j < n[row]; ++j)
      EMBER_CHECK(idx[row * cols + j] >= 0 && idx[row * cols + j] < cols, kOp, name, " index ", idx[row * cols + j],
                  " out of range [0, ", cols, ")");
  }
}

}  // namespace

namespace detail {

TileStates classify_tiles(const MaskMod& mask, int64_t B, int64_t H, int64_t q_len, int64_t kv_len, BlockSize size) {
  EMBER_CHECK(B > 0 && H > 0 && q_len >= 0 && kv_len >= 0, "create_block_mask", "needs B, H > 0 and lengths >= 0; got B ",
              B, ", H ", H, ", Q_LEN ", q_len, ", KV_LEN ", kv_len);
  EMBER_CHECK(size.q > 0 && size.kv > 0, "create_block_mask", "BLOCK_SIZE must be positive; got (", size.q, ", ",
              size.kv, ")");
  EMBER_CHECK(q_len < (int64_t{1} << 31) && kv_len < (int64_t{1} << 31), "create_block_mask",
              "lengths must fit in int32; got ", q_len, ", ", kv_len);
  TileStates t{B, H, ceil_div(q_len, size.q), ceil_div(kv_len, size.kv), {}};
  t.states.resize(static_cast<size_t>(B * H * t.q_blocks * t.kv_blocks));
  cpu::parallel_for(0, B * H * t.q_blocks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      const auto b = static_cast<int32_t>(row / t.q_blocks / H), h = static_cast<int32_t>(row / t.q_blocks % H);
      const int64_t qb = row % t.q_blocks;
      const auto q0 = static_cast<int32_t>(qb * size.q), q1 = static_cast<int32_t>(std::min(q_len, (qb + 1) * size.q));
      for (int64_t kb = 0; kb < t.kv_blocks; ++kb) {
        const auto kv0 = static_cast<int32_t>(kb * size.kv);
        const auto kv1 = static_cast<int32_t>(std::min(kv_len, (kb + 1) * size.kv));
        t.states[static_cast<size_t>(row * t.kv_blocks + kb)] = mask.classify(b, h, q0, q1, kv0, kv1);
      }
    }
  });
  return t;
}

}  // namespace detail

BlockMask BlockMask::from_tile_states(const detail::TileStates& tiles, BlockSize block_size, int64_t q_len,
                                      int64_t kv_len, std::shared_ptr<const detail::MaskMod> mask_mod) {
  BlockMask m;
  std::tie(m.kv_num_blocks, m.kv_indices, m.full_kv_num_blocks, m.full_kv_indices) = lists_of(tiles, false);
  std::tie(m.q_num_blocks, m.q_indices, m.full_q_num_blocks, m.full_q_indices) = lists_of(tiles, true);
  m.BLOCK_SIZE = block_size;
  m.q_len = q_len;
  m.kv_len = kv_len;
  m.mask_mod = std::move(mask_mod);
  return m;
}

BlockMask BlockMask::from_kv_blocks(const Tensor& kv_num_blocks, const Tensor& kv_indices,
                                    const Tensor& full_kv_num_blocks, const Tensor& full_kv_indices,
                                    BlockSize block_size, std::shared_ptr<const detail::MaskMod> mask_mod,
                                    std::optional<std::pair<int64_t, int64_t>> seq_lengths) {
  EMBER_CHECK(block_size.q > 0 && block_size.kv > 0, kOp, "BLOCK_SIZE must be positive");
  BlockMask m;
  m.kv_num_blocks = int32_contiguous(kv_num_blocks, "kv_num_blocks", 3);
  m.kv_indices = int32_contiguous(kv_indices, "kv_indices", 4);
  EMBER_CHECK(std::vector<int64_t>(m.kv_indices.sizes().begin(), m.kv_indices.sizes().begin() + 3) ==
                  m.kv_num_blocks.sizes(),
              kOp, "kv_indices ", m.kv_indices.sizes(), " does not match kv_num_blocks ", m.kv_num_blocks.sizes());
  check_indices(m.kv_num_blocks, m.kv_indices, "kv_indices");
  EMBER_CHECK(full_kv_num_blocks.defined() == full_kv_indices.defined(), kOp,
              "give both full_kv_num_blocks and full_kv_indices or neither");
  if (full_kv_num_blocks.defined()) {
    m.full_kv_num_blocks = int32_contiguous(full_kv_num_blocks, "full_kv_num_blocks", 3);
    m.full_kv_indices = int32_contiguous(full_kv_indices, "full_kv_indices", 4);
    EMBER_CHECK(m.full_kv_indices.sizes() == m.kv_indices.sizes() && m.full_kv_num_blocks.sizes() == m.kv_num_blocks.sizes(),
                kOp, "full lists ", m.full_kv_indices.sizes(), " must match kv lists ", m.kv_indices.sizes());
    check_indices(m.full_kv_num_blocks, m.full_kv_indices, "full_kv_indices");
  }
  const auto lengths = seq_lengths.value_or(
      std::make_pair(m.num_q_blocks() * block_size.q, m.num_kv_blocks() * block_size.kv));
  return from_tile_states(states_of(m), block_size, lengths.first, lengths.second, std::move(mask_mod));
}

detail::TileStates BlockMask::tile_states() const { return states_of(*this); }

std::vector<int64_t> BlockMask::shape() const {
  return {kv_num_blocks.size(0), kv_num_blocks.size(1), q_len, kv_len};
}

double BlockMask::sparsity() const {
  const double total = static_cast<double>(kv_num_blocks.numel() * num_kv_blocks());
  if (total == 0) return 0;
  double visited = kv_num_blocks.sum(kInt64).item<int64_t>();
  if (full_kv_num_blocks.defined()) visited += full_kv_num_blocks.sum(kInt64).item<int64_t>();
  return 100.0 * (1.0 - visited / total);
}

TileState BlockMask::state(int64_t b, int64_t h, int64_t q_block, int64_t kv_block) const {
  const detail::TileStates t = states_of(*this);
  EMBER_CHECK(b >= 0 && b < t.batch && h >= 0 && h < t.heads && q_block >= 0 && q_block < t.q_blocks && kv_block >= 0 &&
                  kv_block < t.kv_blocks,
              kOp, "block (", b, ", ", h, ", ", q_block, ", ", kv_block, ") out of range for ", t.batch, " x ",
              t.heads, " x ", t.q_blocks, " x ", t.kv_blocks, " blocks");
  return t.states[static_cast<size_t>(((b * t.heads + h) * t.q_blocks + q_block) * t.kv_blocks + kv_block)];
}

std::string BlockMask::to_string(int64_t max_blocks) const {
  const detail::TileStates t = states_of(*this);
  std::ostringstream out;
  out << "BlockMask(shape=[" << t.batch << ", " << t.heads << ", " << q_len << ", " << kv_len << "], BLOCK_SIZE=("
      << BLOCK_SIZE.q << ", " << BLOCK_SIZE.kv << "), sparsity=" << sparsity() << "%)\n";
  for (int64_t bh = 0; bh < t.batch * t.heads; ++bh) {
    out << "b=" << bh / t.heads << ", h=" << bh % t.heads << "\n";
    for (int64_t r = 0; r < std::min(t.q_blocks, max_blocks); ++r) {
      for (int64_t c = 0; c < std::min(t.kv_blocks, max_blocks); ++c) {
        const TileState s = t.states[static_cast<size_t>((bh * t.q_blocks + r) * t.kv_blocks + c)];
        out << (s == TileState::Full ? '#' : s == TileState::Partial ? '.' : ' ');
      }
      out << (t.kv_blocks > max_blocks ? "...\n" : "\n");
    }
    if (t.q_blocks > max_blocks) out << "...\n";
  }
  return out.str();
}

BlockMask BlockMask::index(int64_t b, std::optional<int64_t> h, std::optional<std::pair<int64_t, int64_t>> q_blocks) const {
  const detail::TileStates t = states_of(*this);
  EMBER_CHECK(b >= 0 && b < t.batch, kOp, "batch index ", b, " out of range [0, ", t.batch, ")");
  EMBER_CHECK(!h || (*h >= 0 && *h < t.heads), kOp, "head index ", h.value_or(0), " out of range [0, ", t.heads, ")");
  const auto [q_begin, q_end] = q_blocks.value_or(std::make_pair(int64_t{0}, t.q_blocks));
  EMBER_CHECK(0 <= q_begin && q_begin <= q_end && q_end <= t.q_blocks, kOp, "query blocks [", q_begin, ", ", q_end,
              ") out of range [0, ", t.q_blocks, "]");
  const int64_t h_begin = h.value_or(0), h_end = h ? *h + 1 : t.heads;
  detail::TileStates sub{1, h_end - h_begin, q_end - q_begin, t.kv_blocks, {}};
  for (int64_t hh = h_begin; hh < h_end; ++hh)
    for (int64_t r = q_begin; r < q_end; ++r)
      for (int64_t c = 0; c < t.kv_blocks; ++c)
        sub.states.push_back(t.states[static_cast<size_t>(((b * t.heads + hh) * t.q_blocks + r) * t.kv_blocks + c)]);
  const int64_t new_q_len = std::min(q_len, q_end * BLOCK_SIZE.q) - q_begin * BLOCK_SIZE.q;
  return from_tile_states(sub, BLOCK_SIZE, std::max<int64_t>(new_q_len, 0), kv_len, mask_mod);
}

BlockMask BlockMask::adjust(int64_t new_q_len, int64_t new_kv_len) const {
  EMBER_CHECK(new_q_len >= 0 && new_kv_len >= 0, kOp, "adjust needs lengths >= 0; got ", new_q_len, ", ", new_kv_len);
  const detail::TileStates t = states_of(*this);
  detail::TileStates out{t.batch, t.heads, ceil_div(new_q_len, BLOCK_SIZE.q), ceil_div(new_kv_len, BLOCK_SIZE.kv), {}};
  for (int64_t bh = 0; bh < t.batch * t.heads; ++bh)
    for (int64_t r = 0; r < out.q_blocks; ++r)
      for (int64_t c = 0; c < out.kv_blocks; ++c)
        out.states.push_back(r < t.q_blocks && c < t.kv_blocks
                                 ? t.states[static_cast<size_t>((bh * t.q_blocks + r) * t.kv_blocks + c)]
                                 : TileState::Empty);
  return from_tile_states(out, BLOCK_SIZE, new_q_len, new_kv_len, mask_mod);
}

Tensor BlockMask::to_dense() const {
  const detail::TileStates t = states_of(*this);
  Tensor out = empty({t.batch, t.heads, t.q_blocks, t.kv_blocks}, kInt32);
  int32_t* data = out.data_ptr<int32_t>();
  for (TileState s : t.states) *data++ = s != TileState::Empty;
  return out;
}

BlockMask causal_block_mask(int64_t q_len, int64_t kv_len, int64_t q_offset, int64_t window, BlockSize block_size) {
  const int32_t offset = static_cast<int32_t>(q_offset), W = static_cast<int32_t>(window);
  auto mask = [offset, W](auto, auto, auto q, auto kv) {
    return q + offset >= kv && (W == 0 || q + offset - kv < W);
  };
  BlockMask out = create_block_mask(mask, 1, 1, q_len, kv_len, block_size);
  out.causal = BlockMask::CausalSpec{q_offset, window};
  return out;
}

}  // namespace ember::nn::attention
