// create_block_mask and BlockMask: exact block counts, the q-wise transposes, the dense
// picture, indexing and length adjustment.
#include <gtest/gtest.h>

#include "core/testing.h"
#include "ember/nn/attention.h"

namespace ember::testutil {
namespace {

namespace att = ember::nn::attention;
using att::TileState;

int64_t total(const Tensor& t) { return t.sum(kInt64).item<int64_t>(); }

TEST(BlockMask, CausalCountsAt2048) {
  att::BlockMask m = att::create_block_mask(att::causal_mask(), 1, 1, 2048, 2048, 128);
  EXPECT_EQ(total(m.kv_num_blocks), 16);
  EXPECT_EQ(total(m.full_kv_num_blocks), 120);
  EXPECT_EQ(total(m.q_num_blocks), 16);
  EXPECT_EQ(total(m.full_q_num_blocks), 120);
  EXPECT_DOUBLE_EQ(m.sparsity(), 46.875);
  EXPECT_EQ(m.shape(), (std::vector<int64_t>{1, 1, 2048, 2048}));
  // Query block 3 sees full blocks 0, 1, 2 and the partial diagonal block 3.
  EXPECT_EQ(m.kv_num_blocks.data_ptr<int32_t>()[3], 1);
  EXPECT_EQ(m.kv_indices.data_ptr<int32_t>()[3 * 16], 3);
  EXPECT_EQ(m.full_kv_num_blocks.data_ptr<int32_t>()[3], 3);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(m.full_kv_indices.data_ptr<int32_t>()[3 * 16 + j], j);
  // Key block 14 is visited fully by query block 15 and partially by 14.
  EXPECT_EQ(m.full_q_num_blocks.data_ptr<int32_t>()[14], 1);
  EXPECT_EQ(m.full_q_indices.data_ptr<int32_t>()[14 * 16], 15);
}

// Brute force: a tile is empty, partial or full by the dense mask.
TEST(BlockMask, StatesMatchTheDenseMaskForOddShapes) {
  auto mask = att::and_masks(att::sliding_window_mask(77), [](auto b, auto h, auto q, auto kv) { return (kv + b + h) % 5 != 0 || q < 30; });
  const int64_t B = 2, H = 3, L = 201, S = 173;
  const att::BlockSize size(64, 32);
  att::BlockMask m = att::create_block_mask(mask, B, H, L, S, size);
  Tensor dense = att::create_mask(mask, B, H, L, S);
  const bool* d = dense.data_ptr<bool>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t qb = 0; qb < 4; ++qb)
        for (int64_t kb = 0; kb < 6; ++kb) {
          int64_t visible = 0, count = 0;
          for (int64_t q = qb * 64; q < std::min(L, (qb + 1) * 64); ++q)
            for (int64_t kv = kb * 32; kv < std::min(S, (kb + 1) * 32); ++kv, ++count)
              visible += d[((b * H + h) * L + q) * S + kv];
          const TileState expected = visible == 0 ? TileState::Empty : visible == count ? TileState::Full : TileState::Partial;
          EXPECT_EQ(m.state(b, h, qb, kb), expected) << b << " " << h << " " << qb << " " << kb;
        }
}

// The built-in causal and sliding-window masks carry each query's visible keys as a span
// (Note [Key spans]): it agrees with the mask key by key, and create_block_mask, which counts
// by span, gives the block states of the same mask written as a plain lambda.
TEST(BlockMask, KeySpansAgreeWithTheMasks) {
  auto agrees = [](const auto& mask, const char* name) {
    for (int32_t q = 0; q < 300; ++q) {
      const auto [first, end] = mask.key_span(0, 0, q);
      for (int32_t kv = 0; kv < 300; ++kv)
        ASSERT_EQ(mask(0, 0, q, kv), first <= kv && kv < end) << name << " q " << q << " kv " << kv;
    }
  };
  agrees(att::causal_mask(), "causal");
  for (int32_t window : {1, 7, 64}) agrees(att::sliding_window_mask(window), "window");
  const int64_t L = 201, S = 173;
  const att::BlockSize size(64, 32);
  auto same_states = [&](const att::BlockMask& a, const att::BlockMask& b) {
    for (int64_t qb = 0; qb < 4; ++qb)
      for (int64_t kb = 0; kb < 6; ++kb) EXPECT_EQ(a.state(0, 0, qb, kb), b.state(0, 0, qb, kb)) << qb << " " << kb;
  };
  same_states(att::create_block_mask(att::causal_mask(), 1, 1, L, S, size),
              att::create_block_mask([](auto, auto, auto q, auto kv) { return q >= kv; }, 1, 1, L, S, size));
  same_states(att::create_block_mask(att::sliding_window_mask(77), 1, 1, L, S, size),
              att::create_block_mask([](auto, auto, auto q, auto kv) { return q >= kv && q - kv < 77; }, 1, 1, L, S,
                                     size));
}

TEST(BlockMask, SlidingWindowCounts) {
  // Window 256 at 1024 with 128-blocks: query block i has the partial diagonal block, the
  // full block i-1 (for i >= 1) and the partial block i-2 (for i >= 2).
  att::BlockMask m = att::create_block_mask(att::sliding_window_mask(256), 1, 1, 1024, 1024);
  EXPECT_EQ(total(m.kv_num_blocks), 8 + 6);
  EXPECT_EQ(total(m.full_kv_num_blocks), 7);
  EXPECT_DOUBLE_EQ(m.sparsity(), 100.0 * (1 - 21.0 / 64));
}

TEST(BlockMask, FromKvBlocksRebuildsTransposes) {
  att::BlockMask causal = att::create_block_mask(att::causal_mask(), 1, 1, 512, 512);
  att::BlockMask m = att::BlockMask::from_kv_blocks(causal.kv_num_blocks, causal.kv_indices, causal.full_kv_num_blocks,
                                                    causal.full_kv_indices, 128, causal.mask_mod);
  EXPECT_TRUE(equal(m.q_num_blocks, causal.q_num_blocks));
  EXPECT_TRUE(equal(m.full_q_indices, causal.full_q_indices));
  EXPECT_TRUE(equal(m.to_dense(), causal.to_dense()));
  EXPECT_TRUE(throws_error([&] { att::BlockMask::from_kv_blocks(causal.kv_num_blocks, causal.kv_indices + 9); },
                           {"[BlockMask]", "out of range"}));
}

TEST(BlockMask, IndexAdjustAndToString) {
  att::BlockMask m = att::create_block_mask([](auto b, auto h, auto q, auto kv) { return q >= kv + h + b; }, 2, 2, 256, 256, 64);
  att::BlockMask sub = m.index(1, 0);
  EXPECT_EQ(sub.shape(), (std::vector<int64_t>{1, 1, 256, 256}));
  EXPECT_TRUE(equal(sub.to_dense()[0][0], m.to_dense()[1][0]));
  att::BlockMask small = m.adjust(100, 130);
  EXPECT_EQ(small.shape(), (std::vector<int64_t>{2, 2, 100, 130}));
  EXPECT_TRUE(equal(small.to_dense(), m.to_dense().narrow(2, 0, 2).narrow(3, 0, 3)));
  const std::string picture = att::create_block_mask(att::causal_mask(), 1, 1, 256, 256, 64).to_string();
  EXPECT_NE(picture.find(".   \n#.  \n##. \n###.\n"), std::string::npos) << picture;
}

TEST(BlockMask, CreationDoesNotMaterialiseTheDenseMask) {
  reset_peak_memory_stats();
  const int64_t before = memory_stats().peak_allocated_bytes;
  att::BlockMask m = att::create_block_mask(att::sliding_window_mask(256), 1, 1, 32768, 32768);
  EXPECT_LT(memory_stats().peak_allocated_bytes - before, 4 << 20);  // the dense mask would be 1 GiB
  EXPECT_EQ(total(m.kv_num_blocks) + total(m.full_kv_num_blocks), 256 + 255 + 254);
}

}  // namespace
}  // namespace ember::testutil
