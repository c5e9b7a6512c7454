// The pretrained causal LMs (tests/fixtures/pretrained/models, one per architecture) exported as
// prefill + decode: the interpreted methods equal eager forward_cached bitwise (logits and the
// caches they write), their greedy continuation is transformers' (reference.json), the
// metadata carries the EOS ids and each id's bytes; layer_norm (GPT-2) is one op. Quantized
// models (int8, int4) export their blocks as constants and equal eager bitwise too.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "ember/atomic_file.h"
#include "ember/data/tokenizers.h"
#include "ember/ember.h"
#include "ember/models/pretrained.h"
#include "export_test_utils.h"
#include "train/export_pretrained.h"

namespace ember {
namespace {

std::string model_dir(const std::string& arch) { return std::string(EMBER_PRETRAINED_FIXTURES) + "/models/" + arch; }

std::vector<int64_t> json_ids(const nlohmann::json& list) { return list.get<std::vector<int64_t>>(); }

Tensor token_tensor(const std::vector<int64_t>& ids) {
  return tensor(ids, TensorOptions().dtype(kInt64)).reshape({1, static_cast<int64_t>(ids.size())});
}

models::CausalLM load(const std::string& arch, ScalarType dtype, int64_t max_seq_len, const std::string& quantize = "") {
  models::PretrainedOptions options;
  options.dtype = dtype;
  options.max_seq_len = max_seq_len;
  options.quantize = quantize;
  models::CausalLM model = models::from_pretrained(model_dir(arch), options);
  model->eval();
  return model;
}

// The program's prefill over prompts of several lengths, then three decode steps after each,
// against eager forward_cached (max_seq_len 64): logits and the caches written, bitwise.
void expect_prefill_and_decode_equal_eager(models::CausalLM& model, const ExportedProgram& program,
                                           const std::string& what) {
  const train::CachedDecoder decoder = train::cached_decoder(model);
  NoGradGuard no_grad;
  const int64_t vocab = model->config().vocab_size;
  // 1 and 5: the decoding path of flex attention (<= 16 queries) and of the quantized products
  // (<= 8 rows); 24 and 40: the blocked forward, past Mistral's window of 8.
  for (int64_t prompt : {1, 5, 24, 40}) {
    const Tensor tokens = randint(0, vocab, {1, prompt}, TensorOptions().dtype(kInt64));
    models::DecoderCache eager_cache = model->make_cache(1, 64);
    const Tensor eager = model->forward_cached(tokens, eager_cache, 1);
    std::vector<Tensor> caches = train::make_cache_inputs(decoder);
    std::vector<Tensor> inputs = {tokens};
    inputs.insert(inputs.end(), caches.begin(), caches.end());
    const Tensor exported = program.run(inputs, "prefill")[0];
    ASSERT_EQ(exported.sizes(), (std::vector<int64_t>{1, 1, vocab}));
    ASSERT_TRUE(test::bitwise_equal(exported, eager)) << what << " prefill of " << prompt;
    for (int64_t pos = prompt; pos < prompt + 3; ++pos) {
      const Tensor next = randint(0, vocab, {1, 1}, TensorOptions().dtype(kInt64));
      const Tensor eager_step = model->forward_cached(next, eager_cache);
      std::vector<Tensor> step = {next, full({}, pos, TensorOptions().dtype(kInt64))};
      step.insert(step.end(), caches.begin(), caches.end());
      ASSERT_TRUE(test::bitwise_equal(program.run(step, "decode")[0], eager_step)) << what << " decode at " << pos;
    }
    const int64_t n = eager_cache.length();
    for (size_t layer = 0; layer < eager_cache.layers.size(); ++layer) {
      EXPECT_TRUE(test::bitwise_equal(caches[2 * layer].narrow(2, 0, n), eager_cache.layers[layer].keys()));
      EXPECT_TRUE(test::bitwise_equal(caches[2 * layer + 1].narrow(2, 0, n), eager_cache.layers[layer].values()));
    }
  }
}

// (architecture, compute dtype)
class ExportPretrained : public ::testing::TestWithParam<std::tuple<std::string, ScalarType>> {};

TEST_P(ExportPretrained, PrefillThenDecodeEqualEagerBitwise) {
  const auto& [arch, dtype] = GetParam();
  manual_seed(5);
  models::CausalLM model = load(arch, dtype, 64);
  expect_prefill_and_decode_equal_eager(model, train::export_pretrained(model, {}), arch);
}

INSTANTIATE_TEST_SUITE_P(
    Architectures, ExportPretrained,
    ::testing::Values(std::make_tuple("llama", kFloat32), std::make_tuple("mistral", kFloat32),
                      std::make_tuple("qwen2", kFloat32), std::make_tuple("qwen3", kFloat32),
                      std::make_tuple("gemma", kFloat32), std::make_tuple("phi3", kFloat32),
                      std::make_tuple("gpt2", kFloat32), std::make_tuple("llama", kBFloat16),
                      std::make_tuple("gpt2", kBFloat16), std::make_tuple("gemma", kBFloat16)),
    [](const auto& info) {
      return std::get<0>(info.param) + (std::get<1>(info.param) == kFloat32 ? "_float32" : "_bfloat16");
    });

// (architecture, compute dtype, quantization)
class ExportQuantized : public ::testing::TestWithParam<std::tuple<std::string, ScalarType, std::string>> {};

std::map<std::string, Tensor> constants_by_name(const ExportedProgram& program) {
  std::map<std::string, Tensor> constants;
  for (const auto& c : program.program().constants) constants[c.name] = c.data;
  return constants;
}

// A quantized model's projections and head are quantized_linear calls over its blocks, constants
// under the keys save_quantized writes (no float copy of those weights is left in the program),
// and the interpreted program equals the eager quantized model bitwise.
TEST_P(ExportQuantized, BlocksAreConstantsAndPrefillThenDecodeEqualEagerBitwise) {
  const auto& [arch, dtype, type] = GetParam();
  manual_seed(6);
  models::CausalLM model = load(arch, dtype, 64, type);
  const ExportedProgram program = train::export_pretrained(model, {});
  const std::vector<std::string> operators = program.program().operators();
  EXPECT_NE(std::find(operators.begin(), operators.end(), "quantized_linear"), operators.end());
  EXPECT_EQ(std::find(operators.begin(), operators.end(), "linear"), operators.end());
  const std::map<std::string, Tensor> constants = constants_by_name(program);
  const auto blocks = model->quantized_weights();
  ASSERT_TRUE(blocks.count(models::CausalLMImpl::kLmHeadKey));
  for (const auto& [key, weight] : blocks) {
    const std::string stem = key.substr(0, key.size() - std::string(".weight").size());
    ASSERT_TRUE(constants.count(stem + ".qweight") && constants.count(stem + ".scales")) << key;
    EXPECT_TRUE(test::bitwise_equal(constants.at(stem + ".qweight"), weight.values)) << key;
    EXPECT_TRUE(test::bitwise_equal(constants.at(stem + ".scales"), weight.scales)) << key;
    EXPECT_EQ(weight.values.scalar_type(), key == models::CausalLMImpl::kLmHeadKey || type == "int8" ? kInt8 : kUInt8);
    EXPECT_FALSE(constants.count(key)) << key << " is in the program as floats too";
  }
  EXPECT_EQ(program.program().metadata.at("quantization"), type);
  expect_prefill_and_decode_equal_eager(model, program, arch + " " + type);
}

INSTANTIATE_TEST_SUITE_P(
    Architectures, ExportQuantized,
    ::testing::Values(std::make_tuple("llama", kFloat32, "int8"), std::make_tuple("llama", kFloat32, "int4"),
                      std::make_tuple("llama", kBFloat16, "int4"), std::make_tuple("mistral", kFloat32, "int4"),
                      std::make_tuple("qwen2", kFloat32, "int8"), std::make_tuple("phi3", kFloat32, "int4"),
                      std::make_tuple("gpt2", kFloat32, "int4"), std::make_tuple("gemma", kBFloat16, "int8")),
    [](const auto& info) {
      return std::get<0>(info.param) + (std::get<1>(info.param) == kFloat32 ? "_float32_" : "_bfloat16_") +
             std::get<2>(info.param);
    });

// A directory written by save_quantized loads quantized and exports the program of the model it
// was written from: the same blocks under the same names, the same logits.
TEST(ExportQuantizedDirectory, ExportsTheBlocksAsStored) {
  manual_seed(7);
  models::CausalLM model = load("qwen2", kFloat32, 64, "int4");
  const std::string dir = test::temp_path("qwen2_int4");
  models::save_quantized(model, dir);
  models::PretrainedOptions options;
  options.max_seq_len = 64;
  models::CausalLM stored = models::from_pretrained(dir, options);
  stored->eval();
  ASSERT_EQ(stored->quantization(), "int4");
  const ExportedProgram from_memory = train::export_pretrained(model, {});
  const ExportedProgram from_directory = train::export_pretrained(stored, {});
  const std::map<std::string, Tensor> expected = constants_by_name(from_memory), got = constants_by_name(from_directory);
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& [name, data] : expected) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_TRUE(test::bitwise_equal(got.at(name), data)) << name;
  }
  expect_prefill_and_decode_equal_eager(stored, from_directory, "qwen2 int4 from " + dir);
  std::filesystem::remove_all(dir);
}

// The named constants of export_program: a name the module's state has already is refused.
TEST(ExportQuantizedDirectory, AConstantNamedAsAParameterIsRefused) {
  models::CausalLM model = load("llama", kFloat32, 16, "int8");
  train::CachedDecoder decoder = train::cached_decoder(model);
  decoder.constants.emplace_back("model.norm.weight", zeros({64}));
  test::expect_error([&] { train::export_cached_decoder(decoder); }, {"constant 'model.norm.weight'", "named twice"});
}

class ExportPretrainedGreedy : public ::testing::TestWithParam<std::string> {};

// The interpreted program's greedy loop (prefill, then one decode per token) gives transformers'
// greedy ids (a full forward per step in float32, no stop at EOS).
TEST_P(ExportPretrainedGreedy, ContinuationIsTransformers) {
  const std::string arch = GetParam();
  const nlohmann::json reference = nlohmann::json::parse(read_file(model_dir(arch) + "/reference.json", "test"));
  const std::vector<int64_t> prompt = json_ids(reference["prompt_ids"]), expected = json_ids(reference["greedy_ids"]);
  models::CausalLM model = load(arch, kFloat32, 64);
  const ExportedProgram program = train::export_pretrained(model, {});
  std::vector<Tensor> caches = train::make_cache_inputs(train::cached_decoder(model));
  std::vector<Tensor> inputs = {token_tensor(prompt)};
  inputs.insert(inputs.end(), caches.begin(), caches.end());
  Tensor logits = program.run(inputs, "prefill")[0];
  std::vector<int64_t> generated;
  for (size_t i = 0; i < expected.size(); ++i) {
    generated.push_back(logits.reshape({-1}).argmax().item<int64_t>());
    std::vector<Tensor> step = {token_tensor({generated.back()}),
                                full({}, static_cast<int64_t>(prompt.size() + i), TensorOptions().dtype(kInt64))};
    step.insert(step.end(), caches.begin(), caches.end());
    logits = program.run(step, "decode")[0];
  }
  EXPECT_EQ(generated, expected) << arch;
}

INSTANTIATE_TEST_SUITE_P(Architectures, ExportPretrainedGreedy,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "gemma", "phi3", "gpt2"));

TEST(ExportPretrainedMetadata, EosIdsAndTokenBytes) {
  models::CausalLM model = load("qwen2", kFloat32, 16);
  const auto tokenizer = tokenizers::Tokenizer::from_file(model_dir("qwen2") + "/tokenizer.json");
  const ExportedProgram program = train::export_pretrained(model, {1002, 1000}, &tokenizer);
  const auto& metadata = program.program().metadata;
  EXPECT_EQ(metadata.at("eos_token_ids"), "1002 1000");
  EXPECT_EQ(metadata.at("architecture"), "Qwen2ForCausalLM");
  EXPECT_EQ(metadata.at("max_seq_len"), "16");
  std::vector<std::string> bytes = tokenizer.token_bytes();
  bytes.resize(static_cast<size_t>(model->config().vocab_size));
  EXPECT_EQ(metadata.at("token_bytes"), train::encode_token_bytes(bytes));
  EXPECT_EQ(train::encode_token_bytes({"a", "", "\n\xff"}), "61,,0aff");
}

TEST(ExportPretrainedMetadata, TooShortMaxSeqLenIsRefused) {
  models::CausalLM model = load("llama", kFloat32, 2);
  test::expect_error([&] { train::export_pretrained(model, {}); }, {"max_seq_len 2", "too short"});
}

// F::layer_norm is recorded as one op: with weight and bias, and with neither; a weight
// without a bias has no export support (the inputs would not say which one is there).
TEST(ExportLayerNorm, OneOpEqualToEagerBitwise) {
  namespace F = nn::functional;
  manual_seed(3);
  const Tensor weight = randn({24}), bias = randn({24});
  struct LayerNormModule : nn::Module {
    LayerNormModule() : nn::Module("LayerNormModule") {}
  } module;
  for (const bool affine : {true, false}) {
    auto forward = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
      auto options = F::LayerNormFuncOptions({24}).eps(1e-5);
      if (affine) options.weight(weight).bias(bias);
      return {F::layer_norm(in[0], options)};
    };
    const Tensor x = randn({2, 5, 24}) * 3.0 + 1.0;
    const ExportedProgram program = export_program(module, {ExportMethod{"forward", forward, {x}, {}}});
    EXPECT_EQ(program.program().operators(), std::vector<std::string>{"layer_norm"});
    const Tensor other = randn({2, 5, 24});
    EXPECT_TRUE(test::bitwise_equal(program.run({other})[0], forward({other})[0]));
  }
  auto weight_only = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {F::layer_norm(in[0], F::LayerNormFuncOptions({24}).weight(weight))};
  };
  test::expect_error([&] { export_program(module, {ExportMethod{"forward", weight_only, {randn({2, 24})}, {}}}); },
                     {"layer_norm"});
}

}  // namespace
}  // namespace ember
