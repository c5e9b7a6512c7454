// Weight-only int8 models (PretrainedOptions::quantize) on the transformers fixtures, against a
// float32 model whose projections and head hold the dequantized int8 weights: prompts (the
// float32 path over widened weights) match it to float32 rounding, decoding steps (activations
// quantized per block) to the activations' quantization error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/pretrained.h"
#include "test_support.h"

namespace ember {
namespace {

const std::string kFixtures = EMBER_PRETRAINED_FIXTURES;
std::string model_dir(const std::string& arch) { return kFixtures + "/models/" + arch; }

double max_abs(const Tensor& a) { return a.to(kFloat64).abs().max().item<double>(); }

bool is_projection(const std::string& name) {
  for (const char* part : {"q_proj", "k_proj", "v_proj", "qkv_proj", "o_proj", "gate_proj", "up_proj",
                           "gate_up_proj", "down_proj", "c_attn", "c_proj", "c_fc"})
    if (name.find(std::string(".") + part + ".weight") != std::string::npos) return true;
  return false;
}

// The reference: the float32 model with every projection weight replaced by its int8 blocks,
// widened; and the head's int8 blocks widened, for the logits.
struct DequantizedReference {
  models::CausalLM model{nullptr};
  Tensor head;
};

DequantizedReference dequantized_reference(const std::string& arch) {
  models::CausalLM float_model = models::from_pretrained(model_dir(arch));
  const bool in_by_out = float_model->config().architecture == models::Architecture::kGPT2;
  std::map<std::string, Tensor> weights;
  for (const auto& item : float_model->named_parameters()) {
    Tensor w = item.value();
    if (is_projection(item.key()) && w.dim() == 2) {
      const Tensor as_out_in = in_by_out ? w.t() : w;
      const Tensor widened = quantized::dequantize(quantized::quantize_int8(as_out_in));
      w = in_by_out ? widened.t().contiguous() : widened;
    }
    weights.emplace(item.key(), w);
  }
  DequantizedReference ref;
  ref.head = quantized::dequantize(quantized::quantize_int8(float_model->lm_head_weight()));
  ref.model = models::CausalLM(float_model->config(), std::move(weights));
  return ref;
}

class QuantizedFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(QuantizedFixture, PromptAndDecodeMatchTheDequantizedModel) {
  NoGradGuard no_grad;
  const auto tensors = io::load_safetensors(model_dir(GetParam()) + "/reference.safetensors");
  const Tensor ids = tensors.at("input_ids").clone();
  models::PretrainedOptions options;
  options.quantize = "int8";
  models::CausalLM model = models::from_pretrained(model_dir(GetParam()), options);
  EXPECT_EQ(model->quantization(), "int8");
  DequantizedReference ref = dequantized_reference(GetParam());
  const Tensor expected = nn::functional::linear(ref.model->hidden(ids), ref.head);
  const double scale = max_abs(expected);

  // A 24-token prompt: float32 activations over the widened weights.
  const Tensor prompt_logits = model->forward(ids);
  EXPECT_LE(max_abs(prompt_logits - expected), 2e-5 * scale) << GetParam();

  // One token at a time: each step's activations quantized in blocks of 32 (about 0.4% each).
  models::DecoderCache cache = model->make_cache(1, ids.size(1));
  double worst = 0;
  for (int64_t t = 0; t < ids.size(1); ++t) {
    const Tensor step = model->forward_cached(ids.narrow(1, t, 1), cache);
    worst = std::max(worst, max_abs(step.select(1, 0) - expected.select(1, t)));
  }
  EXPECT_LE(worst, 0.03 * scale) << GetParam();
  EXPECT_GT(worst, 0.0) << "decoding steps quantize their activations";
}

INSTANTIATE_TEST_SUITE_P(Architectures, QuantizedFixture,
                         ::testing::Values("llama", "mistral", "qwen2", "qwen3", "gemma", "phi3", "gpt2"),
                         [](const auto& info) { return info.param; });

TEST(QuantizedModel, RefusesTrainingAndUnknownTypes) {
  models::PretrainedOptions options;
  options.quantize = "int8";
  options.trainable = true;
  testutil::expect_error([&] { models::from_pretrained(model_dir("llama"), options); }, {"inference only"});
  options.trainable = false;
  options.quantize = "int4";
  testutil::expect_error([&] { models::from_pretrained(model_dir("llama"), options); }, {"unknown type 'int4'"});
}

}  // namespace
}  // namespace ember
