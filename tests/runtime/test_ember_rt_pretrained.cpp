// Pretrained causal LMs (tests/fixtures/pretrained/models) exported by train::export_pretrained
// and run by ember-rt: prefill and decode logits equal eager forward_cached bitwise (eager's
// GEMM forced to OpenBLAS, ember-rt's one backend), and `ember-rt --ids` greedy decoding gives
// eager's greedy ids, which are transformers' (reference.json); its text comes from the
// program's token_bytes and stops at the EOS ids.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cpu/dispatch.h"
#include "ember/atomic_file.h"
#include "ember/backends.h"
#include "ember/data/tokenizers.h"
#include "ember/ember.h"
#include "ember/models/pretrained.h"
#include "ember_rt_process.h"
#include "train/export_pretrained.h"

namespace ember::rt::testing {
namespace {

std::string model_dir(const std::string& arch) { return std::string(EMBER_PRETRAINED_FIXTURES) + "/models/" + arch; }

std::string ids_text(const std::vector<int64_t>& ids) {
  std::string text;
  for (int64_t id : ids) text += (text.empty() ? "" : " ") + std::to_string(id);
  return text;
}

struct Exported {
  models::CausalLM model{nullptr};
  std::string path;
};

// The fixture `arch` exported into `dir` (max_seq_len 64), with its tokenizer and EOS ids;
// quantized when `quantize` names a type.
Exported export_fixture(const std::string& arch, ScalarType dtype, const std::string& dir,
                        const std::string& quantize = "") {
  models::PretrainedOptions options;
  options.dtype = dtype;
  options.max_seq_len = 64;
  options.quantize = quantize;
  Exported e{models::from_pretrained(model_dir(arch), options), dir + "/" + arch + quantize + ".ember"};
  e.model->eval();
  const auto tokenizer = tokenizers::Tokenizer::from_file(model_dir(arch) + "/tokenizer.json");
  train::export_pretrained(e.model, models::read_generation_config(model_dir(arch)).eos_token_ids, &tokenizer)
      .save(e.path);
  return e;
}

// A scratch directory per test, and eager's GEMM on OpenBLAS (ember-rt's one backend).
template <class Base>
class EmberRtFixture : public Base {
 protected:
  void SetUp() override {
    backends::set_gemm_backend("openblas");
    dir_ = ::testing::TempDir() + "/ember_rt_pretrained_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

class EmberRtPretrained : public EmberRtFixture<::testing::TestWithParam<std::tuple<std::string, ScalarType>>> {};

// ember-rt's prefill (prompts of 1 and 20 tokens: a quantized model's products of few rows
// and of many) and one decode step after each, against eager forward_cached: bitwise.
void expect_ember_rt_equal_eager(Exported& e, const std::string& dir, const std::string& what) {
  const train::CachedDecoder decoder = train::cached_decoder(e.model);
  const ExportedProgram program = ExportedProgram::load(e.path);
  NoGradGuard no_grad;
  for (int64_t prompt : {1, 20}) {
    const Tensor tokens = randint(0, decoder.vocab_size, {1, prompt}, TensorOptions().dtype(kInt64));
    models::DecoderCache eager_cache = e.model->make_cache(1, 64);
    const Tensor eager = e.model->forward_cached(tokens, eager_cache, 1);
    std::vector<Tensor> caches = train::make_cache_inputs(decoder);
    std::vector<Tensor> inputs = {tokens};
    inputs.insert(inputs.end(), caches.begin(), caches.end());
    EXPECT_EQ(run_ember_rt(e.path, "prefill", inputs, dir), bytes_of(eager)) << what << " prefill of " << prompt;
    program.run(inputs, "prefill");  // the caches as prefill leaves them (the interpreter equals eager)
    const Tensor next = randint(0, decoder.vocab_size, {1, 1}, TensorOptions().dtype(kInt64));
    const Tensor eager_step = e.model->forward_cached(next, eager_cache);
    std::vector<Tensor> step = {next, full({}, prompt, TensorOptions().dtype(kInt64))};
    step.insert(step.end(), caches.begin(), caches.end());
    EXPECT_EQ(run_ember_rt(e.path, "decode", step, dir), bytes_of(eager_step)) << what << " decode at " << prompt;
  }
}

TEST_P(EmberRtPretrained, PrefillAndDecodeEqualEagerBitwise) {
  const auto& [arch, dtype] = GetParam();
  manual_seed(12);
  Exported e = export_fixture(arch, dtype, dir_);
  expect_ember_rt_equal_eager(e, dir_, arch);
}

INSTANTIATE_TEST_SUITE_P(
    Architectures, EmberRtPretrained,
    ::testing::Values(std::make_tuple("llama", kFloat32), std::make_tuple("mistral", kFloat32),
                      std::make_tuple("qwen2", kFloat32), std::make_tuple("qwen3", kFloat32),
                      std::make_tuple("gemma", kFloat32), std::make_tuple("phi3", kFloat32),
                      std::make_tuple("gpt2", kFloat32), std::make_tuple("qwen2", kBFloat16),
                      std::make_tuple("gpt2", kBFloat16)),
    [](const auto& info) {
      return std::get<0>(info.param) + (std::get<1>(info.param) == kFloat32 ? "_float32" : "_bfloat16");
    });

// Quantized models (int8, int4) in ember-rt: bitwise eager's at this CPU's dispatch level.
class EmberRtQuantized : public EmberRtFixture<::testing::Test> {};

TEST_F(EmberRtQuantized, PrefillAndDecodeEqualEagerBitwise) {
  manual_seed(13);
  for (const auto& [arch, dtype, type] :
       {std::make_tuple("llama", kFloat32, "int8"), std::make_tuple("llama", kFloat32, "int4"),
        std::make_tuple("qwen2", kBFloat16, "int4"), std::make_tuple("gpt2", kFloat32, "int8"),
        std::make_tuple("phi3", kFloat32, "int4")}) {
    Exported e = export_fixture(arch, dtype, dir_, type);
    expect_ember_rt_equal_eager(e, dir_, std::string(arch) + " " + type + " " + dtype_name(dtype));
  }
}

// The dispatch levels run different builds of the quantized kernels (their sums differ in
// order): ember-rt under EMBER_CPU_CAPABILITY=level equals eager at that level, for every level
// this CPU has.
TEST_F(EmberRtQuantized, EqualEagerAtEveryDispatchLevel) {
  manual_seed(14);
  Exported e = export_fixture("llama", kFloat32, dir_, "int4");
  const cpu::Capability best = cpu::cpu_capability();
  for (cpu::Capability wanted : cpu::kAllCapabilities) {
    if (cpu::set_cpu_capability(wanted) != wanted) continue;
    ::setenv("EMBER_CPU_CAPABILITY", cpu::capability_name(wanted), 1);
    expect_ember_rt_equal_eager(e, dir_, std::string("llama int4 at ") + cpu::capability_name(wanted));
  }
  ::unsetenv("EMBER_CPU_CAPABILITY");
  cpu::set_cpu_capability(best);
}

class EmberRtPretrainedGreedy : public EmberRtPretrained {};

// Eager greedy decoding over the model's own cache, as `ember generate --greedy` runs it.
std::vector<int64_t> eager_greedy(models::CausalLM& model, const std::vector<int64_t>& prompt, size_t count) {
  NoGradGuard no_grad;
  models::DecoderCache cache = model->make_cache(1, 64);
  Tensor logits = model->forward_cached(
      tensor(prompt, TensorOptions().dtype(kInt64)).reshape({1, static_cast<int64_t>(prompt.size())}), cache, 1);
  std::vector<int64_t> ids;
  for (size_t i = 0; i < count; ++i) {
    ids.push_back(logits.reshape({-1}).argmax().item<int64_t>());
    logits = model->forward_cached(full({1, 1}, ids.back(), TensorOptions().dtype(kInt64)), cache);
  }
  return ids;
}

TEST_P(EmberRtPretrainedGreedy, IdsEqualEagerAndTransformers) {
  const std::string arch = std::get<0>(GetParam());
  const nlohmann::json reference = nlohmann::json::parse(read_file(model_dir(arch) + "/reference.json", "test"));
  const auto prompt = reference["prompt_ids"].get<std::vector<int64_t>>();
  const auto expected = reference["greedy_ids"].get<std::vector<int64_t>>();
  Exported e = export_fixture(arch, kFloat32, dir_);
  const std::string command = std::string(EMBER_RT_PATH) + " " + e.path + " --ids \"" + ids_text(prompt) +
                              "\" --tokens " + std::to_string(expected.size()) + " --temperature 0";
  EXPECT_EQ(ids_text(eager_greedy(e.model, prompt, expected.size())), ids_text(expected)) << arch;
  EXPECT_EQ(run_command(command + " --ignore-eos"), ids_text(expected) + "\n") << arch;

  // Without --ignore-eos the ids end at the first EOS id (included); --emit text prints the
  // bytes of the ids before it, which are the tokenizer's decode when that is valid UTF-8.
  const auto eos = models::read_generation_config(model_dir(arch)).eos_token_ids;
  std::vector<int64_t> until_eos;
  for (int64_t id : expected) {
    until_eos.push_back(id);
    if (std::find(eos.begin(), eos.end(), id) != eos.end()) break;
  }
  EXPECT_EQ(run_command(command), ids_text(until_eos) + "\n") << arch;
  if (std::find(eos.begin(), eos.end(), until_eos.back()) != eos.end()) until_eos.pop_back();
  const auto tokenizer = tokenizers::Tokenizer::from_file(model_dir(arch) + "/tokenizer.json");
  const std::vector<std::string> bytes = tokenizer.token_bytes();
  std::string text;
  for (int64_t id : until_eos) text += bytes[static_cast<size_t>(id)];
  EXPECT_EQ(run_command(command + " --emit text"), text + "\n") << arch;
}

INSTANTIATE_TEST_SUITE_P(Architectures, EmberRtPretrainedGreedy,
                         ::testing::Values(std::make_tuple("llama", kFloat32), std::make_tuple("mistral", kFloat32),
                                           std::make_tuple("qwen2", kFloat32), std::make_tuple("qwen3", kFloat32),
                                           std::make_tuple("gemma", kFloat32), std::make_tuple("phi3", kFloat32),
                                           std::make_tuple("gpt2", kFloat32)),
                         [](const auto& info) { return std::get<0>(info.param); });

TEST(EmberRtPretrainedText, PromptTextIsRefusedWithoutATokenizerParser) {
  const std::string dir = ::testing::TempDir() + "/ember_rt_pretrained_text_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  Exported e = export_fixture("qwen2", kFloat32, dir);
  const std::string printed = run_command(std::string(EMBER_RT_PATH) + " " + e.path + " --prompt hello");
  EXPECT_NE(printed.find("cannot encode text"), std::string::npos) << printed;
  EXPECT_EQ(printed.rfind("error: ", 0), 0u) << printed;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ember::rt::testing
