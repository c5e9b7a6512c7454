// The GPT of the main job: parameter names, the document mask, the fused loss against the
// plain head + cross-entropy, cached decoding against the full forward, bfloat16 compute.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/models/gpt.h"
#include "test_support.h"

namespace ember {
namespace {

namespace F = nn::functional;

// The suites' tiny GPT (test_support.h) with room for 96 positions.
models::GPTConfig small_config(int64_t window = 0) {
  models::GPTConfig c = testutil::tiny_gpt_config(window);
  c.max_seq_len = 96;
  return c;
}

const int64_t kVocab = small_config().vocab_size;

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
}

TEST(GPT, ParameterNamesFollowTheCommonLayout) {
  models::GPTConfig c = small_config();
  c.n_layers = 1;
  models::GPT model(c);
  std::vector<std::string> names;
  for (const auto& item : model->named_parameters()) names.push_back(item.key());
  const std::vector<std::string> expected = {
      "tok_embeddings.weight",         "layers.0.attention.wq.weight",     "layers.0.attention.wk.weight",
      "layers.0.attention.wv.weight",  "layers.0.attention.wo.weight",     "layers.0.feed_forward.w1.weight",
      "layers.0.feed_forward.w2.weight", "layers.0.feed_forward.w3.weight", "layers.0.attention_norm.weight",
      "layers.0.ffn_norm.weight",      "norm.weight"};
  EXPECT_EQ(names, expected);
}

TEST(GPT, PackedDocumentsNeverSeeEachOther) {
  manual_seed(3);
  models::GPT model(small_config());
  NoGradGuard guard;
  // Row 0 packs documents 7 (positions 0..29) and 8 (30..63); row 1 is one document.
  Tensor tokens = randint(kVocab, {2, 64});
  Tensor doc_ids = zeros({2, 64}, kInt32);
  doc_ids.select(0, 0).narrow(0, 0, 30).fill_(7);
  doc_ids.select(0, 0).narrow(0, 30, 34).fill_(8);
  Tensor logits = model->forward(tokens, doc_ids);

  // Changing document 7 changes nothing in document 8 nor in the other row...
  Tensor edited = tokens.clone();
  edited.select(0, 0).narrow(0, 0, 30).copy_(randint(kVocab, {30}));
  Tensor after = model->forward(edited, doc_ids);
  EXPECT_EQ(max_abs_diff(after.select(0, 0).narrow(0, 30, 34), logits.select(0, 0).narrow(0, 30, 34)), 0.0);
  EXPECT_EQ(max_abs_diff(after.select(0, 1), logits.select(0, 1)), 0.0);
  // ...and document 8 alone at the start of a row gives the same logits (positions differ,
  // but rotary attention only sees relative positions).
  Tensor alone = model->forward(tokens.select(0, 0).narrow(0, 30, 34).unsqueeze(0));
  EXPECT_LT(max_abs_diff(alone.squeeze(0), logits.select(0, 0).narrow(0, 30, 34)), 1e-4);
  // Without the document boundary, document 8 does see document 7.
  Tensor one_doc = model->forward(edited);
  EXPECT_GT(max_abs_diff(one_doc.select(0, 0).narrow(0, 30, 34), model->forward(tokens).select(0, 0).narrow(0, 30, 34)),
            1e-3);
}

// Every element of batch_block_mask against the definition: same document, causal, within
// the window; listed full blocks all visible, unlisted blocks all hidden.
void expect_block_mask_matches_definition(const std::vector<std::vector<int32_t>>& rows, int64_t window) {
  const int64_t B = static_cast<int64_t>(rows.size()), T = static_cast<int64_t>(rows[0].size());
  std::vector<int64_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  const nn::attention::BlockMask mask =
      models::batch_block_mask(tensor(flat).view({B, T}).to(kInt32), B, T, window);
  auto visible = [&](int64_t b, int64_t q, int64_t kv) {
    return kv <= q && (window == 0 || q - kv < window) && rows[b][q] == rows[b][kv];
  };
  const int64_t block = mask.BLOCK_SIZE.q, blocks = (T + block - 1) / block;
  const Tensor counts = mask.kv_num_blocks.to(kInt64), indices = mask.kv_indices.to(kInt64);
  const Tensor full_counts = mask.full_kv_num_blocks.to(kInt64), full_indices = mask.full_kv_indices.to(kInt64);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t qb = 0; qb < blocks; ++qb) {
      std::vector<int> state(blocks, 0);  // 0 hidden, 1 partial, 2 full
      for (int64_t i = 0; i < counts[b][0][qb].item<int64_t>(); ++i) state[indices[b][0][qb][i].item<int64_t>()] = 1;
      for (int64_t i = 0; i < full_counts[b][0][qb].item<int64_t>(); ++i)
        state[full_indices[b][0][qb][i].item<int64_t>()] = 2;
      for (int64_t q = qb * block; q < std::min(T, (qb + 1) * block); ++q) {
        for (int64_t kv = 0; kv < T; ++kv) {
          const int s = state[kv / block];
          const bool expected = visible(b, q, kv);
          if (s == 0) ASSERT_FALSE(expected) << "b " << b << " q " << q << " kv " << kv << " in a hidden block";
          if (s == 2) ASSERT_TRUE(expected) << "b " << b << " q " << q << " kv " << kv << " in a full block";
          if (s == 1) ASSERT_EQ(mask.mask_mod->at(b, 0, q, kv), expected) << "b " << b << " q " << q << " kv " << kv;
        }
      }
    }
  }
}

TEST(GPT, BatchBlockMaskFollowsDocumentsCausalityAndWindow) {
  std::vector<int32_t> packed(200), single(200, 4), interleaved(200);
  for (int i = 0; i < 200; ++i) {
    packed[i] = i < 30 ? 0 : i < 150 ? 1 : 2;
    interleaved[i] = (i / 25) % 2;  // documents 0 and 1 alternate: not one run each
  }
  for (int64_t window : {0, 1, 40, 100}) {
    expect_block_mask_matches_definition({packed, single}, window);
    expect_block_mask_matches_definition({packed, interleaved}, window);
  }
}

TEST(GPT, SlidingWindowLimitsWhatAPositionSees) {
  manual_seed(4);
  models::GPT model(small_config(/*window=*/8));
  NoGradGuard guard;
  Tensor tokens = randint(kVocab, {1, 40});
  Tensor logits = model->forward(tokens);
  // With 2 layers, position 39 depends on positions >= 39 - 2 * 7 = 25 only.
  Tensor edited = tokens.clone();
  edited.narrow(1, 0, 25).copy_(randint(kVocab, {1, 25}));
  EXPECT_EQ(max_abs_diff(model->forward(edited).select(1, 39), logits.select(1, 39)), 0.0);
  edited.narrow(1, 25, 1).fill_((tokens[0][25].item<int64_t>() + 1) % kVocab);
  EXPECT_GT(max_abs_diff(model->forward(edited).select(1, 39), logits.select(1, 39)), 1e-6);
}

TEST(GPT, FusedLossEqualsHeadPlusCrossEntropy) {
  manual_seed(5);
  models::GPT model(small_config());
  Tensor tokens = randint(kVocab, {3, 32}), targets = randint(kVocab, {3, 32});
  for (auto [smoothing, z] : {std::pair{0.0, 0.0}, {0.1, 0.0}, {0.0, 1e-3}}) {
    Tensor fused = model->loss(tokens, targets, {}, models::LossOptions{smoothing, z});
    Tensor logits = model->forward(tokens).reshape({-1, kVocab}).to(kFloat64);
    Tensor reference = F::cross_entropy(logits, targets.reshape({-1}), F::CrossEntropyFuncOptions().label_smoothing(smoothing)) +
                       z * logits.logsumexp({1}).pow(2).mean();
    EXPECT_NEAR(fused.item<double>(), reference.item<double>(), 1e-5) << "smoothing " << smoothing << " z " << z;
  }
}

void expect_cached_decoding_matches_full_forward(int64_t window) {
  manual_seed(6);
  models::GPT model(small_config(window));
  NoGradGuard guard;
  const int64_t length = 90;
  Tensor tokens = randint(kVocab, {2, length});
  Tensor full = model->forward(tokens);
  models::GPTCache cache = model->make_cache(2);
  // A prefill of 37 positions, single-token steps, a 3-token step, then the rest at once.
  std::vector<int64_t> steps = {37};
  for (int i = 0; i < 20; ++i) steps.push_back(1);
  steps.push_back(3);
  steps.push_back(length - 37 - 20 - 3);
  int64_t position = 0;
  for (int64_t n : steps) {
    Tensor logits = model->forward_cached(tokens.narrow(1, position, n), cache);
    EXPECT_LT(max_abs_diff(logits, full.narrow(1, position, n)), 1e-4)
        << "window " << window << ", positions " << position << " .. " << position + n - 1;
    position += n;
  }
  EXPECT_EQ(cache.length(), length);
  EXPECT_THROW(model->forward_cached(tokens.narrow(1, 0, 7), cache), Error);  // 97 > max_seq_len 96
}

TEST(GPT, CachedDecodingMatchesTheFullForward) { expect_cached_decoding_matches_full_forward(0); }

TEST(GPT, CachedDecodingMatchesTheFullForwardWithASlidingWindow) { expect_cached_decoding_matches_full_forward(12); }

TEST(GPT, BFloat16ComputeTracksFloat32AndKeepsFloat32Parameters) {
  manual_seed(7);
  models::GPT model(small_config());
  Tensor tokens = randint(kVocab, {4, 48}), targets = randint(kVocab, {4, 48});
  Tensor loss32 = model->loss(tokens, targets, {});
  loss32.backward();
  std::vector<Tensor> grads32;
  for (const Tensor& p : model->parameters()) grads32.push_back(p.grad().clone());
  model->zero_grad();

  model->set_compute_dtype(kBFloat16);
  Tensor loss16 = model->loss(tokens, targets, {});
  loss16.backward();
  EXPECT_NEAR(loss16.item<double>(), loss32.item<double>(), 2e-2 * loss32.item<double>());
  size_t i = 0;
  for (const Tensor& p : model->parameters()) {
    EXPECT_EQ(p.scalar_type(), kFloat32);
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().scalar_type(), kFloat32);
    const Tensor a = p.grad().to(kFloat64).flatten(), b = grads32[i++].to(kFloat64).flatten();
    const double cosine = (a * b).sum().item<double>() / (a.norm().item<double>() * b.norm().item<double>() + 1e-30);
    EXPECT_GT(cosine, 0.98) << "parameter " << i - 1;
  }
  EXPECT_THROW(model->set_compute_dtype(kInt64), Error);
}

TEST(GPT, CallsItsBlocksThroughTheirForwardHooks) {
  manual_seed(3);
  models::GPT model(small_config());
  std::vector<int64_t> calls(2, 0);
  for (size_t i = 0; i < 2; ++i) {
    model->layers->ptr(i)->register_forward_pre_hook([&, i](nn::Module&, std::vector<Tensor>& inputs) {
      EXPECT_EQ(inputs.size(), 3u);  // x, rope_cos, rope_sin
      ++calls[i];
    });
  }
  Tensor tokens = randint(kVocab, {2, 8}), targets = randint(kVocab, {2, 8});
  model->loss(tokens, targets, {});
  model->forward(tokens);
  EXPECT_EQ(calls, std::vector<int64_t>({2, 2}));
}

TEST(GPT, BadInputsAreErrors) {
  models::GPT model(small_config());
  EXPECT_THROW(model->forward(randint(kVocab, {1, 97})), Error);  // longer than max_seq_len
  EXPECT_THROW(model->forward(randint(kVocab, {2, 4, 4})), Error);
  EXPECT_THROW(model->forward(randint(kVocab, {2, 8}), zeros({2, 7}, kInt32)), Error);
  models::GPTCache other;
  EXPECT_THROW(model->forward_cached(randint(kVocab, {1, 4}), other), Error);
  models::GPTConfig bad = small_config();
  bad.n_kv_heads = 3;
  EXPECT_THROW(models::GPT{bad}, Error);
}

}  // namespace
}  // namespace ember
