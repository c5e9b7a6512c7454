// Parses config.json and generation_config.json into PretrainedConfig / GenerationConfig:
// the defaults of transformers' config class of each architecture, and one named error for
// anything unknown or inconsistent. Tensor-free (fuzz/config_fuzz.cpp compiles it alone).
#include "ember/models/pretrained_config.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ember/error.h"

namespace ember::models {
namespace {

using nlohmann::json;

constexpr const char* kOp = "from_pretrained";
// Sizes above this are refused: every tensor dimension stays below 2^31, so the products of
// two never overflow int64 (the shapes are computed before any file is compared with them).
constexpr int64_t kMaxSize = int64_t{1} << 31;
// Layers beyond this are refused: the parser allocates per layer.
constexpr int64_t kMaxLayers = int64_t{1} << 16;

// A value as it appears in the file, short enough for an error message.
std::string shown(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

// Reads typed fields of one JSON object; every error names the file and the key. A null
// value reads as absent, as transformers' `None`.
class FieldReader {
 public:
  FieldReader(const json& object, const std::string& file, std::string prefix = "")
      : object_(object), file_(file), prefix_(std::move(prefix)) {}

  bool has(const char* key) const { return object_.contains(key) && !object_.at(key).is_null(); }
  const json& at(const char* key) const { return object_.at(key); }

  [[noreturn]] void fail(const char* key, const std::string& expected) const {
    EMBER_FAIL(kOp, file_, ": key '", prefix_, key, "' = ", shown(object_.at(key)), ": expected ", expected);
  }

  std::optional<int64_t> optional_integer(const char* key) const {
    if (!has(key)) return std::nullopt;
    const json& value = at(key);
    if (value.is_number_integer()) return value.get<int64_t>();
    // An integral float (4096.0) is an integer written by a tool that knows no other number.
    if (value.is_number_float()) {
      const double number = value.get<double>();
      if (std::isfinite(number) && number == std::floor(number) && std::fabs(number) < 9e15)
        return static_cast<int64_t>(number);
    }
    fail(key, "an integer");
  }

  int64_t integer(const char* key, int64_t fallback) const { return optional_integer(key).value_or(fallback); }

  // A size: in [1, 2^31).
  int64_t size(const char* key, int64_t fallback) const {
    const int64_t value = integer(key, fallback);
    if (value < 1 || value >= kMaxSize) {
      if (!has(key))
        EMBER_FAIL(kOp, file_, ": key '", prefix_, key, "' is absent and its default ", value, " is not a size");
      fail(key, "an integer in [1, 2^31)");
    }
    return value;
  }

  std::optional<double> optional_number(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (!at(key).is_number()) fail(key, "a number");
    return at(key).get<double>();
  }

  double number(const char* key, double fallback) const { return optional_number(key).value_or(fallback); }

  double positive_number(const char* key, double fallback) const {
    const double value = number(key, fallback);
    if (!(std::isfinite(value) && value > 0)) fail(key, "a finite number > 0");
    return value;
  }

  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!at(key).is_boolean()) fail(key, "true or false");
    return at(key).get<bool>();
  }

  std::optional<std::string> optional_string(const char* key) const {
    if (!has(key)) return std::nullopt;
    if (!at(key).is_string()) fail(key, "a string");
    return at(key).get<std::string>();
  }

  // An int, a list of ints, or null (nothing).
  std::optional<std::vector<int64_t>> optional_integer_list(const char* key) const {
    if (!has(key)) return std::nullopt;
    const json& value = at(key);
    if (value.is_number_integer()) return std::vector<int64_t>{value.get<int64_t>()};
    if (!value.is_array()) fail(key, "an integer or a list of integers");
    std::vector<int64_t> ids;
    for (const json& id : value) {
      if (!id.is_number_integer()) fail(key, "an integer or a list of integers");
      ids.push_back(id.get<int64_t>());
    }
    return ids;
  }

 private:
  const json& object_;
  const std::string& file_;
  std::string prefix_;
};

json parse_object(const std::string& text, const std::string& file) {
  json parsed;
  try {
    parsed = json::parse(text);
  } catch (const json::exception& e) {
    EMBER_FAIL(kOp, file, ": not valid JSON: ", e.what());
  }
  EMBER_CHECK(parsed.is_object(), kOp, file, ": expected a JSON object at the top level, got ", parsed.type_name());
  return parsed;
}

struct ArchitectureName {
  const char* class_name;
  const char* model_type;
  Architecture architecture;
};
constexpr ArchitectureName kArchitectures[] = {
    {"LlamaForCausalLM", "llama", Architecture::kLlama},   {"MistralForCausalLM", "mistral", Architecture::kMistral},
    {"Qwen2ForCausalLM", "qwen2", Architecture::kQwen2},   {"Qwen3ForCausalLM", "qwen3", Architecture::kQwen3},
    {"GemmaForCausalLM", "gemma", Architecture::kGemma},   {"Phi3ForCausalLM", "phi3", Architecture::kPhi3},
    {"GPT2LMHeadModel", "gpt2", Architecture::kGPT2},
};

std::string known_architectures() {
  std::string names;
  for (const auto& a : kArchitectures) names += std::string(names.empty() ? "" : ", ") + a.class_name;
  return names;
}

Architecture read_architecture(const FieldReader& fields, const std::string& file) {
  if (fields.has("architectures")) {
    const json& list = fields.at("architectures");
    if (!list.is_array() || (!list.empty() && !list[0].is_string()))
      fields.fail("architectures", "a list of class names");
    if (!list.empty()) {
      const std::string name = list[0].get<std::string>();
      for (const auto& a : kArchitectures)
        if (name == a.class_name) return a.architecture;
      EMBER_FAIL(kOp, file, ": key 'architectures[0]' = \"", name, "\": expected one of ", known_architectures());
    }
  }
  const auto model_type = fields.optional_string("model_type");
  EMBER_CHECK(model_type.has_value(), kOp, file, ": neither 'architectures' nor 'model_type' names the architecture");
  for (const auto& a : kArchitectures)
    if (*model_type == a.model_type) return a.architecture;
  fields.fail("model_type", "one of llama, mistral, qwen2, qwen3, gemma, phi3, gpt2");
}

// The fields whose defaults differ between transformers' config classes.
struct ClassDefaults {
  int64_t vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads;
  int64_t num_key_value_heads;  // 0: num_attention_heads
  int64_t head_dim;             // 0: hidden_size / num_attention_heads
  int64_t max_position_embeddings;
  double norm_eps;
  const char* activation;
  bool tie_word_embeddings;
  std::optional<int64_t> bos, eos, pad;
};

ClassDefaults class_defaults(Architecture architecture) {
  switch (architecture) {
    case Architecture::kLlama: return {32000, 4096, 11008, 32, 32, 0, 0, 2048, 1e-6, "silu", false, 1, 2, {}};
    case Architecture::kMistral: return {32000, 4096, 14336, 32, 32, 8, 0, 4096 * 32, 1e-6, "silu", false, 1, 2, {}};
    case Architecture::kQwen2: return {151936, 4096, 22016, 32, 32, 32, 0, 32768, 1e-6, "silu", false, {}, {}, {}};
    case Architecture::kQwen3: return {151936, 4096, 22016, 32, 32, 32, 128, 32768, 1e-6, "silu", false, {}, {}, {}};
    case Architecture::kGemma:
      return {256000, 3072, 24576, 28, 16, 16, 256, 8192, 1e-6, "gelu_pytorch_tanh", true, 2, 1, 0};
    case Architecture::kPhi3: return {32064, 3072, 8192, 32, 32, 0, 0, 4096, 1e-5, "silu", false, 1, 32000, 32000};
    case Architecture::kGPT2: return {50257, 768, 0, 12, 12, 0, 0, 1024, 1e-5, "gelu_new", true, 50256, 50256, {}};
  }
  return {};
}

Activation read_activation(const FieldReader& fields, const char* key, const std::string& name, bool gelu_means_tanh) {
  if (name == "silu" || name == "swish") return Activation::kSiLU;
  if (name == "gelu") return gelu_means_tanh ? Activation::kGELUTanh : Activation::kGELU;
  if (name == "gelu_python") return Activation::kGELU;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return Activation::kGELUTanh;
  if (name == "relu") return Activation::kReLU;
  fields.fail(key, "one of silu, swish, gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu");
}

void read_rope(const FieldReader& fields, const std::string& file, PretrainedConfig& c) {
  // transformers 4 writes rope_theta and rope_scaling beside the other fields; transformers 5
  // writes rope_parameters (holding rope_theta). rope_scaling wins where both are set, as in
  // transformers' convert_rope_params_to_dict.
  const char* key = fields.has("rope_scaling") ? "rope_scaling" : fields.has("rope_parameters") ? "rope_parameters" : nullptr;
  c.rope_theta = fields.positive_number("rope_theta", 10000.0);
  c.partial_rotary_factor = fields.number("partial_rotary_factor", 1.0);
  if (key) {
    const json& object = fields.at(key);
    if (!object.is_object()) fields.fail(key, "an object");
    const FieldReader rope(object, file, std::string(key) + ".");
    for (const auto& [name, value] : object.items())
      if (value.is_object())
        EMBER_FAIL(kOp, file, ": key '", key, ".", name, "' holds per-layer-type rope parameters, which ember does not "
                   "support: expected one set of rope parameters");
    c.rope_theta = rope.positive_number("rope_theta", c.rope_theta);
    c.partial_rotary_factor = rope.number("partial_rotary_factor", c.partial_rotary_factor);
    const char* type_key = rope.has("rope_type") ? "rope_type" : "type";
    RopeScaling& s = c.rope_scaling;
    s.type = rope.optional_string(type_key).value_or("default");
    if (s.type == "linear") {
      if (!rope.has("factor")) EMBER_FAIL(kOp, file, ": key '", key, ".factor' is missing: rope type linear needs it");
      s.factor = rope.positive_number("factor", 1.0);
    } else if (s.type == "llama3") {
      for (const char* needed : {"factor", "low_freq_factor", "high_freq_factor"})
        if (!rope.has(needed))
          EMBER_FAIL(kOp, file, ": key '", key, ".", needed, "' is missing: rope type llama3 needs it");
      s.factor = rope.positive_number("factor", 1.0);
      s.low_freq_factor = rope.positive_number("low_freq_factor", 1.0);
      s.high_freq_factor = rope.positive_number("high_freq_factor", 4.0);
      if (s.high_freq_factor <= s.low_freq_factor) rope.fail("high_freq_factor", "a number > low_freq_factor");
      s.original_max_position_embeddings =
          rope.size("original_max_position_embeddings", fields.size("original_max_position_embeddings",
                                                                    c.max_position_embeddings));
    } else if (s.type != "default") {
      rope.fail(type_key, "one of default, linear, llama3 (ember implements no other rope type)");
    }
  }
  if (!(c.partial_rotary_factor > 0 && c.partial_rotary_factor <= 1))
    EMBER_FAIL(kOp, file, ": partial_rotary_factor = ", c.partial_rotary_factor, ": expected a number in (0, 1]");
  const int64_t rotary = c.rotary_dim();
  EMBER_CHECK(rotary >= 2 && rotary % 2 == 0, kOp, file, ": the rotated width head_dim * partial_rotary_factor = ",
              c.head_dim, " * ", c.partial_rotary_factor, " = ", rotary, ": expected an even number >= 2");
}

// Qwen2 and Qwen3: a window on the layers that layer_types (or, without it, max_window_layers)
// marks sliding, only when use_sliding_window is on.
std::vector<int64_t> qwen_layer_windows(const FieldReader& fields, int64_t layers) {
  const bool on = fields.boolean("use_sliding_window", false);
  const int64_t window = fields.has("sliding_window") ? fields.size("sliding_window", 4096) : 0;
  std::vector<int64_t> windows(static_cast<size_t>(layers), 0);
  if (fields.has("layer_types")) {
    const json& types = fields.at("layer_types");
    if (!types.is_array() || static_cast<int64_t>(types.size()) != layers)
      fields.fail("layer_types", "a list of " + std::to_string(layers) + " layer types");
    for (int64_t i = 0; i < layers; ++i) {
      const json& type = types[static_cast<size_t>(i)];
      const bool sliding = type == "sliding_attention";
      if (!sliding && type != "full_attention") fields.fail("layer_types", "entries full_attention or sliding_attention");
      if (sliding && on) windows[static_cast<size_t>(i)] = window;
    }
  } else if (on) {
    const int64_t first_sliding = fields.integer("max_window_layers", 28);
    for (int64_t i = std::max<int64_t>(first_sliding, 0); i < layers; ++i) windows[static_cast<size_t>(i)] = window;
  }
  return windows;
}

}  // namespace

const char* architecture_name(Architecture architecture) {
  for (const auto& a : kArchitectures)
    if (a.architecture == architecture) return a.class_name;
  return "unknown";
}

int64_t PretrainedConfig::rotary_dim() const {
  // int(head_dim * partial_rotary_factor), as transformers computes it.
  return static_cast<int64_t>(static_cast<double>(head_dim) * partial_rotary_factor);
}

PretrainedConfig parse_pretrained_config(const std::string& json_text, const std::string& file) {
  const json root = parse_object(json_text, file);
  const FieldReader fields(root, file);
  PretrainedConfig c;
  c.file = file;
  c.json = json_text;
  c.architecture = read_architecture(fields, file);
  c.model_type = fields.optional_string("model_type").value_or("");
  const ClassDefaults d = class_defaults(c.architecture);
  const bool gpt2 = c.architecture == Architecture::kGPT2;

  // GPT-2 spells the sizes its own way (n_embd, n_layer, ...).
  c.vocab_size = fields.size("vocab_size", d.vocab_size);
  c.hidden_size = fields.size(gpt2 ? "n_embd" : "hidden_size", d.hidden_size);
  c.num_hidden_layers = fields.size(gpt2 ? "n_layer" : "num_hidden_layers", d.num_hidden_layers);
  if (c.num_hidden_layers > kMaxLayers)
    fields.fail(gpt2 ? "n_layer" : "num_hidden_layers", "at most " + std::to_string(kMaxLayers) + " layers");
  c.num_attention_heads = fields.size(gpt2 ? "n_head" : "num_attention_heads", d.num_attention_heads);
  c.max_position_embeddings = fields.size(gpt2 ? "n_positions" : "max_position_embeddings", d.max_position_embeddings);
  c.norm_eps = fields.number(gpt2 ? "layer_norm_epsilon" : "rms_norm_eps", d.norm_eps);
  if (!(std::isfinite(c.norm_eps) && c.norm_eps >= 0))
    fields.fail(gpt2 ? "layer_norm_epsilon" : "rms_norm_eps", "a finite number >= 0");
  if (gpt2) {
    c.intermediate_size = fields.has("n_inner") ? fields.size("n_inner", 0) : 4 * c.hidden_size;
    c.num_key_value_heads = c.num_attention_heads;
  } else {
    c.intermediate_size = fields.size("intermediate_size", d.intermediate_size);
    c.num_key_value_heads =
        fields.size("num_key_value_heads", d.num_key_value_heads ? d.num_key_value_heads : c.num_attention_heads);
  }
  const char* heads_key = gpt2 ? "n_head" : "num_attention_heads";
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    EMBER_FAIL(kOp, file, ": key 'num_key_value_heads' = ", c.num_key_value_heads, ": expected a divisor of ",
               heads_key, " = ", c.num_attention_heads);
  // An explicit head_dim (Qwen3, Gemma, Mistral's) need not divide hidden_size.
  const bool explicit_head_dim = !gpt2 && fields.has("head_dim");
  if (explicit_head_dim) {
    c.head_dim = fields.size("head_dim", 0);
  } else if (d.head_dim != 0) {
    c.head_dim = d.head_dim;
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      EMBER_FAIL(kOp, file, ": key '", gpt2 ? "n_embd" : "hidden_size", "' = ", c.hidden_size,
                 ": expected a multiple of ", heads_key, " = ", c.num_attention_heads);
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.num_attention_heads * c.head_dim >= kMaxSize)
    EMBER_FAIL(kOp, file, ": ", heads_key, " * head_dim = ", c.num_attention_heads, " * ", c.head_dim,
               ": expected less than 2^31");

  // Gemma: transformers 4 reads hidden_activation; transformers 5 reads hidden_act, where
  // "gelu" means the tanh approximation (the official releases' legacy value).
  const bool gemma = c.architecture == Architecture::kGemma;
  const char* activation_key = gpt2                                        ? "activation_function"
                               : gemma && fields.has("hidden_activation") ? "hidden_activation"
                                                                           : "hidden_act";
  c.activation_name = fields.optional_string(activation_key).value_or(d.activation);
  c.activation = fields.has(activation_key) ? read_activation(fields, activation_key, c.activation_name, gemma)
                                            : (gpt2 || gemma ? Activation::kGELUTanh : Activation::kSiLU);
  c.tie_word_embeddings = fields.boolean("tie_word_embeddings", d.tie_word_embeddings);

  switch (c.architecture) {
    case Architecture::kQwen2: c.qkv_bias = true; break;
    case Architecture::kLlama:
    case Architecture::kQwen3:
    case Architecture::kGemma: c.qkv_bias = c.o_bias = fields.boolean("attention_bias", false); break;
    case Architecture::kGPT2: c.qkv_bias = c.o_bias = c.mlp_bias = true; break;
    default: break;
  }
  if (c.architecture == Architecture::kLlama) c.mlp_bias = fields.boolean("mlp_bias", false);

  if (c.uses_rope()) read_rope(fields, file, c);
  if (c.architecture == Architecture::kPhi3 && c.rope_scaling.type != "default")
    EMBER_FAIL(kOp, file, ": Phi-3 rope scaling '", c.rope_scaling.type,
               "' (longrope/su) is not implemented: expected none");

  c.layer_windows.assign(static_cast<size_t>(c.num_hidden_layers), 0);
  if (c.architecture == Architecture::kMistral || c.architecture == Architecture::kPhi3) {
    // Absent: MistralConfig's 4096 (Phi3Config's None); null: no window.
    const bool absent = !root.contains("sliding_window");
    const int64_t fallback = c.architecture == Architecture::kMistral ? 4096 : 0;
    const int64_t window = absent ? fallback : fields.has("sliding_window") ? fields.size("sliding_window", 0) : 0;
    c.layer_windows.assign(static_cast<size_t>(c.num_hidden_layers), window);
  } else if (c.architecture == Architecture::kQwen2 || c.architecture == Architecture::kQwen3) {
    c.layer_windows = qwen_layer_windows(fields, c.num_hidden_layers);
  }

  if (gpt2) {
    c.scale_attn_weights = fields.boolean("scale_attn_weights", true);
    c.scale_attn_by_inverse_layer_idx = fields.boolean("scale_attn_by_inverse_layer_idx", false);
    if (fields.boolean("add_cross_attention", false))
      fields.fail("add_cross_attention", "false (ember builds decoder-only GPT-2)");
  }

  c.bos_token_id = root.contains("bos_token_id") ? fields.optional_integer("bos_token_id") : d.bos;
  c.pad_token_id = root.contains("pad_token_id") ? fields.optional_integer("pad_token_id") : d.pad;
  if (root.contains("eos_token_id")) {
    c.eos_token_ids = fields.optional_integer_list("eos_token_id").value_or(std::vector<int64_t>{});
  } else if (d.eos) {
    c.eos_token_ids = {*d.eos};
  }
  c.torch_dtype = fields.optional_string(fields.has("dtype") ? "dtype" : "torch_dtype").value_or("");
  return c;
}

GenerationConfig parse_generation_config(const std::string& json_text, const std::string& file, GenerationConfig base) {
  const json root = parse_object(json_text, file);
  const FieldReader fields(root, file);
  GenerationConfig g = std::move(base);
  if (auto ids = fields.optional_integer_list("eos_token_id")) g.eos_token_ids = *ids;
  if (auto id = fields.optional_integer("bos_token_id")) g.bos_token_id = id;
  if (auto id = fields.optional_integer("pad_token_id")) g.pad_token_id = id;
  if (auto n = fields.optional_integer("max_new_tokens")) g.max_new_tokens = n;
  if (auto n = fields.optional_integer("max_length")) g.max_length = n;
  if (auto k = fields.optional_integer("top_k")) g.top_k = k;
  if (auto t = fields.optional_number("temperature")) g.temperature = t;
  if (auto p = fields.optional_number("top_p")) g.top_p = p;
  if (fields.has("do_sample")) g.do_sample = fields.boolean("do_sample", false);
  return g;
}

}  // namespace ember::models
