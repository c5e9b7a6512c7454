// LoRA adapters on a pretrained causal LM, as PEFT defines them: y = x W^T + b + (alpha / r) *
// (dropout(x) A^T) B^T on the targeted projections, with the base weights frozen; saved and
// loaded as PEFT's adapter_model.safetensors + adapter_config.json, and merged into the weights
// for export.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/models/pretrained.h"

namespace ember::models {

struct LoraConfig {
  int64_t rank = 8;
  double alpha = 16;  // the adapter's output is scaled by alpha / rank
  // PEFT's matching: a projection is targeted when its module name equals an entry or ends
  // with "." + the entry ("q_proj", "self_attn.q_proj"; GPT-2: "c_attn", "c_proj", "c_fc").
  std::vector<std::string> target_modules = {"q_proj", "v_proj"};
  double dropout = 0;  // on the adapter's input, in training mode only

  bool operator==(const LoraConfig&) const = default;
};

// The projections' module names LoRA may target for this architecture ("q_proj", ...;
// Phi-3: "qkv_proj", "o_proj", "gate_up_proj", "down_proj"; GPT-2: "c_attn", "c_proj", "c_fc").
std::vector<std::string> lora_target_names(const PretrainedConfig& config);

// PEFT's default targets for the architecture: q_proj and v_proj; Phi-3 qkv_proj; GPT-2 c_attn.
std::vector<std::string> default_lora_targets(const PretrainedConfig& config);

// Freezes every parameter of the model and adds, per targeted projection of every layer,
// lora_A [rank, in] (kaiming-uniform, as PEFT) and lora_B [out, rank] (zeros) in float32, named
// "<projection>.lora_A.weight" beside the projection's weight. A target that matches no
// projection is an error naming it and the valid names; so is a model with adapters already.
void add_lora(CausalLMImpl& model, const LoraConfig& config);

// The model's adapter settings, or nullptr when it has none.
const LoraConfig* lora_config(const CausalLMImpl& model);

// PEFT's key of an adapter parameter: "base_model.model." + its name in the model.
std::string peft_key(const std::string& parameter_name);

// Writes adapter_model.safetensors (the adapters under PEFT's keys, float32) and
// adapter_config.json (peft_type LORA, task_type CAUSAL_LM, r, lora_alpha, lora_dropout,
// target_modules, fan_in_fan_out for GPT-2's [in, out] weights, base_model_name_or_path...)
// into `dir`, atomically.
void save_lora(const CausalLMImpl& model, const std::string& dir, const std::string& base_model_name_or_path = "");

// Reads adapter_config.json from `dir`, adds those adapters (or checks that the model's equal
// them) and copies adapter_model.safetensors into them. Missing, unexpected or misshapen
// tensors and settings ember does not implement (DoRA, rsLoRA, biases, per-module ranks) are
// errors naming the file and the key.
void load_lora(CausalLMImpl& model, const std::string& dir);

// Folds every adapter into its projection (W + (alpha / r) B A, transposed for [in, out]
// weights) as a new tensor owned by the model, in the weight's dtype, and removes the adapters.
// The merged weights keep requires_grad off.
void merge_lora(CausalLMImpl& model);

// The parameters that require grad, under their names in the model, as the parameters of a
// module of their own sharing their storage: the state of a fine-tune (the adapters, or every
// weight), for checkpoints and optimizers.
std::shared_ptr<nn::Module> trainable_parameters(const CausalLMImpl& model);

}  // namespace ember::models
