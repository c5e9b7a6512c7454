// LoRA adapters on the pretrained decoder: which projections a target names, adding, merging,
// and PEFT's adapter_model.safetensors + adapter_config.json both ways.
#include "ember/models/lora.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "decoder_layer.h"
#include "decoder_layout.h"
#include "ember/atomic_file.h"
#include "ember/autograd.h"
#include "ember/io/safetensors.h"
#include "ember/nn/init.h"

namespace ember::models {

namespace detail {

struct LoraAccess {
  static std::vector<std::shared_ptr<DecoderLayerImpl>>& layers(CausalLMImpl& model) { return model.layers_; }
  static std::shared_ptr<const LoraConfig>& config(CausalLMImpl& model) { return model.lora_; }
  static const LoraConfig* config(const CausalLMImpl& model) { return model.lora_.get(); }
};

}  // namespace detail

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using detail::WeightRole;
constexpr const char* kAdd = "add_lora";
constexpr const char* kLoad = "load_lora";
constexpr const char* kSave = "save_lora";
constexpr const char* kWeightsName = "adapter_model.safetensors";
constexpr const char* kConfigName = "adapter_config.json";

bool is_projection(WeightRole role) {
  switch (role) {
    case WeightRole::kQuery: case WeightRole::kKey: case WeightRole::kValue: case WeightRole::kQKV:
    case WeightRole::kOutput: case WeightRole::kGate: case WeightRole::kUp: case WeightRole::kGateUp:
    case WeightRole::kDown: return true;
    default: return false;
  }
}

// A projection LoRA may target: its module's full name ("model.layers.0.self_attn.q_proj")
// and its sizes.
struct Projection {
  int64_t layer;
  WeightRole role;
  std::string module;
  int64_t in, out;
};

std::vector<Projection> projections(const PretrainedConfig& config) {
  const bool in_by_out = detail::decoder_layout(config).weights_in_by_out;
  std::vector<Projection> out;
  for (const auto& entry : detail::checkpoint_entries(config)) {
    if (entry.layer < 0 || !is_projection(entry.role)) continue;
    const int64_t rows = entry.shape[0], columns = entry.shape[1];
    out.push_back({entry.layer, entry.role, entry.name.substr(0, entry.name.rfind('.')), in_by_out ? rows : columns,
                   in_by_out ? columns : rows});
  }
  return out;
}

// PEFT's rule: the target is the module's name or a dotted suffix of it.
bool targets(const std::string& module, const std::string& target) {
  return module == target || (module.size() > target.size() && module.ends_with(target) &&
                              module[module.size() - target.size() - 1] == '.');
}

bool is_adapter_name(const std::string& name) {
  return name.ends_with(".lora_A.weight") || name.ends_with(".lora_B.weight");
}

std::string adapter_config_json(const CausalLMImpl& model, const LoraConfig& lora, const std::string& base_model) {
  json config = {
      {"peft_type", "LORA"},
      {"task_type", "CAUSAL_LM"},
      {"base_model_name_or_path", base_model.empty() ? json(nullptr) : json(base_model)},
      {"revision", nullptr},
      {"inference_mode", true},
      {"r", lora.rank},
      {"lora_alpha", lora.alpha},
      {"lora_dropout", lora.dropout},
      {"target_modules", lora.target_modules},
      {"bias", "none"},
      {"fan_in_fan_out", detail::decoder_layout(model.config()).weights_in_by_out},
      {"use_rslora", false},
      {"use_dora", false},
      {"lora_bias", false},
      {"init_lora_weights", true},
      {"modules_to_save", nullptr},
      {"layers_to_transform", nullptr},
      {"layers_pattern", nullptr},
      {"rank_pattern", json::object()},
      {"alpha_pattern", json::object()},
  };
  return config.dump(2) + "\n";
}

// adapter_config.json's settings; what ember does not implement is an error naming the key.
LoraConfig parse_adapter_config(const std::string& path) {
  json config;
  try {
    config = json::parse(read_file(path, kLoad));
  } catch (const json::exception& e) {
    EMBER_FAIL(kLoad, path, ": not valid JSON: ", e.what());
  }
  EMBER_CHECK(config.is_object(), kLoad, path, ": expected a JSON object");
  const auto value_or = [&](const char* key, const json& fallback) {
    return config.contains(key) && !config[key].is_null() ? config[key] : fallback;
  };
  EMBER_CHECK(value_or("peft_type", "LORA") == "LORA", kLoad, path, ": key 'peft_type' is ", config["peft_type"],
              ", expected \"LORA\"");
  EMBER_CHECK(config.contains("r") && config["r"].is_number_integer() && config["r"].get<int64_t>() > 0, kLoad, path,
              ": key 'r' must be a positive integer, got ", value_or("r", "nothing"));
  EMBER_CHECK(value_or("lora_alpha", 8).is_number(), kLoad, path, ": key 'lora_alpha' must be a number, got ",
              config["lora_alpha"]);
  EMBER_CHECK(value_or("lora_dropout", 0).is_number(), kLoad, path, ": key 'lora_dropout' must be a number, got ",
              config["lora_dropout"]);
  const json target_modules = value_or("target_modules", json::array());
  EMBER_CHECK(target_modules.is_array() && !target_modules.empty() &&
                  std::all_of(target_modules.begin(), target_modules.end(), [](const json& t) { return t.is_string(); }),
              kLoad, path, ": key 'target_modules' is ", target_modules,
              ": expected a non-empty list of module names (regular expressions are not supported)");
  for (const char* key : {"use_dora", "use_rslora", "lora_bias"})
    EMBER_CHECK(value_or(key, false) == false, kLoad, path, ": key '", key, "' is true, which ember does not implement");
  EMBER_CHECK(value_or("bias", "none") == "none", kLoad, path, ": key 'bias' is ", config["bias"],
              ", expected \"none\" (trained biases are not implemented)");
  for (const char* key : {"rank_pattern", "alpha_pattern"})
    EMBER_CHECK(value_or(key, json::object()).empty(), kLoad, path, ": key '", key,
                "' is not empty: per-module ranks and alphas are not implemented");
  for (const char* key : {"layers_to_transform", "modules_to_save"})
    EMBER_CHECK(value_or(key, nullptr).is_null(), kLoad, path, ": key '", key, "' is set, which ember does not implement");
  LoraConfig lora;
  lora.rank = config["r"].get<int64_t>();
  lora.alpha = value_or("lora_alpha", 8).get<double>();
  lora.dropout = value_or("lora_dropout", 0).get<double>();
  lora.target_modules = target_modules.get<std::vector<std::string>>();
  return lora;
}

}  // namespace

std::vector<std::string> lora_target_names(const PretrainedConfig& config) {
  std::vector<std::string> names;
  for (const auto& projection : projections(config)) {
    const std::string name = projection.module.substr(projection.module.rfind('.') + 1);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

std::vector<std::string> default_lora_targets(const PretrainedConfig& config) {
  switch (config.architecture) {
    case Architecture::kGPT2: return {"c_attn"};
    case Architecture::kPhi3: return {"qkv_proj"};
    default: return {"q_proj", "v_proj"};
  }
}

void add_lora(CausalLMImpl& model, const LoraConfig& lora) {
  EMBER_CHECK(lora_config(model) == nullptr, kAdd, "the model has LoRA adapters already");
  EMBER_CHECK(lora.rank > 0, kAdd, "rank must be positive, got ", lora.rank);
  EMBER_CHECK(lora.alpha > 0, kAdd, "alpha must be positive, got ", lora.alpha);
  EMBER_CHECK(lora.dropout >= 0 && lora.dropout < 1, kAdd, "dropout must be in [0, 1), got ", lora.dropout);
  EMBER_CHECK(!lora.target_modules.empty(), kAdd, "target_modules is empty; valid names for ",
              architecture_name(model.config().architecture), ": ", lora_target_names(model.config()));
  const std::vector<Projection> all = projections(model.config());
  for (const auto& target : lora.target_modules) {
    const bool found = std::any_of(all.begin(), all.end(), [&](const Projection& p) { return targets(p.module, target); });
    EMBER_CHECK(found, kAdd, "target module '", target, "' is no projection of ",
                architecture_name(model.config().architecture), "; valid names: ", lora_target_names(model.config()));
  }
  for (Tensor& parameter : model.parameters()) parameter.requires_grad_(false);
  const double scale = lora.alpha / static_cast<double>(lora.rank);
  auto& layers = detail::LoraAccess::layers(model);
  for (const auto& projection : all) {
    const bool targeted = std::any_of(lora.target_modules.begin(), lora.target_modules.end(),
                                      [&](const std::string& t) { return targets(projection.module, t); });
    if (!targeted) continue;
    // As PEFT: A kaiming-uniform with a = sqrt(5) (uniform in +-1/sqrt(in)), B zeros, so that
    // the adapted model starts equal to the base.
    Tensor lora_A = empty({lora.rank, projection.in}, kFloat32);
    {
      NoGradGuard no_grad;
      nn::init::kaiming_uniform_(lora_A, std::sqrt(5.0));
    }
    layers[static_cast<size_t>(projection.layer)]->add_adapter(projection.role, lora_A,
                                                               zeros({projection.out, lora.rank}, kFloat32), scale,
                                                               lora.dropout);
  }
  detail::LoraAccess::config(model) = std::make_shared<const LoraConfig>(lora);
}

const LoraConfig* lora_config(const CausalLMImpl& model) { return detail::LoraAccess::config(model); }

std::string peft_key(const std::string& parameter_name) { return "base_model.model." + parameter_name; }

void save_lora(const CausalLMImpl& model, const std::string& dir, const std::string& base_model_name_or_path) {
  const LoraConfig* lora = lora_config(model);
  EMBER_CHECK(lora != nullptr, kSave, "the model has no LoRA adapters");
  std::error_code error;
  fs::create_directories(dir, error);
  EMBER_CHECK(!error, kSave, dir, ": cannot create the directory: ", error.message());
  io::TensorList tensors;
  for (const auto& item : model.named_parameters())
    if (is_adapter_name(item.key())) tensors.emplace_back(peft_key(item.key()), item.value().detach());
  io::save_safetensors((fs::path(dir) / kWeightsName).string(), tensors, {{"format", "pt"}});
  write_file_atomically((fs::path(dir) / kConfigName).string(),
                        adapter_config_json(model, *lora, base_model_name_or_path), kSave);
}

void load_lora(CausalLMImpl& model, const std::string& dir) {
  const std::string config_path = (fs::path(dir) / kConfigName).string();
  const std::string weights_path = (fs::path(dir) / kWeightsName).string();
  EMBER_CHECK(fs::exists(config_path), kLoad, dir, ": no ", kConfigName);
  EMBER_CHECK(fs::exists(weights_path), kLoad, dir, ": no ", kWeightsName);
  const LoraConfig lora = parse_adapter_config(config_path);
  if (const LoraConfig* present = lora_config(model)) {
    EMBER_CHECK(*present == lora, kLoad, config_path, ": the adapters differ from the model's (r ", lora.rank,
                " vs ", present->rank, ", lora_alpha ", lora.alpha, " vs ", present->alpha, ", target_modules ",
                lora.target_modules, " vs ", present->target_modules, ")");
  } else {
    add_lora(model, lora);
  }
  const io::SafeOpen file(weights_path);
  std::vector<std::pair<Tensor, std::string>> copies;
  std::vector<std::string> missing, misshapen;
  std::set<std::string> expected;
  for (const auto& item : model.named_parameters()) {
    if (!is_adapter_name(item.key())) continue;
    const std::string key = peft_key(item.key());
    expected.insert(key);
    if (!file.contains(key)) {
      missing.push_back(key);
    } else if (item.value().sizes() != file.info(key).shape) {
      misshapen.push_back(str(key, " ", file.info(key).shape, " (expected ", item.value().sizes(), ")"));
    } else {
      copies.emplace_back(item.value(), key);
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& key : file.keys())
    if (!expected.count(key)) unexpected.push_back(key);
  EMBER_CHECK(missing.empty() && unexpected.empty() && misshapen.empty(), kLoad, weights_path,
              ": the tensors do not match ", config_path, ": missing ", missing, ", unexpected ", unexpected,
              ", wrong shape ", misshapen);
  NoGradGuard no_grad;
  for (auto& [parameter, key] : copies) parameter.copy_(file.get_tensor(key).to(kFloat32));
}

void merge_lora(CausalLMImpl& model) {
  EMBER_CHECK(lora_config(model) != nullptr, "merge_lora", "the model has no LoRA adapters");
  auto& layers = detail::LoraAccess::layers(model);
  for (const auto& projection : projections(model.config())) {
    auto& layer = layers[static_cast<size_t>(projection.layer)];
    if (layer->adapter(projection.role).defined()) layer->merge_adapter(projection.role);
  }
  detail::LoraAccess::config(model).reset();
}

std::shared_ptr<nn::Module> trainable_parameters(const CausalLMImpl& model) {
  auto view = std::make_shared<nn::Module>("TrainableParameters");
  for (const auto& item : model.named_parameters())
    if (item.value().requires_grad()) detail::register_dotted(*view, item.key(), item.value(), true);
  return view;
}

}  // namespace ember::models
