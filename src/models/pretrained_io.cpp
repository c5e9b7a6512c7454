// from_pretrained and save_pretrained: a Hugging Face checkpoint directory to a CausalLM and
// back. Every tensor is checked against the config before any is used, and each problem is an
// error naming the file and the key.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "decoder_layout.h"
#include "ember/atomic_file.h"
#include "ember/io/safetensors.h"
#include "ember/models/pretrained.h"

// Note [Mapped weights]: when a file holds a tensor in the compute dtype and the options ask
// for mapped weights (map_weights), or the model quantizes at load (its float weights are then
// read no more), the parameter is the read-only view of the memory map that io::SafeOpen
// returns: loading copies nothing and the pages come in on first use; each view keeps the map
// alive. Saving into the directory the model came from is safe: save_safetensors renames a new
// file over the old one, whose mapping stays valid. By default such weights are copied into
// ember's memory instead: a file's map has 4 KiB pages, the allocator's large blocks huge ones
// (Note [Huge pages for large blocks] in src/core/allocator.cpp), and decoding, which streams
// every weight each token, ran about 10% faster from the copies. Other dtypes are converted
// once, at load (never per forward), and trainable weights are owned copies an optimizer may
// write.

namespace ember::models {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr const char* kLoad = "from_pretrained";
constexpr const char* kSave = "save_pretrained";
constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

// A checkpoint tensor as found: its shard and its key there (GPT-2's may lack "transformer.").
struct FoundTensor {
  const io::SafeOpen* shard;
  std::string stored_name;
};

struct Checkpoint {
  std::map<std::string, std::unique_ptr<io::SafeOpen>> shards;  // by file name
  std::map<std::string, FoundTensor> tensors;                   // by the decoder's key
  std::string listing;  // the file that lists the tensors (the index or the single file), for errors
};

json parse_json_file(const fs::path& path) {
  const std::string text = read_file(path.string(), kLoad);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    EMBER_FAIL(kLoad, path.string(), ": not valid JSON: ", e.what());
  }
}

void add_tensor(Checkpoint& checkpoint, const PretrainedConfig& config, const io::SafeOpen& shard,
                const std::string& stored_name) {
  const std::string key = detail::canonical_key(config, stored_name);
  auto [it, inserted] = checkpoint.tensors.emplace(key, FoundTensor{&shard, stored_name});
  EMBER_CHECK(inserted, kLoad, shard.path(), ": tensor '", key, "' appears twice, as '", it->second.stored_name,
              "' and '", stored_name, "'");
}

const io::SafeOpen& open_shard(Checkpoint& checkpoint, const fs::path& dir, const std::string& file) {
  auto it = checkpoint.shards.find(file);
  if (it == checkpoint.shards.end())
    it = checkpoint.shards.emplace(file, std::make_unique<io::SafeOpen>((dir / file).string())).first;
  return *it->second;
}

// The tensors of model.safetensors, or of the shards the index's weight_map names.
Checkpoint open_checkpoint(const fs::path& dir, const PretrainedConfig& config) {
  Checkpoint checkpoint;
  const fs::path index_path = dir / kIndexName;
  if (fs::exists(index_path)) {
    checkpoint.listing = index_path.string();
    const json index = parse_json_file(index_path);
    EMBER_CHECK(index.is_object() && index.contains("weight_map") && index["weight_map"].is_object(), kLoad,
                index_path.string(), ": key 'weight_map' is missing: expected an object from tensor names to shard files");
    for (const auto& [name, file_value] : index["weight_map"].items()) {
      EMBER_CHECK(file_value.is_string(), kLoad, index_path.string(), ": key 'weight_map.", name,
                  "' is not a string: expected a shard file name");
      const std::string file = file_value.get<std::string>();
      // A shard is a file of this directory: no paths that would read elsewhere.
      EMBER_CHECK(!file.empty() && file.find('/') == std::string::npos && file.find('\\') == std::string::npos &&
                      file != "." && file != "..",
                  kLoad, index_path.string(), ": key 'weight_map.", name, "' = \"", file,
                  "\": expected a file name in the directory");
      EMBER_CHECK(fs::exists(dir / file), kLoad, index_path.string(), ": key 'weight_map.", name, "' names shard '",
                  file, "', which does not exist in ", dir.string());
      const io::SafeOpen& shard = open_shard(checkpoint, dir, file);
      EMBER_CHECK(shard.contains(name), kLoad, index_path.string(), ": key 'weight_map.", name, "' names shard '",
                  file, "', which holds no tensor '", name, "'");
      add_tensor(checkpoint, config, shard, name);
    }
  } else {
    const fs::path single = dir / kSingleName;
    EMBER_CHECK(fs::exists(single), kLoad, dir.string(), ": no ", kSingleName, " and no ", kIndexName);
    checkpoint.listing = single.string();
    const io::SafeOpen& shard = open_shard(checkpoint, dir, kSingleName);
    for (const auto& info : shard.tensors()) add_tensor(checkpoint, config, shard, info.name);
  }
  return checkpoint;
}

// At most `limit` names, then how many more.
std::string name_list(const std::vector<std::string>& names, size_t limit = 16) {
  std::string out = "[";
  for (size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > limit) out += ", ... " + std::to_string(names.size() - limit) + " more";
  return out + "]";
}

bool is_floating_file_dtype(io::FileDtype dtype) {
  return dtype == io::FileDtype::F32 || dtype == io::FileDtype::BF16 || dtype == io::FileDtype::F16 ||
         dtype == io::FileDtype::F64;
}

const char* config_dtype_name(ScalarType dtype) {
  switch (dtype) {
    case kFloat32: return "float32";
    case kBFloat16: return "bfloat16";
    case kFloat16: return "float16";
    case kFloat64: return "float64";
    default: return dtype_name(dtype);
  }
}

// Note [Quantized checkpoints]
// save_quantized writes a quantized model's blocks beside its other tensors: the weight under
// key K = "<stem>.weight" as "<stem>.qweight" (int8 [out, in], or uint8 [out, in / 2] for
// int4's two values a byte, ember/quantized.h) and "<stem>.scales" (float16 [out, in / 32]),
// GPT-2's Conv1D weights too (blocks are [out, in] whatever the float layout); the head as
// "lm_head.qweight" / "lm_head.scales", also when tied to the embedding, which stays a float
// tensor. The file's __metadata__ names the projections' format, "quantization": "int8" or
// "int4" (the head is int8 under both). from_pretrained installs the blocks as stored and makes
// each quantized weight's float parameter by widening them.
constexpr const char* kQuantizationKey = "quantization";
constexpr const char* kQuantizedValues = ".qweight";
constexpr const char* kQuantizedScales = ".scales";

std::string block_stem(const std::string& weight_key) {
  return weight_key.ends_with(".weight") ? weight_key.substr(0, weight_key.size() - 7) : weight_key;
}

// The blocks of the weight `weight_key` as stored: values, then scales.
void add_block_tensors(io::TensorList& tensors, const std::string& weight_key, const quantized::QuantizedWeight& weight) {
  tensors.emplace_back(block_stem(weight_key) + kQuantizedValues, weight.values);
  tensors.emplace_back(block_stem(weight_key) + kQuantizedScales, weight.scales);
}

// The "quantization" its shards' metadata names ("" when none); all shards must agree.
std::string stored_quantization(const Checkpoint& checkpoint) {
  std::string type;
  std::string first;
  for (const auto& [file, shard] : checkpoint.shards) {
    const auto& metadata = shard->metadata();
    auto it = metadata.find(kQuantizationKey);
    const std::string value = it == metadata.end() ? "" : it->second;
    if (first.empty()) {
      first = shard->path();
      type = value;
    }
    EMBER_CHECK(value == type, kLoad, shard->path(), ": __metadata__ quantization '", value, "' differs from ", first,
                "'s '", type, "'");
  }
  if (!type.empty()) quantized::parse_format(type, std::string(kLoad) + " " + first + ": __metadata__");
  return type;
}

// The blocks of every quantized weight by its checkpoint key (the head's by lm_head.weight).
std::map<std::string, quantized::QuantizedWeight> read_quantized_blocks(const Checkpoint& checkpoint,
                                                                        const std::vector<detail::CheckpointEntry>& entries,
                                                                        const std::string& type) {
  std::map<std::string, quantized::QuantizedWeight> blocks;
  std::set<std::string> keys;
  for (const auto& entry : entries) keys.insert(entry.name);
  keys.insert(CausalLMImpl::kLmHeadKey);
  for (const std::string& key : keys) {
    const std::string stem = block_stem(key);
    auto values = checkpoint.tensors.find(stem + kQuantizedValues);
    auto scales = checkpoint.tensors.find(stem + kQuantizedScales);
    if (values == checkpoint.tensors.end() && scales == checkpoint.tensors.end()) continue;
    EMBER_CHECK(values != checkpoint.tensors.end() && scales != checkpoint.tensors.end(), kLoad, checkpoint.listing,
                ": '", stem, kQuantizedValues, "' and '", stem, kQuantizedScales, "' must come together");
    const quantized::Format format =
        key == CausalLMImpl::kLmHeadKey ? quantized::Format::kInt8 : quantized::parse_format(type, kLoad);
    const FoundTensor& v = values->second;
    const FoundTensor& s = scales->second;
    try {
      blocks[key] = quantized::quantized_weight(format, v.shard->get_tensor(v.stored_name), s.shard->get_tensor(s.stored_name));
    } catch (const Error& e) {
      EMBER_FAIL(kLoad, v.shard->path(), ": the blocks of '", key, "' (", quantized::format_name(format), "): ",
                 e.what());
    }
    EMBER_CHECK(!checkpoint.tensors.count(key) || key == CausalLMImpl::kLmHeadKey, kLoad, checkpoint.listing,
                ": tensor '", key, "' is stored both as floats and as quantized blocks");
  }
  return blocks;
}

bool is_shard_name(const std::string& name) {
  return name.starts_with("model-") && name.ends_with(".safetensors") && name.find("-of-") != std::string::npos;
}

// Weights of an earlier save in another layout would otherwise be read with the new ones.
void remove_other_weight_files(const fs::path& dir, const std::set<std::string>& written) {
  std::error_code error;
  for (const auto& file : fs::directory_iterator(dir)) {
    const std::string name = file.path().filename().string();
    if ((name == kSingleName || name == kIndexName || is_shard_name(name)) && !written.count(name))
      fs::remove(file.path(), error);
  }
}

// config.json (its dtype updated to the weights') and generation_config.json if one was read.
void write_config_files(CausalLM& model, const fs::path& dir) {
  const PretrainedConfig& config = model->config();
  json config_json = json::parse(config.json.empty() ? "{}" : config.json);
  const char* dtype = config_dtype_name(model->lm_head_weight().scalar_type());
  bool dtype_written = false;
  for (const char* key : {"torch_dtype", "dtype"})
    if (config_json.contains(key)) {
      config_json[key] = dtype;
      dtype_written = true;
    }
  if (!dtype_written) config_json["torch_dtype"] = dtype;
  write_file_atomically((dir / "config.json").string(), config_json.dump(2) + "\n", kSave);
  if (!config.generation_json.empty())
    write_file_atomically((dir / "generation_config.json").string(), config.generation_json, kSave);
}

}  // namespace

std::vector<CheckpointTensor> checkpoint_tensors(const PretrainedConfig& config) {
  std::vector<CheckpointTensor> out;
  for (auto& entry : detail::checkpoint_entries(config)) out.push_back({entry.name, entry.shape});
  return out;
}

CausalLM from_pretrained(const std::string& dir_name, const PretrainedOptions& options) {
  EMBER_CHECK(options.dtype == kFloat32 || options.dtype == kBFloat16, kLoad, "dtype must be float32 or bfloat16, got ",
              dtype_name(options.dtype));
  const fs::path dir(dir_name);
  const fs::path config_path = dir / "config.json";
  EMBER_CHECK(fs::is_directory(dir), kLoad, dir_name, ": not a directory");
  EMBER_CHECK(fs::exists(config_path), kLoad, dir_name, ": no config.json");
  PretrainedConfig config = parse_pretrained_config(read_file(config_path.string(), kLoad), config_path.string());
  const fs::path generation_path = dir / "generation_config.json";
  if (fs::exists(generation_path)) {
    config.generation_json = read_file(generation_path.string(), kLoad);
    parse_generation_config(config.generation_json, generation_path.string());  // refuse a broken one now
  }

  const Checkpoint checkpoint = open_checkpoint(dir, config);
  const auto entries = detail::checkpoint_entries(config);
  const std::string quantization = stored_quantization(checkpoint);
  EMBER_CHECK(options.quantize.empty() || quantization.empty() || options.quantize == quantization, kLoad,
              checkpoint.listing, ": the weights are stored quantized to ", quantization, "; quantize '",
              options.quantize, "' would quantize them again");
  std::map<std::string, quantized::QuantizedWeight> blocks;
  if (!quantization.empty()) blocks = read_quantized_blocks(checkpoint, entries, quantization);
  // What the products will read is copied unless mapping is asked for (Note [Mapped weights]);
  // the float weights of a model quantized at load are read no more.
  const bool quantizes_at_load = !options.quantize.empty() && quantization.empty();
  const bool copy_weights = options.trainable || (!options.map_weights && !quantizes_at_load);
  if (!options.map_weights)
    for (auto& [key, weight] : blocks) weight = {weight.format, weight.values.clone(), weight.scales.clone()};
  std::set<std::string> block_keys;
  for (const auto& [key, weight] : blocks)
    block_keys.insert({block_stem(key) + kQuantizedValues, block_stem(key) + kQuantizedScales});
  std::vector<std::string> missing, unexpected;
  std::set<std::string> expected;
  for (const auto& entry : entries) {
    expected.insert(entry.name);
    if (!checkpoint.tensors.count(entry.name) && !blocks.count(entry.name)) missing.push_back(entry.name);
  }
  for (const auto& [name, found] : checkpoint.tensors)
    if (!expected.count(name) && !detail::is_ignorable_key(config, name) && !block_keys.count(name))
      unexpected.push_back(found.stored_name);
  EMBER_CHECK(missing.empty() && unexpected.empty(), kLoad, checkpoint.listing, ": the tensors do not match ",
              config_path.string(), " (", architecture_name(config.architecture), "): missing ", name_list(missing),
              ", unexpected ", name_list(unexpected));

  std::map<std::string, Tensor> weights;
  for (const auto& entry : entries) {
    if (auto it = blocks.find(entry.name); it != blocks.end()) {
      // The float parameter a quantized weight stands for (save_pretrained, LoRA and the
      // float paths read it); the products use the blocks as stored.
      const bool in_by_out = entry.layer >= 0 && detail::decoder_layout(config).weights_in_by_out;
      Tensor widened = quantized::dequantize(it->second, options.dtype);
      weights.emplace(entry.name, in_by_out ? widened.t().contiguous() : widened);
      continue;
    }
    const FoundTensor& found = checkpoint.tensors.at(entry.name);
    const io::TensorInfo& info = found.shard->info(found.stored_name);
    EMBER_CHECK(info.shape == entry.shape, kLoad, found.shard->path(), ": tensor '", found.stored_name, "' has shape ",
                info.shape, ", expected ", entry.shape, " from ", config_path.string());
    EMBER_CHECK(is_floating_file_dtype(info.dtype), kLoad, found.shard->path(), ": tensor '", found.stored_name,
                "' has dtype ", io::file_dtype_name(info.dtype), ", expected F32, BF16, F16 or F64");
    Tensor tensor = found.shard->get_tensor(found.stored_name);
    // As mapped when the file holds the compute dtype; otherwise converted once, here (Note
    // [Mapped weights]).
    if (tensor.scalar_type() != options.dtype) {
      tensor = tensor.to(options.dtype);
    } else if (copy_weights) {
      tensor = tensor.clone();
    }
    weights.emplace(entry.name, std::move(tensor));
  }
  CausalLM model(std::move(config), std::move(weights), options);
  if (!quantization.empty()) model->set_quantized_weights(quantization, blocks, checkpoint.listing);
  return model;
}

void save_pretrained(CausalLM& model, const std::string& dir_name, int64_t max_shard_bytes) {
  EMBER_CHECK(max_shard_bytes > 0, kSave, "max_shard_bytes must be positive, got ", max_shard_bytes);
  const fs::path dir(dir_name);
  std::error_code error;
  fs::create_directories(dir, error);
  EMBER_CHECK(!error, kSave, dir_name, ": cannot create the directory: ", error.message());
  const PretrainedConfig& config = model->config();

  // The checkpoint's tensors in transformers' order; a tied head is no parameter of its own.
  const auto parameters = model->named_parameters();
  std::vector<io::TensorList> shards(1);
  int64_t shard_bytes = 0, total_bytes = 0, total_parameters = 0;
  for (const auto& entry : detail::checkpoint_entries(config)) {
    const Tensor* parameter = parameters.find(entry.name);
    EMBER_CHECK(parameter != nullptr, kSave, "the model has no parameter '", entry.name, "'");
    const int64_t bytes = static_cast<int64_t>(parameter->nbytes());
    if (!shards.back().empty() && shard_bytes + bytes > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().emplace_back(entry.name, parameter->detach());
    shard_bytes += bytes;
    total_bytes += bytes;
    total_parameters += parameter->numel();
  }

  const io::Metadata metadata = {{"format", "pt"}};
  std::set<std::string> written;
  if (shards.size() == 1) {
    io::save_safetensors((dir / kSingleName).string(), shards.front(), metadata);
    written.insert(kSingleName);
  } else {
    json weight_map = json::object();
    const size_t count = shards.size();
    for (size_t i = 0; i < count; ++i) {
      char name[64];
      std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", i + 1, count);
      io::save_safetensors((dir / name).string(), shards[i], metadata);
      for (const auto& [key, tensor] : shards[i]) weight_map[key] = name;
      written.insert(name);
    }
    const json index = {{"metadata", {{"total_parameters", total_parameters}, {"total_size", total_bytes}}}, {"weight_map", weight_map}};
    write_file_atomically((dir / kIndexName).string(), index.dump(2) + "\n", kSave);
    written.insert(kIndexName);
  }
  remove_other_weight_files(dir, written);
  write_config_files(model, dir);
}

void save_quantized(CausalLM& model, const std::string& dir_name) {
  EMBER_CHECK(!model->quantization().empty(), kSave, "save_quantized: the model is not quantized (CausalLM::quantize)");
  const fs::path dir(dir_name);
  std::error_code error;
  fs::create_directories(dir, error);
  EMBER_CHECK(!error, kSave, dir_name, ": cannot create the directory: ", error.message());
  // The blocks in place of each quantized weight, the head's too (Note [Quantized checkpoints]).
  const auto parameters = model->named_parameters();
  const auto blocks = model->quantized_weights();
  io::TensorList tensors;
  for (const auto& entry : detail::checkpoint_entries(model->config())) {
    if (auto it = blocks.find(entry.name); it != blocks.end()) {
      add_block_tensors(tensors, entry.name, it->second);
      continue;
    }
    const Tensor* parameter = parameters.find(entry.name);
    EMBER_CHECK(parameter != nullptr, kSave, "the model has no parameter '", entry.name, "'");
    tensors.emplace_back(entry.name, parameter->detach());
  }
  if (!parameters.find(CausalLMImpl::kLmHeadKey))
    add_block_tensors(tensors, CausalLMImpl::kLmHeadKey, blocks.at(CausalLMImpl::kLmHeadKey));
  io::save_safetensors((dir / kSingleName).string(), tensors,
                       {{"format", "pt"}, {kQuantizationKey, model->quantization()}});
  remove_other_weight_files(dir, {kSingleName});
  write_config_files(model, dir);
}

std::vector<std::pair<std::string, Tensor>> quantized_block_tensors(const CausalLM& model) {
  io::TensorList tensors;
  for (const auto& [key, weight] : model->quantized_weights()) add_block_tensors(tensors, key, weight);
  return tensors;
}

GenerationConfig read_generation_config(const std::string& dir_name) {
  const fs::path dir(dir_name);
  const fs::path config_path = dir / "config.json", generation_path = dir / "generation_config.json";
  GenerationConfig base;
  if (fs::exists(config_path)) {
    // config.json's ids with its class's defaults, as transformers derives a generation config
    // from the model config when the directory has none.
    const PretrainedConfig config = parse_pretrained_config(read_file(config_path.string(), kLoad), config_path.string());
    base.eos_token_ids = config.eos_token_ids;
    base.bos_token_id = config.bos_token_id;
    base.pad_token_id = config.pad_token_id;
  }
  EMBER_CHECK(fs::exists(config_path) || fs::exists(generation_path), "read_generation_config", dir_name,
              ": neither generation_config.json nor config.json");
  if (!fs::exists(generation_path)) return base;
  return parse_generation_config(read_file(generation_path.string(), kLoad), generation_path.string(), std::move(base));
}

}  // namespace ember::models
