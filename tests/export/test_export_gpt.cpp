// The GPT exported as prefill + decode: the interpreted methods equal eager forward_cached
// bitwise (logits and the caches they write) at prompt lengths and positions inside the
// bounds; the plan holds; the file round-trips.
#include <gtest/gtest.h>

#include <filesystem>

#include "ember/ember.h"
#include "ember/models/gpt.h"
#include "export_test_utils.h"
#include "sample_models.h"
#include "train/export_gpt.h"

namespace ember {
namespace {

using test::tiny_gpt_config;

Tensor random_tokens(int64_t n, int64_t vocab) { return randint(0, vocab, {1, n}, TensorOptions().dtype(kInt64)); }

// (window, compute dtype)
class ExportGPT : public ::testing::TestWithParam<std::tuple<int64_t, ScalarType>> {};

TEST_P(ExportGPT, PrefillThenDecodeEqualEagerBitwise) {
  manual_seed(20);
  models::GPT model(tiny_gpt_config(std::get<0>(GetParam())));
  model->set_compute_dtype(std::get<1>(GetParam()));
  model->eval();
  ExportedProgram program = train::export_gpt(model);
  NoGradGuard no_grad;
  for (int64_t prompt : {1, 5, 8, 17, 30}) {
    Tensor tokens = random_tokens(prompt, model->config.vocab_size);
    models::GPTCache eager_cache = model->make_cache(1);
    Tensor eager = model->forward_cached(tokens, eager_cache);
    std::vector<Tensor> caches = train::make_gpt_cache_inputs(model);
    std::vector<Tensor> inputs = {tokens};
    inputs.insert(inputs.end(), caches.begin(), caches.end());
    Tensor exported = program.run(inputs, "prefill")[0];
    ASSERT_TRUE(test::bitwise_equal(exported, eager)) << "prefill of " << prompt;
    for (int64_t step = 0; step < 3; ++step) {
      const int64_t pos = prompt + step;
      Tensor next = random_tokens(1, model->config.vocab_size);
      Tensor eager_step = model->forward_cached(next, eager_cache);
      std::vector<Tensor> decode_inputs = {next, full({}, pos, TensorOptions().dtype(kInt64))};
      decode_inputs.insert(decode_inputs.end(), caches.begin(), caches.end());
      Tensor exported_step = program.run(decode_inputs, "decode")[0];
      ASSERT_TRUE(test::bitwise_equal(exported_step, eager_step)) << "decode at " << pos;
    }
    for (size_t layer = 0; layer < eager_cache.layers.size(); ++layer) {
      const int64_t n = eager_cache.length();
      EXPECT_TRUE(test::bitwise_equal(caches[2 * layer].narrow(2, 0, n), eager_cache.layers[layer].keys()));
      EXPECT_TRUE(test::bitwise_equal(caches[2 * layer + 1].narrow(2, 0, n), eager_cache.layers[layer].values()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WindowAndDtype, ExportGPT,
                         ::testing::Values(std::make_tuple(0, kFloat32), std::make_tuple(6, kFloat32),
                                           std::make_tuple(0, kBFloat16)));

TEST(ExportGPTBounds, PositionsOutsideTheBoundsAreErrors) {
  manual_seed(21);
  models::GPT model(tiny_gpt_config());
  ExportedProgram program = train::export_gpt(model);
  std::vector<Tensor> caches = train::make_gpt_cache_inputs(model);
  std::vector<Tensor> decode = {random_tokens(1, 40), full({}, int64_t{48}, TensorOptions().dtype(kInt64))};
  decode.insert(decode.end(), caches.begin(), caches.end());
  test::expect_error([&] { program.run(decode, "decode"); }, {"symbol pos = 48", "[0, 47]"});
  std::vector<Tensor> prefill = {random_tokens(49, 40)};
  prefill.insert(prefill.end(), caches.begin(), caches.end());
  test::expect_error([&] { program.run(prefill, "prefill"); }, {"symbol T = 49", "[1, 48]"});
}

TEST(ExportGPTBounds, DecodeUpToTheLastPosition) {
  manual_seed(24);
  models::GPT model(tiny_gpt_config());
  ExportedProgram program = train::export_gpt(model);
  NoGradGuard no_grad;
  const int64_t max_len = model->config.max_seq_len;
  Tensor tokens = random_tokens(max_len - 2, model->config.vocab_size);
  models::GPTCache eager_cache = model->make_cache(1);
  model->forward_cached(tokens, eager_cache);
  std::vector<Tensor> caches = train::make_gpt_cache_inputs(model);
  std::vector<Tensor> inputs = {tokens};
  inputs.insert(inputs.end(), caches.begin(), caches.end());
  program.run(inputs, "prefill");
  for (int64_t pos = max_len - 2; pos < max_len; ++pos) {
    Tensor next = random_tokens(1, model->config.vocab_size);
    std::vector<Tensor> step = {next, full({}, pos, TensorOptions().dtype(kInt64))};
    step.insert(step.end(), caches.begin(), caches.end());
    EXPECT_TRUE(test::bitwise_equal(program.run(step, "decode")[0], model->forward_cached(next, eager_cache)))
        << "decode at " << pos;
  }
}

TEST(ExportGPTRefusal, AnOpaqueMaskModIsRefused) {
  manual_seed(25);
  models::GPT model(tiny_gpt_config());
  // The training forward's document mask is a mask_mod over captured ids: opaque code.
  auto forward = [model](const std::vector<Tensor>& in) mutable { return std::vector<Tensor>{model->forward(in[0])}; };
  test::expect_error([&] { export_program(*model, forward, {random_tokens(8, 40)}); },
                     {"[flex_attention]", "cannot be exported", "mask_mod", "causal_block_mask"});
}

TEST(ExportGPTPlan, ArenaWithinTheTargetAndNoOverlap) {
  manual_seed(22);
  models::GPT model(tiny_gpt_config());
  ExportedProgram program = train::export_gpt(model);
  for (const char* name : {"prefill", "decode"}) {
    const auto& m = program.method(name);
    test::expect_plan_disjoint(m);
    EXPECT_LE(static_cast<double>(m.arena_bytes), 0.6 * static_cast<double>(m.intermediate_bytes)) << name;
  }
  EXPECT_EQ(program.program().operators(),
            (std::vector<std::string>{"add", "clone", "copy_", "embedding", "flex_attention", "linear", "rms_norm",
                                      "rotary_embedding", "swiglu"}));
}

TEST(ExportGPTFile, RoundTrips) {
  manual_seed(23);
  models::GPT model(tiny_gpt_config());
  ExportedProgram program = train::export_gpt(model);
  const std::string path = test::temp_path("gpt.ember");
  program.save(path);
  test::expect_same_program(ExportedProgram::load(path).program(), program.program());
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ember
