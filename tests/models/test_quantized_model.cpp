// Weight-only int8 and int4 models (PretrainedOptions::quantize) on the transformers fixtures,
// against a float32 model whose projections and head hold the dequantized weights: prompts (the
// float32 path over widened weights) match it to float32 rounding, decoding steps (activations
// quantized per block) to the activations' quantization error.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "cpu/quantized.h"
#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/pretrained.h"
#include "temp_directory.h"
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

// The reference: the float32 model with every projection weight replaced by its blocks in
// `format`, widened; and the head's int8 blocks widened, for the logits.
struct DequantizedReference {
  models::CausalLM model{nullptr};
  Tensor head;
};

DequantizedReference dequantized_reference(const std::string& arch, quantized::Format format) {
  models::CausalLM float_model = models::from_pretrained(model_dir(arch));
  const bool in_by_out = float_model->config().architecture == models::Architecture::kGPT2;
  std::map<std::string, Tensor> weights;
  for (const auto& item : float_model->named_parameters()) {
    Tensor w = item.value();
    if (is_projection(item.key()) && w.dim() == 2) {
      const Tensor as_out_in = in_by_out ? w.t() : w;
      const Tensor widened = quantized::dequantize(quantized::quantize(as_out_in, format));
      w = in_by_out ? widened.t().contiguous() : widened;
    }
    weights.emplace(item.key(), w);
  }
  DequantizedReference ref;
  ref.head = quantized::dequantize(quantized::quantize_int8(float_model->lm_head_weight()));
  ref.model = models::CausalLM(float_model->config(), std::move(weights));
  return ref;
}

class QuantizedFixture : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(QuantizedFixture, PromptAndDecodeMatchTheDequantizedModel) {
  NoGradGuard no_grad;
  const auto& [arch, type] = GetParam();
  const auto tensors = io::load_safetensors(model_dir(arch) + "/reference.safetensors");
  const Tensor ids = tensors.at("input_ids").clone();
  models::PretrainedOptions options;
  options.quantize = type;
  models::CausalLM model = models::from_pretrained(model_dir(arch), options);
  EXPECT_EQ(model->quantization(), type);
  DequantizedReference ref = dequantized_reference(arch, quantized::parse_format(type, "test"));
  const Tensor expected = nn::functional::linear(ref.model->hidden(ids), ref.head);
  const double scale = max_abs(expected);

  // A 24-token prompt: float32 activations over the widened weights, or on AMX-INT8 tiles the
  // activations quantized as a decoding step's are (Note [Quantized prompts on AMX]).
  const Tensor prompt_logits = model->forward(ids);
  const bool prompt_quantizes = cpu::quantizes_activations(ids.size(1));
  EXPECT_LE(max_abs(prompt_logits - expected), (prompt_quantizes ? 0.03 : 2e-5) * scale) << arch << " " << type;

  // One token at a time: each step's activations quantized in blocks of 32 (about 0.4% each).
  models::DecoderCache cache = model->make_cache(1, ids.size(1));
  double worst = 0;
  for (int64_t t = 0; t < ids.size(1); ++t) {
    const Tensor step = model->forward_cached(ids.narrow(1, t, 1), cache);
    worst = std::max(worst, max_abs(step.select(1, 0) - expected.select(1, t)));
  }
  EXPECT_LE(worst, 0.03 * scale) << arch << " " << type;
  EXPECT_GT(worst, 0.0) << "decoding steps quantize their activations";
  if (prompt_quantizes) EXPECT_GT(max_abs(prompt_logits - expected), 0.0) << "the prompt quantizes its activations";
}

// Captured decoding (CapturedDecoder) of a quantized model, in float32 and bfloat16: each
// replayed step equals the eager decode_step bitwise, and in float32 the cached forward's
// step to float32 rounding (the steps' activations are quantized the same way in both).
TEST_P(QuantizedFixture, CapturedDecodingEqualsTheEagerSteps) {
  NoGradGuard no_grad;
  const auto& [arch, type] = GetParam();
  const Tensor ids = io::load_safetensors(model_dir(arch) + "/reference.safetensors").at("input_ids").clone();
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    models::PretrainedOptions options;
    options.quantize = type;
    options.dtype = dtype;
    models::CausalLM model = models::from_pretrained(model_dir(arch), options);
    const int64_t length = ids.size(1);
    models::DecoderCache cached = model->make_cache(1, length), eager = model->make_cache(1, length),
                         captured = model->make_cache(1, length);
    for (models::DecoderCache* cache : {&cached, &eager, &captured}) model->forward_cached(ids.narrow(1, 0, 4), *cache);
    models::CapturedDecoder decoder(model, captured);
    for (int64_t t = 4; t < length; ++t) {
      const Tensor token = ids.narrow(1, t, 1);
      const Tensor forward = model->forward_cached(token, cached).select(1, 0);
      const Tensor stepped = model->decode_step(token, tensor(std::vector<int64_t>{t}), eager).select(1, 0);
      const Tensor replayed = decoder.step(token);
      EXPECT_TRUE(replayed.equal(stepped)) << arch << " " << type << " " << dtype_name(dtype) << " position " << t;
      if (dtype == kFloat32) EXPECT_LE(max_abs(stepped - forward), 1e-5 * max_abs(forward)) << arch << " " << type;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, QuantizedFixture,
                         ::testing::Combine(::testing::Values("llama", "mistral", "qwen2", "qwen3", "gemma", "phi3",
                                                              "gpt2"),
                                            ::testing::Values("int8", "int4")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

// save_quantized writes the blocks (Note [Quantized checkpoints]); from_pretrained reads them
// back as stored: the same blocks, float parameters that are the blocks widened, and decoding
// logits equal bit for bit to the model that was saved.
TEST(QuantizedModel, SavedBlocksLoadBackAsStored) {
  NoGradGuard no_grad;
  for (const char* arch : {"llama", "gpt2"})
    for (const char* type : {"int8", "int4"}) {
      SCOPED_TRACE(std::string(arch) + " " + type);
      models::PretrainedOptions options;
      options.quantize = type;
      models::CausalLM model = models::from_pretrained(model_dir(arch), options);
      testutil::TempDirectory dir(std::string(arch) + "_" + type);
      models::save_quantized(model, dir.path());

      const io::SafeOpen file(dir.path() + "/model.safetensors");
      EXPECT_EQ(file.metadata().at("quantization"), type);
      const bool gpt2 = std::string(arch) == "gpt2";
      const std::string projection = gpt2 ? "transformer.h.0.attn.c_attn" : "model.layers.0.self_attn.q_proj";
      EXPECT_FALSE(file.contains(projection + ".weight"));
      EXPECT_EQ(file.info(projection + ".qweight").dtype,
                std::string(type) == "int4" ? io::FileDtype::U8 : io::FileDtype::I8);
      EXPECT_EQ(file.info(projection + ".scales").dtype, io::FileDtype::F16);
      EXPECT_EQ(file.info("lm_head.qweight").dtype, io::FileDtype::I8);

      models::CausalLM loaded = models::from_pretrained(dir.path());
      EXPECT_EQ(loaded->quantization(), type);
      const auto saved_blocks = model->quantized_weights(), loaded_blocks = loaded->quantized_weights();
      ASSERT_EQ(saved_blocks.size(), loaded_blocks.size());
      for (const auto& [name, weight] : saved_blocks) {
        const quantized::QuantizedWeight& back = loaded_blocks.at(name);
        EXPECT_EQ(back.format, weight.format) << name;
        EXPECT_TRUE(equal(back.values, weight.values) && equal(back.scales, weight.scales)) << name;
      }
      const Tensor widened = quantized::dequantize(saved_blocks.at(projection + ".weight"));
      const Tensor parameter = loaded->named_parameters()[projection + ".weight"];
      EXPECT_TRUE(equal(gpt2 ? parameter.t() : parameter, widened));

      const Tensor ids = io::load_safetensors(model_dir(arch) + "/reference.safetensors").at("input_ids").narrow(1, 0, 6);
      models::DecoderCache saved_cache = model->make_cache(1, 6), loaded_cache = loaded->make_cache(1, 6);
      for (int64_t t = 0; t < 6; ++t) {
        const Tensor expected = model->forward_cached(ids.narrow(1, t, 1), saved_cache);
        EXPECT_TRUE(equal(loaded->forward_cached(ids.narrow(1, t, 1), loaded_cache), expected)) << t;
      }
    }
}

// A quantized file that does not hold together is one error naming the file and the tensor.
TEST(QuantizedModel, BadQuantizedFilesNameTheProblem) {
  NoGradGuard no_grad;
  models::PretrainedOptions options;
  options.quantize = "int4";
  models::CausalLM model = models::from_pretrained(model_dir("llama"), options);
  testutil::TempDirectory dir("bad");
  models::save_quantized(model, dir.path());
  const std::string path = dir.path() + "/model.safetensors";
  const io::LoadedTensors good = io::load_safetensors(path);
  const std::string q_proj = "model.layers.0.self_attn.q_proj";
  auto rewrite = [&](const std::function<void(io::TensorList&, io::Metadata&)>& change) {
    io::TensorList tensors = good.tensors;
    io::Metadata metadata = good.metadata;
    change(tensors, metadata);
    io::save_safetensors(path, tensors, metadata);
  };
  auto erase = [](io::TensorList& tensors, const std::string& name) {
    std::erase_if(tensors, [&](const auto& item) { return item.first == name; });
  };

  options.quantize = "int8";
  testutil::expect_error([&] { models::from_pretrained(dir.path(), options); },
                         {path, "stored quantized to int4; quantize 'int8'"});
  rewrite([](io::TensorList&, io::Metadata& metadata) { metadata["quantization"] = "int3"; });
  testutil::expect_error([&] { models::from_pretrained(dir.path()); }, {path, "unknown quantization type 'int3'"});
  rewrite([&](io::TensorList& tensors, io::Metadata&) { erase(tensors, q_proj + ".scales"); });
  testutil::expect_error([&] { models::from_pretrained(dir.path()); },
                         {path, q_proj + ".qweight' and '" + q_proj + ".scales' must come together"});
  rewrite([&](io::TensorList& tensors, io::Metadata&) {
    for (auto& [name, tensor] : tensors)
      if (name == q_proj + ".qweight") tensor = tensor.to(kInt8);
  });
  testutil::expect_error([&] { models::from_pretrained(dir.path()); },
                         {path, "the blocks of '" + q_proj + ".weight' (int4)", "int4 values must be uint8"});
  rewrite([&](io::TensorList& tensors, io::Metadata&) {
    erase(tensors, q_proj + ".qweight");
    erase(tensors, q_proj + ".scales");
  });
  testutil::expect_error([&] { models::from_pretrained(dir.path()); }, {path, "missing [" + q_proj + ".weight]"});
  rewrite([&](io::TensorList& tensors, io::Metadata&) {
    erase(tensors, "lm_head.qweight");
    erase(tensors, "lm_head.scales");
  });
  testutil::expect_error([&] { models::from_pretrained(dir.path()); },
                         {"no quantized blocks for the head (lm_head.weight)"});
  rewrite([&](io::TensorList& tensors, io::Metadata&) {
    tensors.emplace_back("model.layers.0.mlp.extra.qweight", zeros({4, 16}, kUInt8));
  });
  testutil::expect_error([&] { models::from_pretrained(dir.path()); }, {"unexpected [model.layers.0.mlp.extra.qweight]"});
}

TEST(QuantizedModel, RefusesTrainingAndUnknownTypes) {
  models::PretrainedOptions options;
  options.quantize = "int8";
  options.trainable = true;
  testutil::expect_error([&] { models::from_pretrained(model_dir("llama"), options); }, {"inference only"});
  options.trainable = false;
  options.quantize = "int3";
  testutil::expect_error([&] { models::from_pretrained(model_dir("llama"), options); },
                         {"unknown quantization type 'int3'", "int8 or int4"});
}

}  // namespace
}  // namespace ember
