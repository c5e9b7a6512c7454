// LoRA on the pretrained fixtures: the adapter's arithmetic against float64, B = 0 leaving the
// base logits bitwise, merging, PEFT's key names and adapter_config.json, bitwise save/load
// round trips, gradients reaching the adapters only, and named errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ember/atomic_file.h"
#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/models/lora.h"
#include "ember/models/pretrained.h"
#include "models/decoder_layer.h"
#include "test_support.h"

namespace ember {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testutil::error_of;
using testutil::expect_error;

std::string model_dir(const std::string& arch) { return std::string(EMBER_PRETRAINED_FIXTURES) + "/models/" + arch; }

// The first `length` ids of the fixture's reference prompt, as [1, length].
Tensor prompt(const std::string& arch, int64_t length = 24) {
  return io::load_safetensors(model_dir(arch) + "/reference.safetensors").at("input_ids").narrow(1, 0, length).clone();
}

double max_abs(const Tensor& a) { return a.to(kFloat64).abs().max().item<double>(); }
double max_abs_diff(const Tensor& a, const Tensor& b) { return max_abs(a.to(kFloat64) - b.to(kFloat64)); }
bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() && a.to(kFloat64).eq(b.to(kFloat64)).all().item<bool>();
}

// A directory of this test, empty at the start and removed at the end.
struct ScratchDirectory {
  std::string path = ::testing::TempDir() + "/ember_lora_" + std::to_string(::getpid()) + "_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();
  ScratchDirectory() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDirectory() { fs::remove_all(path); }
};

// Random adapters (B too, unlike a fresh add_lora) so that they change the output.
void randomize_adapters(models::CausalLMImpl& model, uint64_t seed) {
  manual_seed(seed);
  NoGradGuard no_grad;
  for (auto& item : model.named_parameters())
    if (item.key().find(".lora_") != std::string::npos) item.value().copy_(randn(item.value().sizes()) * 0.2);
}

struct LoraCase {
  std::string arch;
  std::vector<std::string> targets;
};
void PrintTo(const LoraCase& lora_case, std::ostream* out) { *out << lora_case.arch; }

// One case per weight layout: separate q/k/v ([out, in]), fused qkv and gate_up, and GPT-2's
// Conv1D ([in, out]) where "c_proj" names both the attention's and the MLP's output.
const std::vector<LoraCase> kCases = {
    {"llama", {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}},
    {"phi3", {"qkv_proj", "gate_up_proj"}},
    {"gpt2", {"c_attn", "c_proj"}},
    {"qwen2", {"q_proj", "v_proj"}},
};

class LoraFixture : public ::testing::TestWithParam<LoraCase> {
 protected:
  models::LoraConfig config() const {
    models::LoraConfig lora;
    lora.rank = 4;
    lora.alpha = 8;
    lora.target_modules = GetParam().targets;
    return lora;
  }
};

TEST(LoraAdapter, OutputMatchesFloat64) {
  manual_seed(3);
  const Tensor x = randn({2, 5, 12}), y = randn({2, 5, 7});
  models::detail::LoraAdapter adapter{randn({3, 12}), randn({7, 3}), 16.0 / 3, 0};
  const Tensor expected = y.to(kFloat64) + (x.to(kFloat64).matmul(adapter.lora_A.to(kFloat64).t()))
                                                   .matmul(adapter.lora_B.to(kFloat64).t()) *
                                               adapter.scale;
  const Tensor out = models::detail::add_adapter_output(y, x, adapter, /*training=*/true);
  EXPECT_EQ(out.scalar_type(), kFloat32);
  EXPECT_LE(max_abs_diff(out, expected), 1e-5 * max_abs(expected));

  // bfloat16 layers: the float32 sum rounded once, as PEFT.
  const Tensor out_bf16 = models::detail::add_adapter_output(y.to(kBFloat16), x.to(kBFloat16), adapter, true);
  EXPECT_EQ(out_bf16.scalar_type(), kBFloat16);
  const Tensor expected_bf16 = y.to(kBFloat16).to(kFloat64) +
                               (x.to(kBFloat16).to(kFloat64).matmul(adapter.lora_A.to(kFloat64).t()))
                                       .matmul(adapter.lora_B.to(kFloat64).t()) *
                                   adapter.scale;
  EXPECT_LE(max_abs_diff(out_bf16, expected_bf16), max_abs(expected_bf16) * 0x1p-8);  // one bf16 rounding
}

TEST(LoraAdapter, DropoutOnlyInTraining) {
  manual_seed(4);
  const Tensor x = randn({4, 16}), y = zeros({4, 8});
  models::detail::LoraAdapter adapter{randn({2, 16}), randn({8, 2}), 1.0, 0.5};
  const Tensor evaluation = models::detail::add_adapter_output(y, x, adapter, /*training=*/false);
  adapter.dropout = 0;
  EXPECT_TRUE(bitwise_equal(evaluation, models::detail::add_adapter_output(y, x, adapter, false)));
  adapter.dropout = 0.5;
  EXPECT_FALSE(bitwise_equal(evaluation, models::detail::add_adapter_output(y, x, adapter, true)));
}

TEST_P(LoraFixture, LogitsEqualTheBaseWithFloat64MergedWeights) {
  const bool in_by_out = GetParam().arch == "gpt2";
  models::CausalLM model = models::from_pretrained(model_dir(GetParam().arch));
  models::add_lora(*model, config());
  randomize_adapters(*model, 7);
  const double scale = 8.0 / 4;

  // W + scale B A in float64, rounded once, as the weights of a plain model.
  NoGradGuard no_grad;
  std::map<std::string, Tensor> weights;
  const auto parameters = model->named_parameters();
  for (const auto& item : parameters)
    if (item.key().find(".lora_") == std::string::npos) weights[item.key()] = item.value().clone();
  int64_t adapted = 0;
  for (const auto& item : parameters) {
    if (!item.key().ends_with(".lora_A.weight")) continue;
    const std::string module = item.key().substr(0, item.key().size() - std::string(".lora_A.weight").size());
    Tensor delta = parameters[module + ".lora_B.weight"].to(kFloat64).matmul(item.value().to(kFloat64)) * scale;
    if (in_by_out) delta = delta.t();
    Tensor& weight = weights.at(module + ".weight");
    weight = (weight.to(kFloat64) + delta).to(kFloat32);
    ++adapted;
  }
  EXPECT_EQ(adapted, static_cast<int64_t>(GetParam().arch == "gpt2" ? 3 : GetParam().targets.size()) *
                         model->config().num_hidden_layers);
  models::CausalLM reference(model->config(), weights);
  const Tensor ids = prompt(GetParam().arch);
  const Tensor expected = reference->forward(ids);
  EXPECT_LE(max_abs_diff(model->forward(ids), expected), 1e-5 * max_abs(expected));
}

TEST_P(LoraFixture, ZeroBGivesTheBaseLogitsExactly) {
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    models::PretrainedOptions options;
    options.dtype = dtype;
    models::CausalLM base = models::from_pretrained(model_dir(GetParam().arch), options);
    models::CausalLM model = models::from_pretrained(model_dir(GetParam().arch), options);
    models::add_lora(*model, config());
    NoGradGuard no_grad;
    const Tensor ids = prompt(GetParam().arch);
    EXPECT_TRUE(bitwise_equal(model->forward(ids), base->forward(ids))) << dtype_name(dtype);
  }
}

TEST_P(LoraFixture, MergedEqualsUnmerged) {
  models::CausalLM model = models::from_pretrained(model_dir(GetParam().arch));
  models::add_lora(*model, config());
  randomize_adapters(*model, 11);
  NoGradGuard no_grad;
  const Tensor ids = prompt(GetParam().arch);
  const Tensor unmerged = model->forward(ids);
  models::merge_lora(*model);
  EXPECT_EQ(models::lora_config(*model), nullptr);
  EXPECT_LE(max_abs_diff(model->forward(ids), unmerged), 1e-5 * max_abs(unmerged));

  // The merged model is a plain checkpoint again: the base's keys and shapes, saved and loaded.
  std::vector<std::string> names;
  for (const auto& item : model->named_parameters()) names.push_back(item.key());
  std::vector<std::string> expected_names;
  for (const auto& tensor : models::checkpoint_tensors(model->config())) expected_names.push_back(tensor.name);
  std::sort(names.begin(), names.end());
  std::sort(expected_names.begin(), expected_names.end());
  EXPECT_EQ(names, expected_names);
  ScratchDirectory dir;
  models::save_pretrained(model, dir.path);
  EXPECT_TRUE(bitwise_equal(models::from_pretrained(dir.path)->forward(ids), model->forward(ids)));
}

TEST_P(LoraFixture, SaveLoadRoundTripIsBitwise) {
  models::CausalLM model = models::from_pretrained(model_dir(GetParam().arch));
  models::add_lora(*model, config());
  randomize_adapters(*model, 13);
  ScratchDirectory dir;
  models::save_lora(*model, dir.path, model_dir(GetParam().arch));

  models::CausalLM loaded = models::from_pretrained(model_dir(GetParam().arch));
  models::load_lora(*loaded, dir.path);
  ASSERT_NE(models::lora_config(*loaded), nullptr);
  EXPECT_EQ(*models::lora_config(*loaded), config());
  const auto expected = model->named_parameters();
  const auto got = loaded->named_parameters();
  ASSERT_EQ(got.size(), expected.size());
  for (const auto& item : expected) {
    ASSERT_NE(got.find(item.key()), nullptr) << item.key();
    EXPECT_TRUE(bitwise_equal(*got.find(item.key()), item.value())) << item.key();
  }
  NoGradGuard no_grad;
  const Tensor ids = prompt(GetParam().arch);
  EXPECT_TRUE(bitwise_equal(loaded->forward(ids), model->forward(ids)));
  // Loading into a model with the same adapters overwrites them.
  models::load_lora(*loaded, dir.path);
  EXPECT_TRUE(bitwise_equal(loaded->forward(ids), model->forward(ids)));
}

TEST_P(LoraFixture, OnlyTheAdaptersGetGradients) {
  models::CausalLM model = models::from_pretrained(model_dir(GetParam().arch));
  models::add_lora(*model, config());
  randomize_adapters(*model, 17);
  const Tensor ids = prompt(GetParam().arch);
  model->loss(ids.narrow(1, 0, 23), ids.narrow(1, 1, 23)).backward();
  int64_t adapters = 0;
  for (const auto& item : model->named_parameters()) {
    const bool adapter = item.key().find(".lora_") != std::string::npos;
    EXPECT_EQ(item.value().requires_grad(), adapter) << item.key();
    EXPECT_EQ(item.value().grad().defined(), adapter) << item.key();
    if (adapter) {
      EXPECT_EQ(item.value().scalar_type(), kFloat32) << item.key();
      EXPECT_GT(max_abs(item.value().grad()), 0) << item.key();
      ++adapters;
    }
  }
  const auto trainable = models::trainable_parameters(*model)->named_parameters();
  EXPECT_EQ(static_cast<int64_t>(trainable.size()), adapters);
  for (const auto& item : trainable) EXPECT_NE(item.key().find(".lora_"), std::string::npos) << item.key();
}

INSTANTIATE_TEST_SUITE_P(Fixtures, LoraFixture, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.arch; });

// PEFT's keys, shapes and adapter_config.json for each weight layout.
void expect_peft_files(const std::string& arch, const std::vector<std::string>& targets,
                       const std::vector<std::pair<std::string, std::vector<int64_t>>>& layer0_tensors,
                       bool fan_in_fan_out) {
  models::CausalLM model = models::from_pretrained(model_dir(arch));
  models::LoraConfig lora;
  lora.target_modules = targets;
  models::add_lora(*model, lora);
  ScratchDirectory dir;
  models::save_lora(*model, dir.path, "/models/base");
  const io::SafeOpen file(dir.path + "/adapter_model.safetensors");
  EXPECT_EQ(file.keys().size(), layer0_tensors.size() * static_cast<size_t>(model->config().num_hidden_layers));
  for (const auto& [key, shape] : layer0_tensors) {
    ASSERT_TRUE(file.contains(key)) << arch << ": " << key;
    EXPECT_EQ(file.info(key).shape, shape) << key;
    EXPECT_EQ(file.info(key).dtype, io::FileDtype::F32) << key;
  }
  EXPECT_EQ(file.metadata().at("format"), "pt");
  const json config = json::parse(read_file(dir.path + "/adapter_config.json", "test"));
  EXPECT_EQ(config.at("peft_type"), "LORA");
  EXPECT_EQ(config.at("task_type"), "CAUSAL_LM");
  EXPECT_EQ(config.at("r"), 8);
  EXPECT_EQ(config.at("lora_alpha"), 16.0);
  EXPECT_EQ(config.at("lora_dropout"), 0.0);
  EXPECT_EQ(config.at("target_modules"), json(targets));
  EXPECT_EQ(config.at("bias"), "none");
  EXPECT_EQ(config.at("fan_in_fan_out"), fan_in_fan_out);
  EXPECT_EQ(config.at("base_model_name_or_path"), "/models/base");
  EXPECT_EQ(config.at("inference_mode"), true);
  EXPECT_EQ(config.at("use_dora"), false);
}

TEST(LoraPeft, LlamaKeysAndConfig) {
  const std::string p = "base_model.model.model.layers.0.self_attn.";
  expect_peft_files("llama", {"q_proj", "v_proj"},
                    {{p + "q_proj.lora_A.weight", {8, 64}},
                     {p + "q_proj.lora_B.weight", {64, 8}},
                     {p + "v_proj.lora_A.weight", {8, 64}},
                     {p + "v_proj.lora_B.weight", {32, 8}}},
                    false);
}

TEST(LoraPeft, Phi3FusedKeysAndConfig) {
  const std::string p = "base_model.model.model.layers.0.";
  expect_peft_files("phi3", {"qkv_proj", "gate_up_proj"},
                    {{p + "self_attn.qkv_proj.lora_A.weight", {8, 64}},
                     {p + "self_attn.qkv_proj.lora_B.weight", {128, 8}},
                     {p + "mlp.gate_up_proj.lora_A.weight", {8, 64}},
                     {p + "mlp.gate_up_proj.lora_B.weight", {256, 8}}},
                    false);
}

TEST(LoraPeft, Gpt2Conv1DKeysAndConfig) {
  const std::string p = "base_model.model.transformer.h.0.";
  expect_peft_files("gpt2", {"c_attn", "c_proj", "c_fc"},
                    {{p + "attn.c_attn.lora_A.weight", {8, 64}},
                     {p + "attn.c_attn.lora_B.weight", {192, 8}},
                     {p + "attn.c_proj.lora_A.weight", {8, 64}},
                     {p + "attn.c_proj.lora_B.weight", {64, 8}},
                     {p + "mlp.c_fc.lora_A.weight", {8, 64}},
                     {p + "mlp.c_fc.lora_B.weight", {128, 8}},
                     {p + "mlp.c_proj.lora_A.weight", {8, 128}},
                     {p + "mlp.c_proj.lora_B.weight", {64, 8}}},
                    true);
}

TEST(LoraPeft, TargetNamesPerArchitecture) {
  using Names = std::vector<std::string>;
  EXPECT_EQ(models::lora_target_names(models::from_pretrained(model_dir("llama"))->config()),
            (Names{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
  EXPECT_EQ(models::lora_target_names(models::from_pretrained(model_dir("phi3"))->config()),
            (Names{"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}));
  EXPECT_EQ(models::lora_target_names(models::from_pretrained(model_dir("gpt2"))->config()),
            (Names{"c_attn", "c_proj", "c_fc"}));
}

TEST(LoraErrors, UnknownTargetsNameThemAndTheValidOnes) {
  models::CausalLM llama = models::from_pretrained(model_dir("llama"));
  models::LoraConfig lora;
  lora.target_modules = {"q_proj", "c_attn"};
  expect_error([&] { models::add_lora(*llama, lora); }, {"'c_attn'", "LlamaForCausalLM", "q_proj", "down_proj"});
  EXPECT_EQ(models::lora_config(*llama), nullptr);  // nothing added
  models::CausalLM gpt2 = models::from_pretrained(model_dir("gpt2"));
  lora.target_modules = {"q_proj"};
  expect_error([&] { models::add_lora(*gpt2, lora); }, {"'q_proj'", "c_attn", "c_fc"});
  lora.target_modules = {"c_attn"};
  lora.rank = 0;
  expect_error([&] { models::add_lora(*gpt2, lora); }, {"rank", "0"});
  lora.rank = 4;
  models::add_lora(*gpt2, lora);
  expect_error([&] { models::add_lora(*gpt2, lora); }, {"already"});
}

TEST(LoraErrors, AdapterFilesEmberCannotLoadAreNamed) {
  models::CausalLM model = models::from_pretrained(model_dir("llama"));
  models::add_lora(*model, {});
  ScratchDirectory dir;
  models::save_lora(*model, dir.path);
  const std::string config_path = dir.path + "/adapter_config.json";
  const json good = json::parse(read_file(config_path, "test"));
  auto load_with = [&](const json& config) {
    write_file_atomically(config_path, config.dump(), "test");
    return [&] { models::load_lora(*models::from_pretrained(model_dir("llama")), dir.path); };
  };
  json dora = good;
  dora["use_dora"] = true;
  expect_error(load_with(dora), {"adapter_config.json", "use_dora"});
  json regex = good;
  regex["target_modules"] = ".*q_proj";
  expect_error(load_with(regex), {"adapter_config.json", "target_modules"});
  json other_rank = good;
  other_rank["r"] = 4;
  expect_error(load_with(other_rank), {"adapter_model.safetensors", "wrong shape",
                                       "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"});
  json more_targets = good;
  more_targets["target_modules"] = {"q_proj", "v_proj", "o_proj"};
  expect_error(load_with(more_targets), {"missing", "o_proj.lora_A.weight"});
  load_with(good)();  // the untouched file still loads
  fs::remove(dir.path + "/adapter_model.safetensors");
  expect_error(load_with(good), {"adapter_model.safetensors"});
}

}  // namespace
}  // namespace ember
