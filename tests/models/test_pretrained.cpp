// Pretrained checkpoints against transformers: the fixtures under tests/fixtures/pretrained/models
// (tiny random checkpoints saved by transformers with its logits, greedy continuations and
// perplexity), loading in float32 and bfloat16, cached decoding, save_pretrained round trips,
// the config parser's defaults, and hostile directories.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "ember/atomic_file.h"
#include "ember/data/tokenizers.h"
#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/pretrained.h"
#include "ember/storage.h"
#include "temp_directory.h"
#include "test_support.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testutil::error_of;
using testutil::expect_error;

const std::string kFixtures = EMBER_PRETRAINED_FIXTURES;

std::string model_dir(const std::string& arch) { return kFixtures + "/models/" + arch; }

json read_json(const std::string& path) { return json::parse(read_file(path, "test")); }

struct Reference {
  Tensor input_ids;  // [1, 24] int64
  Tensor logits;     // [1, 24, vocab] float32, transformers in float32
  Tensor logits_bf16;
  std::vector<int64_t> prompt_ids, greedy_ids;
  json perplexity;
};

Reference read_reference(const std::string& arch) {
  const auto tensors = io::load_safetensors(model_dir(arch) + "/reference.safetensors");
  const json j = read_json(model_dir(arch) + "/reference.json");
  return {tensors.at("input_ids").clone(), tensors.at("logits").clone(), tensors.at("logits_bf16").clone(),
          j.at("prompt_ids").get<std::vector<int64_t>>(), j.at("greedy_ids").get<std::vector<int64_t>>(),
          j.at("perplexity")};
}

double max_abs(const Tensor& a) { return a.to(kFloat64).abs().max().item<double>(); }
double max_abs_diff(const Tensor& a, const Tensor& b) { return max_abs(a.to(kFloat64) - b.to(kFloat64)); }

Tensor ids_tensor(const std::vector<int64_t>& ids) {
  return tensor(ids, kInt64).view({1, static_cast<int64_t>(ids.size())});
}

int64_t argmax_last(const Tensor& logits) {
  return logits.select(1, logits.size(1) - 1).argmax(-1).item<int64_t>();
}

using testutil::sanitized;
using testutil::TempDirectory;

// The tensor names of every safetensors file of a checkpoint directory.
std::set<std::string> checkpoint_keys(const std::string& dir) {
  std::set<std::string> keys;
  for (const auto& file : fs::directory_iterator(dir)) {
    const std::string name = file.path().filename().string();
    if (name.starts_with("model") && name.ends_with(".safetensors"))
      for (const auto& key : io::SafeOpen(file.path().string()).keys()) keys.insert(key);
  }
  return keys;
}

const std::vector<std::string> kArchitectures = {"llama", "mistral", "qwen2", "qwen3", "gemma", "phi3", "gpt2"};

class PretrainedFixture : public ::testing::TestWithParam<std::string> {};

// The issue asks for 1e-4 of the logits' scale; ember measures about 1e-6 (float32 rounding in
// another summation order), and 1e-5 still tells apart mistakes that 1e-4 would let through:
// gelu's exact and tanh forms differ by 3.9e-5 of the scale on gemma_legacy_gelu.
constexpr double kFloat32Tolerance = 1e-5;

TEST_P(PretrainedFixture, Float32LogitsMatchTransformers) {
  const Reference ref = read_reference(GetParam());
  models::CausalLM model = models::from_pretrained(model_dir(GetParam()));
  NoGradGuard no_grad;
  const Tensor logits = model->forward(ref.input_ids);
  ASSERT_EQ(logits.sizes(), ref.logits.sizes());
  const double scale = max_abs(ref.logits), error = max_abs_diff(logits, ref.logits);
  RecordProperty("float32_max_abs_error", std::to_string(error));
  RecordProperty("logit_scale", std::to_string(scale));
  std::printf("[ %s ] float32: max |logit| %.4f, max |ember - transformers| %.3g (%.3g of the scale)\n",
              GetParam().c_str(), scale, error, error / scale);
  EXPECT_LE(error, kFloat32Tolerance * scale);
}

// Note [bfloat16 tolerance]: a bfloat16 forward rounds every weight and every intermediate to
// 8 significant bits (unit roundoff u = 2^-8), each rounding perturbing its value by at most u
// relative. The norms rescale what comes before them, so a logit carries the relative errors
// of the few roundings after the last norm (the normed hidden state, the head's weight, the
// head's product) plus what the residual stream accumulated: a handful of u's, times the size
// of the logits. We allow 8u of the logits' scale (max |logit| of the float32 result): ember's
// bfloat16 logits measure at most 3.4u from its float32 ones on these fixtures, and
// transformers' own bfloat16 logits at most 3.5u from its float32 ones, which the test checks
// against the same bound.
constexpr double kBFloat16Tolerance = 8.0 / 256.0;

TEST_P(PretrainedFixture, BFloat16WithinRoundingOfFloat32) {
  const Reference ref = read_reference(GetParam());
  NoGradGuard no_grad;
  const Tensor f32 = models::from_pretrained(model_dir(GetParam()))->forward(ref.input_ids);
  models::PretrainedOptions options;
  options.dtype = kBFloat16;
  models::CausalLM model = models::from_pretrained(model_dir(GetParam()), options);
  const Tensor bf16 = model->forward(ref.input_ids);
  EXPECT_EQ(bf16.scalar_type(), kFloat32);
  const double scale = max_abs(f32), error = max_abs_diff(bf16, f32);
  const double transformers_error = max_abs_diff(ref.logits_bf16, ref.logits);
  std::printf("[ %s ] bfloat16: max |ember bf16 - ember f32| %.3g (%.3g of the scale); transformers' bf16 - f32: "
              "%.3g; ember bf16 - transformers bf16: %.3g\n",
              GetParam().c_str(), error, error / scale, transformers_error, max_abs_diff(bf16, ref.logits_bf16));
  RecordProperty("bfloat16_max_abs_error", std::to_string(error));
  EXPECT_LE(error, kBFloat16Tolerance * scale);
  EXPECT_LE(transformers_error, kBFloat16Tolerance * scale);  // the bound holds for the reference too
}

TEST_P(PretrainedFixture, GreedyDecodingThroughTheCacheMatchesTransformers) {
  const Reference ref = read_reference(GetParam());
  models::CausalLM model = models::from_pretrained(model_dir(GetParam()));
  NoGradGuard no_grad;
  const int64_t steps = static_cast<int64_t>(ref.greedy_ids.size());
  models::DecoderCache cache = model->make_cache(1, static_cast<int64_t>(ref.prompt_ids.size()) + steps);
  std::vector<int64_t> generated;
  int64_t next = argmax_last(model->forward_cached(ids_tensor(ref.prompt_ids), cache));
  for (int64_t i = 0; i < steps; ++i) {
    generated.push_back(next);
    if (i + 1 < steps) next = argmax_last(model->forward_cached(ids_tensor({next}), cache));
  }
  EXPECT_EQ(generated, ref.greedy_ids);
}

TEST_P(PretrainedFixture, CachedPrefixAndStepsEqualTheFullForward) {
  const Reference ref = read_reference(GetParam());
  models::CausalLM model = models::from_pretrained(model_dir(GetParam()));
  NoGradGuard no_grad;
  const Tensor full = model->forward(ref.input_ids);
  models::DecoderCache cache = model->make_cache(1, 24);
  // A prefix of 13, three chunks of 3 (flex attention's decoding path), then single steps.
  std::vector<Tensor> pieces = {model->forward_cached(ref.input_ids.narrow(1, 0, 13), cache)};
  int64_t at = 13;
  for (int64_t n : {3, 3, 3, 1, 1}) {
    pieces.push_back(model->forward_cached(ref.input_ids.narrow(1, at, n), cache));
    at += n;
  }
  ASSERT_EQ(at, 24);
  EXPECT_EQ(cache.length(), 24);
  EXPECT_LE(max_abs_diff(cat(pieces, 1), full), 1e-5 * max_abs(full));
  // A prefill that keeps the last logits only.
  models::DecoderCache fresh = model->make_cache(1, 24);
  const Tensor last = model->forward_cached(ref.input_ids, fresh, /*logits_to_keep=*/1);
  ASSERT_EQ(last.sizes(), (std::vector<int64_t>{1, 1, full.size(2)}));
  EXPECT_LE(max_abs_diff(last, full.narrow(1, 23, 1)), 1e-5 * max_abs(full));
  EXPECT_EQ(fresh.length(), 24);
}

TEST_P(PretrainedFixture, SavePretrainedRoundTripIsBitwise) {
  const std::string arch = GetParam();
  const Reference ref = read_reference(arch);
  NoGradGuard no_grad;
  models::CausalLM model = models::from_pretrained(model_dir(arch));
  const Tensor logits = model->forward(ref.input_ids);
  TempDirectory out("saved");
  models::save_pretrained(model, out.path());
  EXPECT_TRUE(fs::exists(out.path() + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(out.path() + "/model.safetensors.index.json"));
  EXPECT_EQ(checkpoint_keys(out.path()), checkpoint_keys(model_dir(arch)));
  EXPECT_EQ(io::SafeOpen(out.path() + "/model.safetensors").metadata(), (io::Metadata{{"format", "pt"}}));
  // The original JSON with the dtype of what was written (float32: loaded as such).
  json config = read_json(out.path() + "/config.json"), original = read_json(model_dir(arch) + "/config.json");
  const char* dtype_key = original.contains("dtype") ? "dtype" : "torch_dtype";
  EXPECT_EQ(config[dtype_key], "float32");
  config[dtype_key] = original[dtype_key];
  EXPECT_EQ(config, original);
  EXPECT_EQ(read_file(out.path() + "/generation_config.json", "test"),
            read_file(model_dir(arch) + "/generation_config.json", "test"));
  const Tensor again = models::from_pretrained(out.path())->forward(ref.input_ids);
  EXPECT_TRUE(equal(again, logits));
}

TEST_P(PretrainedFixture, ShardedSaveLoadsBack) {
  const std::string arch = GetParam();
  const Reference ref = read_reference(arch);
  NoGradGuard no_grad;
  models::PretrainedOptions options;
  options.dtype = kBFloat16;
  models::CausalLM model = models::from_pretrained(model_dir(arch), options);
  const Tensor logits = model->forward(ref.input_ids);
  TempDirectory out("sharded");
  models::save_pretrained(model, out.path());  // one file first: the sharded save must replace it
  models::save_pretrained(model, out.path(), /*max_shard_bytes=*/40'000);
  const json index = read_json(out.path() + "/model.safetensors.index.json");
  std::set<std::string> shards;
  for (const auto& [name, file] : index["weight_map"].items()) shards.insert(file.get<std::string>());
  EXPECT_GT(shards.size(), 2u);
  EXPECT_FALSE(fs::exists(out.path() + "/model.safetensors"));
  // Each shard holds at most 40 kB of tensors, or one larger tensor alone.
  for (const auto& shard : shards) {
    const io::SafeOpen file(out.path() + "/" + shard);
    uint64_t bytes = 0;
    for (const auto& info : file.tensors()) bytes += info.nbytes();
    EXPECT_TRUE(bytes <= 40'000u || file.tensors().size() == 1) << shard;
  }
  EXPECT_EQ(checkpoint_keys(out.path()), checkpoint_keys(model_dir(arch)));
  EXPECT_EQ(read_json(out.path() + "/config.json")[read_json(model_dir(arch) + "/config.json").contains("dtype")
                                                       ? "dtype"
                                                       : "torch_dtype"],
            "bfloat16");
  models::CausalLM loaded = models::from_pretrained(out.path(), options);
  EXPECT_TRUE(equal(loaded->forward(ref.input_ids), logits));
  // Saved as one file again, the shards and the index go.
  models::save_pretrained(loaded, out.path());
  EXPECT_FALSE(fs::exists(out.path() + "/model.safetensors.index.json"));
  EXPECT_EQ(checkpoint_keys(out.path()), checkpoint_keys(model_dir(arch)));
}

TEST_P(PretrainedFixture, ParameterNamesAreTheCheckpointKeys) {
  models::CausalLM model = models::from_pretrained(model_dir(GetParam()));
  std::set<std::string> names;
  for (const auto& item : model->named_parameters()) {
    names.insert(item.key());
    EXPECT_FALSE(item.value().requires_grad()) << item.key();
  }
  EXPECT_EQ(names, checkpoint_keys(model_dir(GetParam())));
}

TEST_P(PretrainedFixture, LossIsTheMeanNegativeLogLikelihoodOfTheLogits) {
  const Reference ref = read_reference(GetParam());
  models::CausalLM model = models::from_pretrained(model_dir(GetParam()));
  NoGradGuard no_grad;
  const Tensor tokens = ref.input_ids.narrow(1, 0, 23);
  Tensor targets = ref.input_ids.narrow(1, 1, 23).clone();
  targets.index_put_({0, 5}, -100);  // ignored
  const Tensor log_probs = model->forward(tokens).to(kFloat64).log_softmax(-1)[0];
  double sum = 0;
  int64_t counted = 0;
  for (int64_t t = 0; t < 23; ++t) {
    const int64_t target = targets[0][t].item<int64_t>();
    if (target == -100) continue;
    sum -= log_probs[t][target].item<double>();
    ++counted;
  }
  EXPECT_NEAR(model->loss(tokens, targets).item<double>(), sum / static_cast<double>(counted), 1e-5);
}

// perplexity() against a float64 computation from forward()'s logits over the same windows.
TEST_P(PretrainedFixture, PerplexityScoresTokensTwoToCtxOfEachWindow) {
  const Reference ref = read_reference(GetParam());
  models::CausalLM model = models::from_pretrained(model_dir(GetParam()));
  NoGradGuard no_grad;
  std::vector<int64_t> ids = ref.prompt_ids;
  ids.insert(ids.end(), ref.greedy_ids.begin(), ref.greedy_ids.end());  // 56 ids: windows of 16, 8 dropped
  const int64_t ctx = 16;
  double sum = 0;
  for (int64_t w = 0; w < 3; ++w) {
    const std::vector<int64_t> window(ids.begin() + w * ctx, ids.begin() + (w + 1) * ctx);
    const Tensor log_probs = model->forward(ids_tensor(window)).to(kFloat64).log_softmax(-1)[0];
    for (int64_t t = 0; t + 1 < ctx; ++t) sum -= log_probs[t][window[static_cast<size_t>(t + 1)]].item<double>();
  }
  const models::PerplexityResult result = models::perplexity(*model, ids, ctx);
  EXPECT_EQ(result.tokens, 3 * (ctx - 1));
  EXPECT_NEAR(result.nll, sum / 45.0, 1e-6 * std::abs(sum / 45.0));
  EXPECT_NEAR(result.perplexity, std::exp(result.nll), 1e-12 * result.perplexity);
}

// `ember perplexity`'s definition against transformers' NLL of heldout.txt (1e-4 relative).
TEST_P(PretrainedFixture, HeldoutPerplexityMatchesTransformers) {
  const Reference ref = read_reference(GetParam());
  models::CausalLM model = models::from_pretrained(model_dir(GetParam()));
  const auto tokenizer = tokenizers::Tokenizer::from_file(model_dir(GetParam()) + "/tokenizer.json");
  const std::vector<int64_t> ids =
      tokenizer.encode(read_file(kFixtures + "/" + ref.perplexity.at("file").get<std::string>(), "test"));
  const models::PerplexityResult result = models::perplexity(*model, ids, ref.perplexity.at("ctx").get<int64_t>());
  const double nll = ref.perplexity.at("nll").get<double>();
  std::printf("[ %s ] held-out nll %.9f, transformers %.9f (%.2g relative)\n", GetParam().c_str(), result.nll, nll,
              std::abs(result.nll - nll) / nll);
  EXPECT_EQ(result.tokens, ref.perplexity.at("tokens").get<int64_t>());
  EXPECT_NEAR(result.nll, nll, 1e-4 * nll);
}

// Steps from `from` on, eagerly by decode_step and replayed by a CapturedDecoder, against the
// logits of the full forward; each replayed step equals the eager one bitwise. The caches are
// longer than the sequence: decode_step attends to the keys up to its position only.
void expect_captured_steps_match(models::CausalLM& model, const Tensor& ids, const Tensor& full, int64_t from) {
  const int64_t length = ids.size(1);
  const double scale = max_abs(full);
  models::DecoderCache eager = model->make_cache(1, length + 7), captured = model->make_cache(1, length + 7);
  model->forward_cached(ids.narrow(1, 0, from), eager);
  model->forward_cached(ids.narrow(1, 0, from), captured);
  models::CapturedDecoder decoder(model, captured);
  for (int64_t t = from; t < length; ++t) {
    const Tensor token = ids.narrow(1, t, 1);
    const Tensor stepped = model->decode_step(token, tensor(std::vector<int64_t>{t}), eager).select(1, 0);
    const Tensor replayed = decoder.step(token);
    EXPECT_EQ(captured.length(), t + 1);
    EXPECT_TRUE(replayed.equal(stepped)) << "position " << t;
    EXPECT_LE(max_abs_diff(stepped, full.select(1, t)), 1e-5 * scale) << "position " << t;
  }
  // forward_cached continues the cache the replays filled, as decode_step continues its own.
  const Tensor extra = ids.narrow(1, 0, 1);
  const Tensor continued = model->forward_cached(extra, captured).select(1, 0);
  EXPECT_EQ(captured.length(), length + 1);
  const Tensor stepped = model->decode_step(extra, tensor(std::vector<int64_t>{length}), eager).select(1, 0);
  EXPECT_LE(max_abs_diff(continued, stepped), 1e-5 * scale);
}

TEST_P(PretrainedFixture, CapturedDecodingMatchesTheFullForward) {
  const Reference ref = read_reference(GetParam());
  models::CausalLM model = models::from_pretrained(model_dir(GetParam()));
  NoGradGuard no_grad;
  expect_captured_steps_match(model, ref.input_ids, model->forward(ref.input_ids), 10);
  // Greedy decoding through the decoder gives transformers' continuation.
  const int64_t steps = static_cast<int64_t>(ref.greedy_ids.size());
  models::DecoderCache cache = model->make_cache(1, static_cast<int64_t>(ref.prompt_ids.size()) + steps);
  models::CapturedDecoder decoder(model, cache);
  std::vector<int64_t> generated;
  int64_t next = argmax_last(model->forward_cached(ids_tensor(ref.prompt_ids), cache));
  for (int64_t i = 0; i < steps; ++i) {
    generated.push_back(next);
    if (i + 1 < steps) next = decoder.step(ids_tensor({next})).argmax(-1).item<int64_t>();
  }
  EXPECT_EQ(generated, ref.greedy_ids);
}

INSTANTIATE_TEST_SUITE_P(Architectures, PretrainedFixture, ::testing::ValuesIn(kArchitectures),
                         [](const auto& info) { return info.param; });

// ---- config switches the seven fixtures leave out ------------------------------------------------

// tests/fixtures/pretrained/variants (scripts/make_pretrained_variants.py): biases and linear
// rope scaling, partial rotary with a window, per-layer windows, GPT-2's inverse-layer scale and
// exact gelu, Gemma's legacy "gelu".
class PretrainedVariant : public ::testing::TestWithParam<std::string> {};

TEST_P(PretrainedVariant, Float32LogitsMatchTransformersAndTheCache) {
  const std::string dir = kFixtures + "/variants/" + GetParam();
  const auto reference = io::load_safetensors(dir + "/reference.safetensors");
  const Tensor ids = reference.at("input_ids").clone(), expected = reference.at("logits").clone();
  models::CausalLM model = models::from_pretrained(dir);
  NoGradGuard no_grad;
  const Tensor logits = model->forward(ids);
  const double scale = max_abs(expected);
  EXPECT_LE(max_abs_diff(logits, expected), kFloat32Tolerance * scale);
  // Past every window: a prefix of 10, then one token at a time.
  models::DecoderCache cache = model->make_cache(1, ids.size(1));
  std::vector<Tensor> pieces = {model->forward_cached(ids.narrow(1, 0, 10), cache)};
  for (int64_t t = 10; t < ids.size(1); ++t) pieces.push_back(model->forward_cached(ids.narrow(1, t, 1), cache));
  EXPECT_LE(max_abs_diff(cat(pieces, 1), logits), 1e-5 * scale);
  expect_captured_steps_match(model, ids, logits, 10);
}

INSTANTIATE_TEST_SUITE_P(Variants, PretrainedVariant,
                         ::testing::Values("llama_bias_linear", "phi3_partial_window", "qwen2_window",
                                           "qwen3_layer_types", "gpt2_inverse_gelu", "gemma_legacy_gelu"),
                         [](const auto& info) { return info.param; });

// ---- loading details -------------------------------------------------------------------------

TEST(Pretrained, MatchingDtypeWeightsStayMappedFromTheFileWhenAsked) {
  models::PretrainedOptions bf16;
  bf16.dtype = kBFloat16;
  models::PretrainedOptions mapped_bf16 = bf16, mapped;
  mapped_bf16.map_weights = mapped.map_weights = true;
  // qwen3's file is bfloat16: mapped as is when asked, else copied; llama's is float32:
  // converted once to bfloat16, owned.
  for (const auto& item : models::from_pretrained(model_dir("qwen3"), mapped_bf16)->named_parameters())
    EXPECT_TRUE(item.value().storage().read_only()) << item.key();
  for (const auto& item : models::from_pretrained(model_dir("llama"), mapped)->named_parameters())
    EXPECT_TRUE(item.value().storage().read_only()) << item.key();
  for (const auto& item : models::from_pretrained(model_dir("qwen3"), bf16)->named_parameters())
    EXPECT_FALSE(item.value().storage().read_only()) << item.key();
  for (const auto& item : models::from_pretrained(model_dir("llama"))->named_parameters())
    EXPECT_FALSE(item.value().storage().read_only()) << item.key();
  for (const auto& item : models::from_pretrained(model_dir("llama"), bf16)->named_parameters()) {
    EXPECT_FALSE(item.value().storage().read_only()) << item.key();
    EXPECT_EQ(item.value().scalar_type(), kBFloat16);
  }
  // A model quantized at load leaves its float weights mapped (the products read the blocks).
  models::PretrainedOptions quantized;
  quantized.quantize = "int8";
  for (const auto& item : models::from_pretrained(model_dir("llama"), quantized)->named_parameters())
    EXPECT_TRUE(item.value().storage().read_only()) << item.key();
}

TEST(Pretrained, TrainableWeightsAreOwnedAndGetGradients) {
  models::PretrainedOptions options;
  options.trainable = true;
  models::CausalLM model = models::from_pretrained(model_dir("qwen2"), options);
  const Reference ref = read_reference("qwen2");
  model->loss(ref.input_ids.narrow(1, 0, 23), ref.input_ids.narrow(1, 1, 23)).backward();
  for (const auto& item : model->named_parameters()) {
    EXPECT_FALSE(item.value().storage().read_only()) << item.key();
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    EXPECT_GT(max_abs(item.value().grad()), 0) << item.key();
  }
}

TEST(Pretrained, BatchRowsEqualSingleRows) {
  const Reference ref = read_reference("qwen3");
  models::CausalLM model = models::from_pretrained(model_dir("qwen3"));
  NoGradGuard no_grad;
  const Tensor other = ref.input_ids.flip({1});
  const Tensor batch = cat({ref.input_ids, other}, 0);
  const Tensor together = model->forward(batch);
  const Tensor first = model->forward(ref.input_ids), second = model->forward(other);
  const double scale = max_abs(first);
  EXPECT_LE(max_abs_diff(together.narrow(0, 0, 1), first), 1e-5 * scale);
  EXPECT_LE(max_abs_diff(together.narrow(0, 1, 1), second), 1e-5 * scale);
  models::DecoderCache cache = model->make_cache(2, 24);
  std::vector<Tensor> pieces = {model->forward_cached(batch.narrow(1, 0, 20), cache)};
  for (int64_t t = 20; t < 24; ++t) pieces.push_back(model->forward_cached(batch.narrow(1, t, 1), cache));
  EXPECT_LE(max_abs_diff(cat(pieces, 1), together), 1e-5 * scale);
  // The same steps replayed by a CapturedDecoder: each sequence's logits as its full forward's.
  models::DecoderCache captured = model->make_cache(2, 24);
  model->forward_cached(batch.narrow(1, 0, 20), captured);
  models::CapturedDecoder decoder(model, captured);
  for (int64_t t = 20; t < 24; ++t)
    EXPECT_LE(max_abs_diff(decoder.step(batch.narrow(1, t, 1)), together.select(1, t)), 1e-5 * scale) << t;
}

TEST(Pretrained, CapturedDecoderRefusesAFullCacheAndOtherShapes) {
  models::CausalLM model = models::from_pretrained(model_dir("llama"));
  NoGradGuard no_grad;
  models::DecoderCache cache = model->make_cache(1, 3);
  model->forward_cached(ids_tensor({1, 2}), cache);
  models::CapturedDecoder decoder(model, cache);
  expect_error([&] { decoder.step(ids_tensor({1, 2})); }, {"[CapturedDecoder]", "tokens must be integer of shape"});
  expect_error([&] { decoder.step(ids_tensor({1}).to(kFloat32)); }, {"[CapturedDecoder]", "integer"});
  decoder.step(ids_tensor({3}));
  EXPECT_EQ(cache.length(), 3);
  expect_error([&] { decoder.step(ids_tensor({4})); }, {"[CapturedDecoder]", "the cache is full (3 positions)"});
  expect_error([&] { model->decode_step(ids_tensor({4}), tensor(std::vector<int64_t>{0, 1}), cache); },
               {"[CausalLM::decode_step]", "input_pos must be int64 of shape [1]"});
  models::DecoderCache other = model->make_cache(2, 3);
  expect_error([&] { model->decode_step(ids_tensor({4}), tensor(std::vector<int64_t>{0}), other); },
               {"[CausalLM::decode_step]", "does not match the cache's batch 2"});
}

// Full fine-tuning in mixed precision: float32 weights (the optimizer's), bfloat16 compute.
TEST(Pretrained, BFloat16ComputeOverFloat32Weights) {
  const Reference ref = read_reference("llama");
  models::PretrainedOptions options;
  options.trainable = true;
  models::CausalLM model = models::from_pretrained(model_dir("llama"), options);
  Tensor f32;
  {
    NoGradGuard no_grad;
    f32 = model->forward(ref.input_ids);
  }
  model->set_compute_dtype(kBFloat16);
  {
    NoGradGuard no_grad;
    EXPECT_LE(max_abs_diff(model->forward(ref.input_ids), f32), kBFloat16Tolerance * max_abs(f32));
  }
  model->loss(ref.input_ids.narrow(1, 0, 23), ref.input_ids.narrow(1, 1, 23)).backward();
  for (const auto& item : model->named_parameters()) {
    EXPECT_EQ(item.value().scalar_type(), kFloat32) << item.key();
    ASSERT_TRUE(item.value().grad().defined()) << item.key();
    EXPECT_EQ(item.value().grad().scalar_type(), kFloat32) << item.key();
  }
}

TEST(Pretrained, DocumentIdsKeepEachDocumentToItself) {
  const Reference ref = read_reference("mistral");
  models::CausalLM model = models::from_pretrained(model_dir("mistral"));
  NoGradGuard no_grad;
  Tensor doc_ids = zeros({1, 24}, kInt32);
  doc_ids.narrow(1, 10, 14).fill_(1);
  const Tensor packed = model->forward(ref.input_ids, doc_ids);
  const Tensor alone = model->forward(ref.input_ids.narrow(1, 0, 10));
  EXPECT_LE(max_abs_diff(packed.narrow(1, 0, 10), alone), 1e-5 * max_abs(alone));
}

TEST(Pretrained, ReadGenerationConfig) {
  const models::GenerationConfig qwen2 = models::read_generation_config(model_dir("qwen2"));
  const json generation = read_json(model_dir("qwen2") + "/generation_config.json");
  EXPECT_EQ(qwen2.eos_token_ids, generation["eos_token_id"].get<std::vector<int64_t>>());
  EXPECT_EQ(qwen2.bos_token_id, generation["bos_token_id"].get<int64_t>());
  EXPECT_EQ(qwen2.pad_token_id, generation["pad_token_id"].get<int64_t>());
  EXPECT_EQ(qwen2.top_k, 20);
  EXPECT_EQ(qwen2.do_sample, true);
  EXPECT_DOUBLE_EQ(qwen2.temperature.value_or(0), 0.7);
  // Without generation_config.json, config.json's ids.
  TempDirectory dir("generation");
  fs::copy_file(model_dir("llama") + "/config.json", dir.path() + "/config.json");
  const models::GenerationConfig llama = models::read_generation_config(dir.path());
  const json config = read_json(model_dir("llama") + "/config.json");
  ASSERT_TRUE(config["eos_token_id"].is_array());  // the list form
  EXPECT_EQ(llama.eos_token_ids, config["eos_token_id"].get<std::vector<int64_t>>());
  EXPECT_EQ(llama.bos_token_id, config["bos_token_id"].get<int64_t>());
  EXPECT_FALSE(llama.pad_token_id.has_value());
  EXPECT_FALSE(llama.top_k.has_value());
}

// ---- the config parser -----------------------------------------------------------------------

TEST(PretrainedConfig, AbsentFieldsTakeTheDefaultsOfTheirTransformersClass) {
  const auto mistral = models::parse_pretrained_config(R"({"model_type": "mistral"})", "c.json");
  EXPECT_EQ(mistral.architecture, models::Architecture::kMistral);
  EXPECT_EQ(mistral.num_key_value_heads, 8);
  EXPECT_EQ(mistral.intermediate_size, 14336);
  EXPECT_EQ(mistral.max_position_embeddings, 131072);
  EXPECT_EQ(mistral.layer_windows, std::vector<int64_t>(32, 4096));  // MistralConfig's sliding_window
  EXPECT_DOUBLE_EQ(mistral.norm_eps, 1e-6);
  EXPECT_EQ(mistral.eos_token_ids, std::vector<int64_t>{2});
  const auto no_window = models::parse_pretrained_config(R"({"model_type": "mistral", "sliding_window": null})", "c");
  EXPECT_EQ(no_window.layer_windows, std::vector<int64_t>(32, 0));

  const auto phi3 = models::parse_pretrained_config(R"({"architectures": ["Phi3ForCausalLM"]})", "c.json");
  EXPECT_DOUBLE_EQ(phi3.norm_eps, 1e-5);
  EXPECT_EQ(phi3.num_key_value_heads, 32);
  EXPECT_EQ(phi3.layer_windows, std::vector<int64_t>(32, 0));

  const auto gemma = models::parse_pretrained_config(R"({"model_type": "gemma", "hidden_act": "gelu"})", "c.json");
  EXPECT_EQ(gemma.head_dim, 256);
  EXPECT_TRUE(gemma.tie_word_embeddings);
  EXPECT_EQ(gemma.activation, models::Activation::kGELUTanh);  // Gemma's legacy "gelu"
  EXPECT_EQ(models::parse_pretrained_config(R"({"model_type": "gemma", "hidden_act": "gelu_python"})", "c").activation,
            models::Activation::kGELU);
  EXPECT_EQ(models::parse_pretrained_config(R"({"model_type": "llama", "hidden_act": "gelu"})", "c").activation,
            models::Activation::kGELU);

  const auto gpt2 = models::parse_pretrained_config(R"({"model_type": "gpt2", "n_embd": 64, "n_head": 4})", "c");
  EXPECT_EQ(gpt2.intermediate_size, 256);
  EXPECT_EQ(gpt2.head_dim, 16);
  EXPECT_EQ(gpt2.activation, models::Activation::kGELUTanh);
  EXPECT_FALSE(gpt2.uses_rope());

  // Qwen2: windows only with use_sliding_window, from max_window_layers on.
  const auto qwen2 = models::parse_pretrained_config(
      R"({"model_type": "qwen2", "num_hidden_layers": 4, "use_sliding_window": true, "sliding_window": 16,
          "max_window_layers": 2})",
      "c");
  EXPECT_EQ(qwen2.layer_windows, (std::vector<int64_t>{0, 0, 16, 16}));
  EXPECT_TRUE(qwen2.qkv_bias);
  EXPECT_FALSE(qwen2.o_bias);
  const auto qwen2_off = models::parse_pretrained_config(R"({"model_type": "qwen2", "num_hidden_layers": 2})", "c");
  EXPECT_EQ(qwen2_off.layer_windows, (std::vector<int64_t>{0, 0}));
}

TEST(PretrainedConfig, RopeScalingInEitherSpelling) {
  // transformers 4's rope_scaling with "type", transformers 5's rope_parameters with rope_theta.
  const auto linear = models::parse_pretrained_config(
      R"({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "rope_theta": 100.0,
          "rope_scaling": {"type": "linear", "factor": 4.0}})",
      "c");
  EXPECT_EQ(linear.rope_scaling.type, "linear");
  const auto inverse = models::rope_inverse_frequencies(linear);
  ASSERT_EQ(inverse.size(), 8u);
  EXPECT_DOUBLE_EQ(inverse[0], 0.25);
  EXPECT_NEAR(inverse[4], std::pow(100.0, -0.5) / 4, 1e-15);
  const auto v5 = models::parse_pretrained_config(
      R"({"model_type": "qwen3", "rope_parameters": {"rope_theta": 5000.0, "rope_type": "default"}})", "c");
  EXPECT_DOUBLE_EQ(v5.rope_theta, 5000.0);
  EXPECT_EQ(v5.rope_scaling.type, "default");
}

TEST(PretrainedConfig, Llama3ScalingFollowsTheWavelengthRule) {
  const auto config = models::parse_pretrained_config(read_file(model_dir("llama") + "/config.json", "test"), "c");
  const auto inverse = models::rope_inverse_frequencies(config);
  ASSERT_EQ(inverse.size(), 8u);
  // theta 1e5, head_dim 16: wavelengths 2 pi 10^(5 i / 8). Original context 32, low 1, high 4:
  // i = 0 (6.3 < 8) kept, i = 1 (26.5, between 8 and 32) interpolated, i >= 2 (> 32) divided by 8.
  const auto base = [](int i) { return std::pow(1e5, -2.0 * i / 16); };
  EXPECT_DOUBLE_EQ(inverse[0], base(0));
  const double smooth = (32 / (2 * M_PI / base(1)) - 1) / 3;
  EXPECT_NEAR(inverse[1], (1 - smooth) * base(1) / 8 + smooth * base(1), 1e-15);
  for (int i = 2; i < 8; ++i) EXPECT_NEAR(inverse[static_cast<size_t>(i)], base(i) / 8, 1e-18) << i;
}

TEST(PretrainedConfig, InconsistentOrUnknownFieldsAreNamedErrors) {
  auto parse = [](const std::string& text) { return [text] { models::parse_pretrained_config(text, "dir/config.json"); }; };
  expect_error(parse(R"({"architectures": ["FooForCausalLM"]})"),
               {"[from_pretrained]", "dir/config.json", "architectures[0]", "FooForCausalLM", "LlamaForCausalLM"});
  expect_error(parse(R"({"model_type": "bert"})"), {"dir/config.json", "'model_type'", "\"bert\"", "llama"});
  expect_error(parse(R"({"model_type": "llama", "hidden_size": 60, "num_attention_heads": 8})"),
               {"dir/config.json", "'hidden_size'", "60", "multiple of num_attention_heads = 8"});
  expect_error(parse(R"({"model_type": "llama", "num_attention_heads": 32, "num_key_value_heads": 5})"),
               {"'num_key_value_heads'", "5", "divisor of num_attention_heads = 32"});
  expect_error(parse(R"({"model_type": "llama", "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}})"),
               {"'rope_scaling.rope_type'", "\"dynamic\"", "default, linear, llama3"});
  expect_error(parse(R"({"model_type": "llama", "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})"),
               {"'rope_scaling.low_freq_factor'", "missing"});
  expect_error(parse(R"({"model_type": "phi3", "rope_scaling": {"type": "longrope", "short_factor": [1.0]}})"),
               {"'rope_scaling.type'", "longrope"});
  expect_error(parse(R"({"model_type": "llama", "hidden_act": "swiglu"})"), {"'hidden_act'", "\"swiglu\"", "silu"});
  expect_error(parse(R"({"model_type": "llama", "hidden_size": "64"})"), {"'hidden_size'", "\"64\"", "an integer"});
  expect_error(parse(R"({"model_type": "llama", "num_hidden_layers": -2})"), {"'num_hidden_layers'", "-2"});
  expect_error(parse(R"({"model_type": "llama", "partial_rotary_factor": 0.1, "hidden_size": 64, "num_attention_heads": 4})"),
               {"rotated width", "expected an even number"});
  expect_error(parse(R"({"model_type": "llama",)"), {"dir/config.json", "not valid JSON"});
  expect_error(parse(R"([1, 2])"), {"dir/config.json", "JSON object"});
}

// ---- hostile checkpoint directories ------------------------------------------------------------

// A copy of a fixture directory to break.
class HostileDirectory {
 public:
  explicit HostileDirectory(const std::string& arch) : temp_(sanitized(arch)) {
    for (const auto& file : fs::directory_iterator(model_dir(arch)))
      fs::copy_file(file.path(), temp_.path() + "/" + file.path().filename().string());
  }
  const std::string& path() const { return temp_.path(); }
  std::string file(const std::string& name) const { return path() + "/" + name; }

  // Rewrites a safetensors file after `edit` changed its tensors.
  void rewrite(const std::string& name, const std::function<void(io::TensorList&)>& edit) const {
    io::TensorList tensors;
    {
      auto loaded = io::load_safetensors(file(name));
      for (auto& [key, t] : loaded.tensors) tensors.emplace_back(key, t.clone());
    }
    edit(tensors);
    io::save_safetensors(file(name), tensors, {{"format", "pt"}});
  }
  void edit_json(const std::string& name, const std::function<void(json&)>& edit) const {
    json j = read_json(file(name));
    edit(j);
    write_file_atomically(file(name), j.dump(2), "test");
  }
  std::function<void()> load() const {
    return [this] { models::from_pretrained(path()); };
  }

 private:
  TempDirectory temp_;
};

void replace_tensor(io::TensorList& tensors, const std::string& name, const Tensor& value) {
  for (auto& [key, t] : tensors)
    if (key == name) t = value;
}

TEST(PretrainedHostile, TruncatedShard) {
  HostileDirectory dir("llama");
  fs::resize_file(dir.file("model.safetensors"), fs::file_size(dir.file("model.safetensors")) / 2);
  expect_error(dir.load(), {dir.file("model.safetensors")});
}

TEST(PretrainedHostile, TensorOfTheWrongShape) {
  HostileDirectory dir("llama");
  dir.rewrite("model.safetensors", [](io::TensorList& tensors) {
    replace_tensor(tensors, "model.layers.1.self_attn.k_proj.weight", zeros({64, 32}));
  });
  expect_error(dir.load(), {"[from_pretrained]", dir.file("model.safetensors"), "'model.layers.1.self_attn.k_proj.weight'",
                            "[64, 32]", "expected [32, 64]"});
}

TEST(PretrainedHostile, TensorOfTheWrongDtype) {
  HostileDirectory dir("qwen2");
  dir.rewrite("model.safetensors", [](io::TensorList& tensors) {
    replace_tensor(tensors, "model.layers.0.self_attn.q_proj.bias", zeros({64}, kInt32));
  });
  expect_error(dir.load(), {dir.file("model.safetensors"), "'model.layers.0.self_attn.q_proj.bias'", "I32",
                            "expected F32, BF16, F16 or F64"});
}

TEST(PretrainedHostile, MissingAndExtraTensorsAreNamedTogether) {
  HostileDirectory dir("gemma");
  dir.rewrite("model.safetensors", [](io::TensorList& tensors) {
    std::erase_if(tensors, [](const auto& item) {
      return item.first == "model.norm.weight" || item.first == "model.layers.1.mlp.up_proj.weight";
    });
    tensors.emplace_back("model.layers.0.self_attn.extra.weight", zeros({4}));
  });
  expect_error(dir.load(), {dir.file("model.safetensors"), "config.json", "GemmaForCausalLM", "missing [",
                            "model.layers.1.mlp.up_proj.weight", "model.norm.weight",
                            "unexpected [model.layers.0.self_attn.extra.weight]"});
}

TEST(PretrainedHostile, UnknownArchitecture) {
  HostileDirectory dir("qwen3");
  dir.edit_json("config.json", [](json& j) { j["architectures"] = {"Qwen9ForCausalLM"}; });
  expect_error(dir.load(), {dir.file("config.json"), "architectures[0]", "Qwen9ForCausalLM", "expected one of"});
}

TEST(PretrainedHostile, UnknownRopeType) {
  HostileDirectory dir("qwen3");
  dir.edit_json("config.json", [](json& j) { j["rope_parameters"]["rope_type"] = "yarn"; });
  expect_error(dir.load(), {dir.file("config.json"), "rope_parameters.rope_type", "yarn", "expected one of"});
}

TEST(PretrainedHostile, IndexNamingAMissingShard) {
  HostileDirectory dir("mistral");
  dir.edit_json("model.safetensors.index.json",
                [](json& j) { j["weight_map"]["model.norm.weight"] = "model-00003-of-00002.safetensors"; });
  expect_error(dir.load(), {dir.file("model.safetensors.index.json"), "weight_map.model.norm.weight",
                            "model-00003-of-00002.safetensors", "does not exist"});
}

TEST(PretrainedHostile, IndexNamingAShardOutsideTheDirectory) {
  HostileDirectory dir("mistral");
  dir.edit_json("model.safetensors.index.json",
                [](json& j) { j["weight_map"]["model.norm.weight"] = "../model-00001-of-00002.safetensors"; });
  expect_error(dir.load(), {"weight_map.model.norm.weight", "expected a file name in the directory"});
}

TEST(PretrainedHostile, TruncatedShardOfAnIndex) {
  HostileDirectory dir("mistral");
  const std::string shard = dir.file("model-00002-of-00002.safetensors");
  fs::resize_file(shard, fs::file_size(shard) - 100);
  expect_error(dir.load(), {shard});
}

TEST(PretrainedHostile, ConfigThatIsNotJson) {
  HostileDirectory dir("phi3");
  write_file_atomically(dir.file("config.json"), std::string("architectures: [Phi3ForCausalLM]\n"), "test");
  expect_error(dir.load(), {"[from_pretrained]", dir.file("config.json"), "not valid JSON"});
}

TEST(PretrainedHostile, NoWeights) {
  HostileDirectory dir("gpt2");
  fs::remove(dir.file("model.safetensors"));
  expect_error(dir.load(), {dir.path(), "no model.safetensors"});
}

// GPT-2 files from the original release: keys without "transformer." and the attention-mask
// buffers, which load as the prefixed keys.
TEST(PretrainedHostile, OldGpt2KeysLoad) {
  HostileDirectory dir("gpt2");
  dir.rewrite("model.safetensors", [](io::TensorList& tensors) {
    for (auto& [key, t] : tensors)
      if (key.starts_with("transformer.")) key = key.substr(12);
    tensors.emplace_back("h.0.attn.bias", ones({1, 1, 128, 128}));
    tensors.emplace_back("h.1.attn.masked_bias", full({}, -1e4));
  });
  const Reference ref = read_reference("gpt2");
  NoGradGuard no_grad;
  const Tensor logits = models::from_pretrained(dir.path())->forward(ref.input_ids);
  EXPECT_TRUE(equal(logits, models::from_pretrained(model_dir("gpt2"))->forward(ref.input_ids)));
}

}  // namespace
}  // namespace ember
