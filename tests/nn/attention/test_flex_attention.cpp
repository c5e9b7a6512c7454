// flex_attention against the dense float64 reference (tests/nn/attention/reference.h): the
// output, lse and gradients for q, k, v and captured tensors, over mods, masks, lengths,
// block sizes, GQA, broadcasting and dtypes.
#include <gtest/gtest.h>

#include <tuple>

#include "cpu/attention/flex_attention.h"
#include "cpu/capabilities.h"
#include "nn/attention/reference.h"
#include "ember/graph.h"
#include "ember/nn/attention.h"

namespace ember::testutil {
namespace {

namespace att = ember::nn::attention;
using att::BlockSize;
using att::CapturedTensor;

struct CaseOptions {
  ScalarType dtype = kFloat32;
  BlockSize block = {};
  bool backward = true;
  bool non_contiguous = false;
  std::vector<CapturedTensor> captured;
  std::vector<int64_t> mask_batch_heads = {1, 1};
};

Tolerance attention_tolerance(ScalarType dtype) {
  switch (dtype) {
    case kFloat64: return {1e-9, 1e-10};
    case kFloat32: return {2e-4, 2e-5};
    default: return {3e-2, 3e-2};
  }
}

Tensor input(const std::vector<double>& values_, IntArrayRef sizes, const CaseOptions& o) {
  Tensor t = make(values_, sizes, o.dtype);
  if (o.non_contiguous) t = t.transpose(1, 2).contiguous().transpose(1, 2);  // same values, strided
  return t.requires_grad_(o.backward);
}

template <typename ScoreMod, typename Mask>
void check_flex(const AttentionShape& s, ScoreMod score_mod, Mask mask, const CaseOptions& o = {}) {
  SCOPED_TRACE("B " + std::to_string(s.B) + " Hq " + std::to_string(s.Hq) + " Hkv " + std::to_string(s.Hkv) + " L " +
               std::to_string(s.L) + " S " + std::to_string(s.S) + " E " + std::to_string(s.E) + " dtype " +
               dtype_name(o.dtype));
  Tensor q = input(uniform_values(s.B * s.Hq * s.L * s.E, -1.5, 1.5, 1), {s.B, s.Hq, s.L, s.E}, o);
  Tensor k = input(uniform_values(s.kv_batch() * s.Hkv * s.S * s.E, -1.5, 1.5, 2), {s.kv_batch(), s.Hkv, s.S, s.E}, o);
  Tensor v = input(uniform_values(s.kv_batch() * s.Hkv * s.S * s.Ev, -1, 1, 3), {s.kv_batch(), s.Hkv, s.S, s.Ev}, o);
  const std::vector<double> grad_out = uniform_values(s.B * s.Hq * s.L * s.Ev, -1, 1, 4);
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.E));
  att::BlockMask block_mask =
      att::create_block_mask(mask, o.mask_batch_heads[0], o.mask_batch_heads[1], s.L, s.S, o.block);
  auto result = att::flex_attention(
      q, k, v, score_mod, block_mask,
      att::FlexAttentionOptions().set_enable_gqa(true).set_return_lse(true).set_captured(o.captured));
  std::vector<int64_t> param_sizes;
  for (size_t i = 0; i < o.captured.size(); ++i) {
    o.captured[i].set_slot(static_cast<int>(i));
    param_sizes.push_back(o.captured[i].numel());
  }
  const DenseAttention ref = dense_attention(s, values(q), values(k), values(v), o.backward ? grad_out : std::vector<double>{},
                                             scale, score_mod, mask, param_sizes);
  for (const auto& c : o.captured) c.set_slot(-1);
  const Tolerance tol = attention_tolerance(o.dtype);
  EXPECT_TRUE(all_close(result.output, ref.out, tol)) << "output";
  EXPECT_TRUE(all_close(result.lse, ref.lse, tol)) << "lse";
  if (!o.backward) return;
  (result.output.to(kFloat64) * make(grad_out, {s.B, s.Hq, s.L, s.Ev}, kFloat64)).sum().backward();
  EXPECT_TRUE(all_close(q.grad(), ref.dq, tol)) << "dq";
  EXPECT_TRUE(all_close(k.grad(), ref.dk, tol)) << "dk";
  EXPECT_TRUE(all_close(v.grad(), ref.dv, tol)) << "dv";
  for (size_t i = 0; i < o.captured.size(); ++i)
    EXPECT_TRUE(all_close(o.captured[i].tensor().grad(), ref.dparams[i], tol)) << "captured " << i;
}

const AttentionShape kSmall{2, 2, 2, 37, 45, 16, 8};

auto identity() {
  return [](auto score, auto, auto, auto, auto) { return score; };
}
auto everything() { return att::noop_mask(); }

// ---- score mods ----------------------------------------------------------------------------

TEST(FlexAttention, ScoreModIdentityTimesTwoSquared) {
  check_flex(kSmall, identity(), everything());
  check_flex(kSmall, [](auto score, auto, auto, auto, auto) { return score * 2; }, everything());
  check_flex(kSmall, [](auto score, auto, auto, auto, auto) { return score * score; }, everything());
}

TEST(FlexAttention, ScoreModCausalAndInverseCausal) {
  const AttentionShape s{1, 2, 2, 40, 40, 8, 8};
  auto causal = [](auto score, auto, auto, auto q, auto kv) {
    return q >= kv ? score : decltype(score)(-std::numeric_limits<double>::infinity());
  };
  auto inverse = [](auto score, auto, auto, auto q, auto kv) {
    return q <= kv ? score : decltype(score)(-std::numeric_limits<double>::infinity());
  };
  check_flex(s, causal, everything());
  check_flex(s, inverse, everything());
}

TEST(FlexAttention, ScoreModRelativeBiasAlibiSoftCap) {
  check_flex(kSmall, [](auto score, auto, auto, auto q, auto kv) { return score + 0.05 * (q - kv); }, everything());
  check_flex(kSmall, att::alibi_score_mod(2), att::causal_mask());
  check_flex(kSmall, att::soft_cap_score_mod(0.5), everything());
}

TEST(FlexAttention, ScoreModTrig) {
  auto trig = [](auto score, auto b, auto, auto, auto) {
    return att::sin(score) * att::cos(b) + att::tan(score * 0.3) + att::cos(score);
  };
  check_flex(kSmall, trig, everything());
}

TEST(FlexAttention, CapturedPerHeadScaleGetsGradients) {
  Tensor scale = make({0.5, 1.5}, {2}, kFloat32).requires_grad_();
  CapturedTensor head_scale(scale);
  CaseOptions o;
  o.captured = {head_scale};
  check_flex(kSmall, [head_scale](auto score, auto, auto h, auto, auto) { return score * head_scale(h); },
             att::causal_mask(), o);
}

TEST(FlexAttention, CapturedRelativeBiasTableGetsGradients) {
  const int32_t max_distance = 45;
  Tensor table = make(uniform_values(2 * max_distance - 1, -0.5, 0.5, 9), {2 * max_distance - 1}, kFloat32).requires_grad_();
  CapturedTensor bias(table);
  CaseOptions o;
  o.captured = {bias};
  check_flex(kSmall, att::relative_bias_score_mod(bias, max_distance), att::sliding_window_mask(20), o);
}

// ---- masks ---------------------------------------------------------------------------------

TEST(FlexAttention, MasksAndCombinations) {
  const AttentionShape s{1, 2, 2, 150, 150, 16, 16};
  CaseOptions o;
  o.block = 32;
  auto ids = std::make_shared<std::vector<int32_t>>();
  for (int i = 0; i < 150; ++i) ids->push_back(i < 40 ? 0 : i < 97 ? 1 : 2);
  auto skip_odd = [](auto, auto, auto, auto kv) { return kv % 2 == 0; };
  check_flex(s, identity(), att::sliding_window_mask(24), o);
  check_flex(s, identity(), att::symmetric_window_mask(10), o);
  check_flex(s, identity(), att::document_mask(ids), o);
  check_flex(s, identity(), att::prefix_lm_mask(50), o);
  check_flex(s, identity(), skip_odd, o);
  check_flex(s, identity(), att::and_masks(att::document_mask(ids), att::causal_mask()), o);
  check_flex(s, identity(), att::or_masks(att::prefix_lm_mask(20), att::sliding_window_mask(8)), o);
  check_flex(s, identity(), att::and_masks(skip_odd, att::sliding_window_mask(40)), o);
}

TEST(FlexAttention, FullyMaskedRowsGiveZeroOutputAndGradients) {
  // Strictly causal: query 0 sees nothing; odd queries see nothing either.
  auto mask = [](auto, auto, auto q, auto kv) { return kv < q && q % 2 == 0; };
  check_flex(AttentionShape{1, 1, 1, 33, 33, 8, 8}, identity(), mask);
  CaseOptions o;
  o.block = 16;
  check_flex(AttentionShape{1, 1, 1, 33, 33, 8, 8}, att::soft_cap_score_mod(2.0), mask, o);
}

// ---- shapes -----------------------------------------------------------------------------------

TEST(FlexAttention, Lengths) {
  for (int64_t n : {1, 37, 127, 129}) check_flex(AttentionShape{1, 2, 2, n, n, 16, 16}, identity(), att::causal_mask());
  CaseOptions o;
  o.backward = false;
  check_flex(AttentionShape{1, 1, 1, 1023, 1023, 16, 16}, identity(), att::sliding_window_mask(100), o);
}

TEST(FlexAttention, QueryAndKeyLengthsDiffer) {
  check_flex(AttentionShape{1, 2, 2, 20, 300, 16, 24}, identity(), everything());
  check_flex(AttentionShape{1, 2, 2, 300, 20, 16, 24}, identity(), att::causal_mask());
}

TEST(FlexAttention, BlockSizes) {
  const AttentionShape s{1, 2, 2, 300, 260, 16, 16};
  for (BlockSize size : {BlockSize(64), BlockSize(128), BlockSize(128, 64)}) {
    CaseOptions o;
    o.block = size;
    check_flex(s, identity(), att::sliding_window_mask(70), o);
  }
}

TEST(FlexAttention, GroupedQueryAttention) {
  for (auto [hq, hkv] : {std::pair<int64_t, int64_t>{4, 2}, {4, 1}, {16, 1}})
    check_flex(AttentionShape{1, hq, hkv, 40, 50, 8, 8}, [](auto s, auto, auto h, auto, auto) { return s * (1 + h); },
               att::causal_mask());
}

// The forward's chunks of consecutive query blocks (Note [Forward task chunks]) run across
// batches and heads (and a GQA group's heads in turn); each (batch, key head) keeps its own key
// and value blocks in a chunk's ring (Note [Packed blocks near the core]), in bf16 and float32,
// at any thread count. Rings of two (float32) and four (bf16) slots of 128 x 256 blocks take
// each slot again for a later block.
TEST(FlexAttention, ChunksAcrossBatchesAndHeads) {
  const int threads_before = get_num_threads();
  for (ScalarType dtype : {kFloat32, kBFloat16})
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      set_num_threads(threads);
      CaseOptions o;
      o.dtype = dtype;
      o.block = 32;
      o.backward = false;
      check_flex(AttentionShape{3, 1, 1, 100, 100, 16, 16}, identity(), att::sliding_window_mask(40), o);
      check_flex(AttentionShape{3, 2, 1, 100, 100, 16, 16}, identity(), att::sliding_window_mask(40), o);
      check_flex(AttentionShape{2, 3, 3, 100, 100, 16, 16}, identity(), att::sliding_window_mask(40), o);
      check_flex(AttentionShape{1, 4, 2, 100, 100, 16, 16}, identity(), att::sliding_window_mask(40), o);
    }
  set_num_threads(1);  // chunks of five query blocks: each visits five key blocks
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    CaseOptions o;
    o.dtype = dtype;
    o.block = 128;
    o.backward = false;
    check_flex(AttentionShape{1, 3, 3, 800, 800, 256, 256}, identity(), att::sliding_window_mask(64), o);
  }
  set_num_threads(threads_before);
}

TEST(FlexAttention, BatchBroadcastOfKeysAndValues) {
  AttentionShape s{3, 2, 2, 30, 30, 8, 8};
  s.Bk = 1;
  check_flex(s, [](auto score, auto b, auto, auto, auto) { return score * (b + 1); }, att::causal_mask());
}

TEST(FlexAttention, PerBatchAndHeadMasks) {
  CaseOptions o;
  o.mask_batch_heads = {2, 2};
  o.block = 16;
  check_flex(kSmall, identity(), [](auto b, auto h, auto q, auto kv) { return (q + kv + b + h) % 3 != 0; }, o);
}

TEST(FlexAttention, NonContiguousInputs) {
  CaseOptions o;
  o.non_contiguous = true;
  check_flex(kSmall, identity(), att::causal_mask(), o);
}

TEST(FlexAttention, HalfPrecisionAccumulatesInFloat) {
  for (ScalarType dtype : {kBFloat16, kFloat16}) {
    CaseOptions o;
    o.dtype = dtype;
    check_flex(kSmall, identity(), att::sliding_window_mask(16), o);
  }
}

// From avx512_bf16 up, bfloat16 products take bfloat16 operands (VDPBF16PS, on AMX tiles at
// avx512_amx; P and dS rounded to bfloat16 per tile); below, they widen to float32. Odd head sizes and
// ragged blocks pad the pairs of k values (and leave pairs past whole 32-value chunks to
// VDPBF16PS at avx512_amx); the last shape takes the decode path.
TEST(FlexAttention, Bfloat16OnEveryInstructionSet) {
  cpu::for_each_capability([] {
    CaseOptions o;
    o.dtype = kBFloat16;
    o.block = 32;
    check_flex(AttentionShape{1, 4, 2, 67, 131, 9, 5}, att::soft_cap_score_mod(20.0), att::causal_mask(), o);
    o.block = {};
    check_flex(AttentionShape{1, 2, 1, 200, 300, 64, 64}, identity(), att::sliding_window_mask(150), o);
    check_flex(AttentionShape{2, 4, 2, 3, 300, 32, 16}, identity(), everything(), o);
    // Key blocks of more than 64 vectors (1056 columns): a window's rows see none of the last
    // columns of a tile; the full mask's rows see them all, the last mask's only columns past
    // 1000 (some past 1024, in a masked tile).
    o.block = BlockSize(32, 1056);
    check_flex(AttentionShape{1, 1, 1, 40, 1100, 16, 16}, identity(), att::sliding_window_mask(600), o);
    check_flex(AttentionShape{1, 1, 1, 40, 1100, 16, 16}, identity(), everything(), o);
    check_flex(AttentionShape{1, 1, 1, 40, 1100, 16, 16}, identity(),
               [](auto, auto, auto q, auto kv) { return kv - q >= 1000; }, o);
  });
}

// Without a score_mod, products on AMX tiles leave the scale to the softmax (Note [Scale in the
// softmax]): the same bits as with a score_mod, which makes the product apply it. The mask
// leaves the first rows of the second query block nothing visible in its first key block, and
// row 0 of each head nothing at all; the decode path (three queries) takes the same route.
TEST(FlexAttention, Bfloat16ScaleInTheSoftmaxGivesTheSameBits) {
  cpu::for_each_capability([] {
    for (int64_t queries : {int64_t{200}, int64_t{3}}) {
      const int64_t keys = 300, E = 64;
      Tensor q = make(uniform_values(2 * queries * E, -3, 3, 1), {1, 2, queries, E}, kBFloat16);
      Tensor k = make(uniform_values(2 * keys * E, -3, 3, 2), {1, 2, keys, E}, kBFloat16);
      Tensor v = make(uniform_values(2 * keys * E, -1, 1, 3), {1, 2, keys, E}, kBFloat16);
      auto mask = [](auto, auto, auto q_idx, auto kv_idx) { return q_idx > 0 && kv_idx <= q_idx + 40 && kv_idx + 90 > q_idx; };
      att::BlockMask block_mask = att::create_block_mask(mask, 1, 1, queries, keys);
      for (double scale : {0.125, 0.3, -0.7}) {
        SCOPED_TRACE("queries " + std::to_string(queries) + " scale " + std::to_string(scale));
        const auto o = att::FlexAttentionOptions().set_scale(scale).set_return_lse(true);
        auto plain = att::flex_attention(q, k, v, block_mask, o);
        auto with_mod = att::flex_attention(q, k, v, identity(), block_mask, o);
        EXPECT_TRUE(equal(plain.output, with_mod.output));
        EXPECT_TRUE(equal(plain.lse, with_mod.lse));
      }
    }
  });
}

TEST(FlexAttention, Float64) {
  CaseOptions o;
  o.dtype = kFloat64;
  check_flex(kSmall, att::soft_cap_score_mod(1.0), att::causal_mask(), o);
}

TEST(FlexAttention, DefaultsArePlainAttention) {
  Tensor q = make(uniform_values(2 * 3 * 8, -1, 1, 5), {1, 2, 3, 8}, kFloat32);
  Tensor k = make(uniform_values(2 * 5 * 8, -1, 1, 6), {1, 2, 5, 8}, kFloat32);
  Tensor v = make(uniform_values(2 * 5 * 4, -1, 1, 7), {1, 2, 5, 4}, kFloat32);
  Tensor out = att::flex_attention(q, k, v);
  const DenseAttention ref = dense_attention(AttentionShape{1, 2, 2, 3, 5, 8, 4}, values(q), values(k), values(v), {},
                                             1 / std::sqrt(8.0), identity(), everything());
  EXPECT_TRUE(all_close(out, ref.out, attention_tolerance(kFloat32)));
  Tensor scaled = att::flex_attention(q, k, v, std::nullopt, att::FlexAttentionOptions().set_scale(0.25));
  const DenseAttention ref2 = dense_attention(AttentionShape{1, 2, 2, 3, 5, 8, 4}, values(q), values(k), values(v), {},
                                              0.25, identity(), everything());
  EXPECT_TRUE(all_close(scaled, ref2.out, attention_tolerance(kFloat32)));
}

TEST(FlexAttention, TypeErasedMods) {
  att::ScoreModFunction mod = [](att::Dual s, int32_t, int32_t, int32_t, int32_t) { return s * 3.0; };
  att::MaskModFunction mask = [](int32_t, int32_t, int32_t q, int32_t kv) { return q >= kv; };
  check_flex(kSmall, mod, mask);
}

// ---- gradcheck and determinism -------------------------------------------------------------------

TEST(FlexAttention, GradcheckFloat64) {
  Tensor bias = make(uniform_values(3, -0.5, 0.5, 11), {3}, kFloat64).requires_grad_();
  CapturedTensor captured(bias);
  auto mod = [captured](auto score, auto, auto h, auto q, auto kv) {
    return att::tanh(score) * 2 + captured(h) * (q - kv) * 0.1;
  };
  att::BlockMask mask = att::create_block_mask(att::sliding_window_mask(5), 1, 1, 7, 7, 4);
  auto fn = [&](const std::vector<Tensor>& in) -> Tensor {
    return att::flex_attention(in[0], in[1], in[2], mod, mask,
                               att::FlexAttentionOptions().set_enable_gqa(true).set_captured({captured}));
  };
  Tensor q = make(uniform_values(1 * 3 * 7 * 4, -1, 1, 12), {1, 3, 7, 4}, kFloat64).requires_grad_();
  Tensor k = make(uniform_values(1 * 1 * 7 * 4, -1, 1, 13), {1, 1, 7, 4}, kFloat64).requires_grad_();
  Tensor v = make(uniform_values(1 * 1 * 7 * 3, -1, 1, 14), {1, 1, 7, 3}, kFloat64).requires_grad_();
  EXPECT_TRUE(gradients_match(fn, {q, k, v, bias}));
}

TEST(FlexAttention, BackwardIsBitwiseIdenticalForAnyThreadCount) {
  const int threads_before = get_num_threads();
  use_deterministic_algorithms(true);
  Tensor table = make(uniform_values(59, -0.5, 0.5, 21), {59}, kFloat32).requires_grad_();
  CapturedTensor bias(table);
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    std::vector<std::vector<double>> reference;
    for (int threads : {1, 2, 4}) {
      set_num_threads(threads);
      Tensor q = make(uniform_values(2 * 4 * 200 * 16, -1, 1, 15), {2, 4, 200, 16}, dtype).requires_grad_();
      Tensor k = make(uniform_values(2 * 2 * 200 * 16, -1, 1, 16), {2, 2, 200, 16}, dtype).requires_grad_();
      Tensor v = make(uniform_values(2 * 2 * 200 * 16, -1, 1, 17), {2, 2, 200, 16}, dtype).requires_grad_();
      table.set_grad({});
      att::BlockMask mask = att::create_block_mask(att::sliding_window_mask(50), 1, 1, 200, 200, 32);
      Tensor out = att::flex_attention(q, k, v, att::relative_bias_score_mod(bias, 30), mask,
                                       att::FlexAttentionOptions().set_enable_gqa(true).set_captured({bias}));
      out.to(kFloat32).pow(2).sum().backward();
      std::vector<std::vector<double>> got = {values(out), values(q.grad()), values(k.grad()), values(v.grad()),
                                              values(table.grad())};
      if (reference.empty()) reference = got;
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], reference[i]) << dtype_name(dtype) << " tensor " << i << ", threads " << threads;
    }
  }
  set_num_threads(threads_before);
  use_deterministic_algorithms(false);
}

// The backward keeps its key pass's score gradients for the dQ products where they fit
// (Note [Kept score gradients] in src/cpu/attention/flex_attention.cpp): the same bits as
// computing them again in the query pass, over partial and full blocks, GQA, a score_mod,
// query and key lengths that end in part blocks, and a batch with its own document mask.
TEST(FlexAttention, KeptScoreGradientsGiveTheSameBitsAsRecomputed) {
  const int64_t limit = cpu::attention::kept_score_grads_limit();
  auto mask = [](auto b, auto, auto q, auto kv) { return (q >= kv) & ((b == 0) | ((q < 40) == (kv < 40))); };
  auto soft_cap = [](auto score, auto, auto h, auto q, auto kv) {
    return 3 * att::tanh(score / 3) + 0.01 * (h + 1) * (q - kv);
  };
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    std::vector<std::vector<double>> reference;
    for (int64_t kept_limit : {limit, int64_t{0}}) {
      cpu::attention::set_kept_score_grads_limit(kept_limit);
      Tensor q = make(uniform_values(2 * 4 * 100 * 16, -1.5, 1.5, 31), {2, 4, 100, 16}, dtype).requires_grad_();
      Tensor k = make(uniform_values(2 * 2 * 90 * 16, -1.5, 1.5, 32), {2, 2, 90, 16}, dtype).requires_grad_();
      Tensor v = make(uniform_values(2 * 2 * 90 * 8, -1, 1, 33), {2, 2, 90, 8}, dtype).requires_grad_();
      att::BlockMask block_mask = att::create_block_mask(mask, 2, 1, 100, 90, 32);
      Tensor out = att::flex_attention(q, k, v, soft_cap, block_mask, att::FlexAttentionOptions().set_enable_gqa(true));
      out.to(kFloat32).pow(2).sum().backward();
      std::vector<std::vector<double>> got = {values(q.grad()), values(k.grad()), values(v.grad())};
      if (reference.empty()) reference = got;
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], reference[i]) << dtype_name(dtype) << " gradient " << i << ", limit " << kept_limit;
    }
  }
  cpu::attention::set_kept_score_grads_limit(limit);
}

// Query rows whose starts are 64-byte aligned go into the score products as they lie (Note
// [Queries in place] in src/cpu/attention/flex_attention.cpp): contiguous rows, and rows
// 64 bytes apart more than their length; rows 16 bytes longer are packed first. The same bits
// every way, bf16 and float32, GQA, partial and full blocks, a ragged last query block.
TEST(FlexAttention, QueriesInPlaceGiveTheSameBitsAsPacked) {
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    const int64_t E = 32, per_16_bytes = dtype == kFloat32 ? 4 : 8;
    Tensor k = make(uniform_values(2 * 2 * 150 * E, -1.5, 1.5, 42), {2, 2, 150, E}, dtype);
    Tensor v = make(uniform_values(2 * 2 * 150 * E, -1, 1, 43), {2, 2, 150, E}, dtype);
    att::BlockMask mask = att::create_block_mask(att::sliding_window_mask(70), 1, 1, 150, 150, 32);
    const auto options = att::FlexAttentionOptions().set_enable_gqa(true);
    std::vector<std::vector<double>> outputs;
    for (int64_t pad : {int64_t{0}, 4 * per_16_bytes, per_16_bytes}) {  // in place twice, then packed
      Tensor wide = make(uniform_values(2 * 4 * 150 * E, -1.5, 1.5, 41), {2, 4, 150, E}, dtype);
      if (pad > 0) wide = cat({wide, zeros({2, 4, 150, pad}, dtype)}, 3);
      outputs.push_back(values(att::flex_attention(wide.narrow(3, 0, E), k, v, mask, options)));
    }
    EXPECT_EQ(outputs[0], outputs[2]) << dtype_name(dtype) << ": contiguous";
    EXPECT_EQ(outputs[1], outputs[2]) << dtype_name(dtype) << ": rows 64 bytes apart";
  }
}

// The span-filled built-in masks (Note [Key spans] in block_mask.h) against the same masks
// written as plain lambdas, masked key by key: the same output and gradients, bit for bit,
// with partial tiles cut by the span at both ends and query and key lengths that differ. The
// score_mod and its derivative are NaN past the mask on either side (sqrt of a negative):
// masked keys must contribute nothing.
TEST(FlexAttention, KeySpanMasksGiveTheSameBitsAsPerKeyMasks) {
  auto window_mod = [](auto score, auto, auto, auto q, auto kv) {
    return score * att::sqrt((q - kv + 1) * (45 - (q - kv)) * 0.002);
  };
  auto causal_mod = [](auto score, auto, auto, auto q, auto kv) { return score * att::sqrt((q - kv + 1) * 0.01); };
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    auto run = [&](const auto& score_mod, const att::BlockMask& mask) {
      Tensor q = make(uniform_values(2 * 2 * 150 * 16, -1.5, 1.5, 51), {2, 2, 150, 16}, dtype).requires_grad_();
      Tensor k = make(uniform_values(2 * 2 * 170 * 16, -1.5, 1.5, 52), {2, 2, 170, 16}, dtype).requires_grad_();
      Tensor v = make(uniform_values(2 * 2 * 170 * 16, -1, 1, 53), {2, 2, 170, 16}, dtype).requires_grad_();
      Tensor out = att::flex_attention(q, k, v, score_mod, mask);
      out.to(kFloat32).pow(2).sum().backward();
      return std::vector<std::vector<double>>{values(out), values(q.grad()), values(k.grad()), values(v.grad())};
    };
    EXPECT_EQ(run(window_mod, att::create_block_mask(att::sliding_window_mask(45), 1, 1, 150, 170, 32)),
              run(window_mod, att::create_block_mask([](auto, auto, auto q, auto kv) { return q >= kv && q - kv < 45; },
                                                     1, 1, 150, 170, 32)))
        << dtype_name(dtype) << " window";
    EXPECT_EQ(run(causal_mod, att::create_block_mask(att::causal_mask(), 1, 1, 150, 170, 32)),
              run(causal_mod, att::create_block_mask([](auto, auto, auto q, auto kv) { return q >= kv; }, 1, 1, 150,
                                                     170, 32)))
        << dtype_name(dtype) << " causal";
  }
}

// The output is laid out as the query (dimensions in the order of its strides, as PyTorch's
// attention allocates it) and each gradient as its input: transposed views of [B, L, H, E]
// projections give an output, and gradients, whose transposes back are contiguous. Values the
// same bits as with contiguous inputs, prefill (two threads' worth of query blocks) and decoding
// (GQA groups whose query heads lie apart), with a strided output gradient.
TEST(FlexAttention, OutputAndGradientsFollowTheInputsLayout) {
  for (ScalarType dtype : {kFloat32, kBFloat16})
    for (int64_t L : {int64_t{3}, int64_t{150}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " L " + std::to_string(L));
      const int64_t B = 2, Hq = 4, Hkv = 2, E = 16;
      Tensor q_rows = make(uniform_values(B * L * Hq * E, -1, 1, 41), {B, L, Hq, E}, dtype);
      Tensor k_rows = make(uniform_values(B * L * Hkv * E, -1, 1, 42), {B, L, Hkv, E}, dtype);
      Tensor v_rows = make(uniform_values(B * L * Hkv * E, -1, 1, 43), {B, L, Hkv, E}, dtype);
      Tensor g_rows = make(uniform_values(B * L * Hq * E, -1, 1, 44), {B, L, Hq, E}, dtype);
      att::BlockMask mask = att::create_block_mask(att::causal_mask(), 1, 1, L, L, 32);
      const auto options = att::FlexAttentionOptions().set_enable_gqa(true);
      // The reference: contiguous [B, H, L, E] leaves.
      Tensor q0 = q_rows.transpose(1, 2).contiguous().requires_grad_();
      Tensor k0 = k_rows.transpose(1, 2).contiguous().requires_grad_();
      Tensor v0 = v_rows.transpose(1, 2).contiguous().requires_grad_();
      Tensor out0 = att::flex_attention(q0, k0, v0, mask, options);
      out0.backward(g_rows.transpose(1, 2).contiguous());
      // Leaves [B, L, H, E], attended to through their transposed views.
      Tensor q_leaf = q_rows.clone().requires_grad_(), k_leaf = k_rows.clone().requires_grad_(),
             v_leaf = v_rows.clone().requires_grad_();
      Tensor out = att::flex_attention(q_leaf.transpose(1, 2), k_leaf.transpose(1, 2), v_leaf.transpose(1, 2), mask,
                                       options);
      EXPECT_TRUE(out.transpose(1, 2).is_contiguous()) << out.strides();
      out.backward(g_rows.transpose(1, 2));
      EXPECT_TRUE(equal(out, out0));
      EXPECT_TRUE(equal(q_leaf.grad().transpose(1, 2), q0.grad()));
      EXPECT_TRUE(equal(k_leaf.grad().transpose(1, 2), k0.grad()));
      EXPECT_TRUE(equal(v_leaf.grad().transpose(1, 2), v0.grad()));
    }
}

// A sliding window's key and value blocks go through each chunk's ring (Note [Packed blocks near
// the core]). A window as long as the sequence (causal) visits more blocks than a ring holds
// (a bf16 one holds 128 blocks of 32 x 32), so each block is packed once, by the first task
// that needs it (Note [Keys packed on first use]): the query heads sharing a key head claim and
// wait on the same blocks. Either way the results are the same for any thread count.
TEST(FlexAttention, PackedKeysGiveTheSameResultForAnyThreadCount) {
  const int threads_before = get_num_threads();
  for (ScalarType dtype : {kFloat32, kBFloat16})
    for (const auto& [length, heads, window] : {std::tuple<int64_t, int64_t, int32_t>{300, 8, 70}, {4200, 2, 4200}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " length " + std::to_string(length));
      Tensor q = make(uniform_values(heads * length * 32, -1, 1, 31), {1, heads, length, 32}, dtype);
      Tensor k = make(uniform_values(length * 32, -1, 1, 32), {1, 1, length, 32}, dtype);
      Tensor v = make(uniform_values(length * 32, -1, 1, 33), {1, 1, length, 32}, dtype);
      att::BlockMask mask = att::create_block_mask(att::sliding_window_mask(window), 1, 1, length, length, 32);
      const auto options = att::FlexAttentionOptions().set_enable_gqa(true);
      set_num_threads(1);
      const std::vector<double> reference = values(att::flex_attention(q, k, v, mask, options));
      for (int threads : {2, 3, 4})
        for (int round = 0; round < 6; ++round) {
          set_num_threads(threads);
          ASSERT_EQ(values(att::flex_attention(q, k, v, mask, options)), reference)
              << threads << " threads, round " << round;
        }
    }
  set_num_threads(threads_before);
}

// ---- errors ---------------------------------------------------------------------------------------

TEST(FlexAttention, RejectsBadInputs) {
  Tensor q = zeros({1, 4, 8, 16}), k = zeros({1, 2, 8, 16}), v = zeros({1, 2, 8, 16});
  EXPECT_TRUE(throws_error([&] { att::flex_attention(q, k, v); }, {"[flex_attention]", "enable_gqa"}));
  EXPECT_TRUE(throws_error([&] { att::flex_attention(q, zeros({1, 3, 8, 16}), zeros({1, 3, 8, 16}), std::nullopt,
                                                     att::FlexAttentionOptions().set_enable_gqa(true)); },
                           {"multiple"}));
  EXPECT_TRUE(throws_error([&] { att::flex_attention(q, zeros({1, 4, 8, 15}), zeros({1, 4, 8, 16})); }, {"head dim"}));
  EXPECT_TRUE(throws_error([&] { att::flex_attention(zeros({4, 8, 16}), k, v); }, {"4-D"}));
  att::BlockMask mask = att::create_block_mask(att::causal_mask(), 1, 1, 16, 16);
  EXPECT_TRUE(throws_error([&] { att::flex_attention(zeros({1, 2, 8, 16}), k, v, mask); }, {"Q_LEN 16"}));
  EXPECT_TRUE(throws_error([&] { att::flex_attention(q.to(kInt32), k, v); }, {"float32"}));
}

}  // namespace
}  // namespace ember::testutil

namespace ember::testutil {
namespace {

// ---- decoding ------------------------------------------------------------------------------------

TEST(FlexDecode, ShortQueriesSplitKeysAndPackGqaGroups) {
  // L <= 16 takes the decode path: 4 query heads per key head in one tile, keys split.
  const int32_t position = 690;
  auto mask = [position](auto, auto, auto q, auto kv) { return q + position >= kv && q + position - kv < 300; };
  CaseOptions o;
  o.block = BlockSize(16, 64);
  check_flex(AttentionShape{2, 8, 2, 3, 700, 16, 16}, [](auto s, auto, auto h, auto q, auto) { return s * (1 + h) + q; },
             mask, o);
  check_flex(AttentionShape{1, 4, 1, 1, 1000, 32, 8}, identity(), everything());
}

TEST(KVCache, AppendsAndViewsThePrefix) {
  att::KVCache cache(1, 2, 10, 4, 3);
  Tensor k1 = make(uniform_values(2 * 3 * 4, -1, 1, 31), {1, 2, 3, 4}, kFloat32);
  Tensor v1 = make(uniform_values(2 * 3 * 3, -1, 1, 32), {1, 2, 3, 3}, kFloat32);
  Tensor k2 = make(uniform_values(2 * 4 * 4, -1, 1, 33), {1, 2, 4, 4}, kFloat32);
  Tensor v2 = make(uniform_values(2 * 4 * 3, -1, 1, 34), {1, 2, 4, 3}, kFloat32);
  cache.append(k1, v1);
  cache.append(k2, v2);
  EXPECT_EQ(cache.length(), 7);
  EXPECT_TRUE(equal(cache.keys(), cat({k1, k2}, 2)));
  EXPECT_TRUE(equal(cache.values(), cat({v1, v2}, 2)));
  EXPECT_TRUE(throws_error([&] { cache.append(k2, v2); }, {"[KVCache]", "max_length 10"}));
}

TEST(PagedKVCache, MatchesAttentionOverTheLogicalCache) {
  const int64_t page = 16, H = 2, E = 8, L = 3;
  const std::vector<int64_t> lengths = {40, 25};
  att::PagedKVCache cache(8, page, 2, H, E, E);
  cache.reserve(0, 16);
  cache.reserve(1, 16);
  cache.reserve(0, 40);
  cache.reserve(1, 25);
  EXPECT_EQ(cache.free_pages(), 3);
  std::vector<std::vector<double>> keys, vals;
  for (int64_t b = 0; b < 2; ++b) {
    const int64_t n = lengths[static_cast<size_t>(b)];
    keys.push_back(uniform_values(H * n * E, -1, 1, 40 + static_cast<uint32_t>(b)));
    vals.push_back(uniform_values(H * n * E, -1, 1, 50 + static_cast<uint32_t>(b)));
    std::vector<int64_t> positions(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) positions[static_cast<size_t>(i)] = i;
    cache.assign(tensor({b}), tensor(positions).view({1, n}), make(keys.back(), {1, H, n, E}, kFloat32),
                 make(vals.back(), {1, H, n, E}, kFloat32));
  }
  auto offsets = std::make_shared<std::vector<int32_t>>(std::vector<int32_t>{37, 22});
  auto mask = [offsets](auto b, auto, auto q, auto kv) { return kv <= q + (*offsets)[b]; };
  att::BlockMask logical = att::create_block_mask(mask, 2, 1, L, 8 * page, BlockSize(16, page));
  att::BlockMask physical = cache.convert_logical_block_mask(logical, tensor({0, 1}));
  const std::vector<double> q = uniform_values(2 * H * L * E, -1, 1, 60);
  Tensor out = att::flex_attention(make(q, {2, H, L, E}, kFloat32), cache.k_cache(), cache.v_cache(), physical);
  for (int64_t b = 0; b < 2; ++b) {
    const int64_t n = lengths[static_cast<size_t>(b)];
    const std::vector<double> qb(q.begin() + b * H * L * E, q.begin() + (b + 1) * H * L * E);
    auto seq_mask = [&](auto, auto, auto qi, auto kv) { return kv <= qi + (*offsets)[static_cast<size_t>(b)]; };
    const DenseAttention ref = dense_attention(AttentionShape{1, H, H, L, n, E, E}, qb, keys[static_cast<size_t>(b)],
                                               vals[static_cast<size_t>(b)], {}, 1 / std::sqrt(double(E)), identity(), seq_mask);
    EXPECT_TRUE(all_close(out[b], ref.out, attention_tolerance(kFloat32))) << "sequence " << b;
  }
  cache.erase(0);
  EXPECT_EQ(cache.free_pages(), 6);
  EXPECT_TRUE(throws_error([&] { cache.reserve(1, 1000); }, {"[PagedKVCache]", "free"}));
}

// ---- decode_attention -----------------------------------------------------------------------------

// The keys a query at `position` sees under decode_attention's rule.
auto sees_up_to(int64_t position, int64_t window) {
  return [position, window](auto, auto, auto, auto kv) {
    return kv <= position && (window == 0 || position - kv < window);
  };
}

TEST(DecodeAttention, AttendsToTheKeysUpToThePositionAndItsWindow) {
  const int64_t B = 2, Hq = 6, Hkv = 2, M = 150, E = 16, Ev = 8;
  const auto keys = uniform_values(B * Hkv * M * E, -1, 1, 80), vals = uniform_values(B * Hkv * M * Ev, -1, 1, 81);
  const auto q = uniform_values(B * Hq * E, -1, 1, 82);
  NoGradGuard no_grad;
  for (ScalarType dtype : {kFloat32, kBFloat16, kFloat64}) {
    att::KVCache cache(B, Hkv, M, E, Ev, dtype);
    cache.assign(arange(M, kInt64), make(keys, {B, Hkv, M, E}, dtype), make(vals, {B, Hkv, M, Ev}, dtype));
    const Tensor query = make(q, {B, Hq, 1, E}, dtype);
    for (int64_t window : {0, 37})
      for (int64_t position : {0, 1, 36, 37, 90, 149}) {
        const Tensor out = att::decode_attention(query, cache, tensor(std::vector<int64_t>{position}), 0.3, window);
        ASSERT_EQ(out.sizes(), (std::vector<int64_t>{B, Hq, 1, Ev}));
        EXPECT_EQ(out.scalar_type(), dtype);
        const DenseAttention ref = dense_attention(AttentionShape{B, Hq, Hkv, 1, M, E, Ev}, q, keys, vals, {}, 0.3,
                                                   identity(), sees_up_to(position, window));
        EXPECT_TRUE(all_close(out, ref.out, attention_tolerance(dtype)))
            << dtype_name(dtype) << " window " << window << " position " << position;
      }
  }
}

TEST(DecodeAttention, OneCapturedGraphReplaysAtEachPosition) {
  const int64_t M = 40, E = 8;
  att::KVCache cache(1, 2, M, E, E);
  const auto keys = uniform_values(2 * M * E, -1, 1, 83), vals = uniform_values(2 * M * E, -1, 1, 84);
  cache.assign(arange(M, kInt64), make(keys, {1, 2, M, E}, kFloat32), make(vals, {1, 2, M, E}, kFloat32));
  const Tensor query = make(uniform_values(4 * E, -1, 1, 85), {1, 4, 1, E}, kFloat32);
  NoGradGuard no_grad;
  Tensor position = zeros({1}, kInt64), out;
  Graph graph;
  graph.capture([&] { out = att::decode_attention(query, cache, position, std::nullopt, 5); });
  for (int64_t p : {3, 17, 39, 0}) {
    position.fill_(p);
    graph.replay();
    const Tensor eager = att::decode_attention(query, cache, tensor(std::vector<int64_t>{p}), std::nullopt, 5);
    EXPECT_TRUE(equal(out, eager)) << "position " << p;
  }
  position.fill_(M);
  EXPECT_TRUE(throws_error([&] { graph.replay(); }, {"[decode_attention]", "input_pos 40", "[0, 40)"}));
}

TEST(DecodeAttention, BadInputsAreNamedErrors) {
  att::KVCache cache(1, 2, 10, 4, 4);
  const Tensor pos = tensor(std::vector<int64_t>{2});
  NoGradGuard no_grad;
  EXPECT_TRUE(throws_error([&] { att::decode_attention(zeros({1, 4, 2, 4}), cache, pos); },
                           {"[decode_attention]", "one query position"}));
  EXPECT_TRUE(throws_error([&] { att::decode_attention(zeros({1, 3, 1, 4}), cache, pos); },
                           {"[decode_attention]", "multiple of key heads"}));
  EXPECT_TRUE(throws_error([&] { att::decode_attention(zeros({1, 4, 1, 4}), cache, pos.to(kInt32)); },
                           {"[decode_attention]", "input_pos must be int64"}));
  EXPECT_TRUE(throws_error([&] { att::decode_attention(zeros({1, 4, 1, 4}), cache, tensor(std::vector<int64_t>{-1})); },
                           {"[decode_attention]", "input_pos -1"}));
  EXPECT_TRUE(throws_error([&] { att::decode_attention(zeros({1, 4, 1, 4}), cache, pos, std::nullopt, -2); },
                           {"[decode_attention]", "window"}));
}

// ---- scaled_dot_product_attention -------------------------------------------------------------------

TEST(ScaledDotProductAttention, CausalBoolAndFloatMasksMatchTheReference) {
  const AttentionShape s{2, 4, 2, 70, 90, 16, 8};
  const auto q = uniform_values(s.B * s.Hq * s.L * s.E, -1, 1, 70), k = uniform_values(s.B * s.Hkv * s.S * s.E, -1, 1, 71),
             v = uniform_values(s.B * s.Hkv * s.S * s.Ev, -1, 1, 72);
  Tensor tq = make(q, {s.B, s.Hq, s.L, s.E}, kFloat32), tk = make(k, {s.B, s.Hkv, s.S, s.E}, kFloat32),
         tv = make(v, {s.B, s.Hkv, s.S, s.Ev}, kFloat32);
  const double scale = 1 / std::sqrt(16.0);
  Tensor causal = att::scaled_dot_product_attention(tq, tk, tv, {}, 0.0, true, std::nullopt, true);
  EXPECT_TRUE(all_close(causal, dense_attention(s, q, k, v, {}, scale, identity(), att::causal_mask()).out,
                        attention_tolerance(kFloat32)));
  Tensor bool_mask = att::create_mask([](auto, auto, auto q, auto kv) { return (q * 7 + kv) % 4 != 0; }, 1, 1, s.L, s.S);
  Tensor masked = att::scaled_dot_product_attention(tq, tk, tv, bool_mask[0][0], 0.0, false, 0.3, true);
  EXPECT_TRUE(all_close(masked, dense_attention(s, q, k, v, {}, 0.3, identity(),
                                                [](auto, auto, auto q, auto kv) { return (q * 7 + kv) % 4 != 0; }).out,
                        attention_tolerance(kFloat32)));
  const auto bias = uniform_values(s.L * s.S, -1, 1, 73);
  Tensor added = att::scaled_dot_product_attention(tq, tk, tv, make(bias, {s.L, s.S}, kFloat32), 0.0, false, std::nullopt, true);
  auto bias_mod = [&](auto score, auto, auto, auto q, auto kv) { return score + bias[static_cast<size_t>(q * s.S + kv)]; };
  EXPECT_TRUE(all_close(added, dense_attention(s, q, k, v, {}, scale, bias_mod, everything()).out, attention_tolerance(kFloat32)));
  EXPECT_TRUE(throws_error([&] { att::scaled_dot_product_attention(tq, tk, tv, bool_mask, 0.0, true); }, {"not both"}));
}

}  // namespace
}  // namespace ember::testutil
