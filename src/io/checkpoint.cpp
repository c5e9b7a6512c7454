#include "ember/io/checkpoint.h"

#include "ember/random.h"
#include "io/metadata_json.h"

namespace ember::io {

namespace {

constexpr const char* kModelPrefix = "model.";
constexpr const char* kOptimizerPrefix = "optim.";
constexpr const char* kReservedPrefix = "ember.";
constexpr const char* kStepKey = "ember.step";
constexpr const char* kOptimizerKey = "ember.optimizer";
constexpr const char* kGeneratorKey = "ember.generator";

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

Metadata checkpoint_metadata(const optim::OptimizerStateDict& optimizer_state, int64_t step,
                             const Metadata& extra_metadata) {
  Metadata metadata;
  for (const auto& [key, value] : extra_metadata) {
    EMBER_CHECK(!starts_with(key, kReservedPrefix), "save_checkpoint", "extra metadata key '", key,
                "' uses the reserved prefix '", kReservedPrefix, "'");
    metadata[key] = value;
  }
  const GeneratorState rng = default_generator().get_state();
  metadata[kStepKey] = nlohmann::json(step).dump();
  metadata[kOptimizerKey] = detail::scalars_json(optimizer_state.scalars, "save_checkpoint");
  metadata[kGeneratorKey] = nlohmann::json{{"seed", rng.seed}, {"offset", rng.offset}}.dump();
  return metadata;
}

// What a checkpoint file holds, parsed and checked before anything is restored.
struct Checkpoint {
  int64_t step = 0;
  GeneratorState generator;
  OrderedDict<std::string, Tensor> model{"state_dict key"};
  optim::OptimizerStateDict optimizer;
};

nlohmann::json metadata_json(const Metadata& metadata, const char* key, const std::string& path) {
  return detail::metadata_json(metadata, key, path, "load_checkpoint", "an ember checkpoint");
}

Checkpoint read_checkpoint(const std::string& path) {
  LoadedTensors loaded = load_safetensors(path);
  Checkpoint out;

  const nlohmann::json step = metadata_json(loaded.metadata, kStepKey, path);
  EMBER_CHECK(step.is_number_integer() && step.get<int64_t>() >= 0, "load_checkpoint", "'", path, "': metadata '",
              kStepKey, "' must be a non-negative integer, got ", step.dump());
  out.step = step.get<int64_t>();

  const nlohmann::json rng = metadata_json(loaded.metadata, kGeneratorKey, path);
  EMBER_CHECK(rng.is_object() && rng.size() == 2 && rng.contains("seed") && rng.contains("offset") &&
                  rng["seed"].is_number_unsigned() && rng["offset"].is_number_unsigned(),
              "load_checkpoint", "'", path, "': metadata '", kGeneratorKey,
              "' must be {\"seed\": unsigned, \"offset\": unsigned}, got ", rng.dump());
  out.generator = {rng["seed"].get<uint64_t>(), rng["offset"].get<uint64_t>()};

  const nlohmann::json scalars = metadata_json(loaded.metadata, kOptimizerKey, path);
  out.optimizer.scalars =
      detail::json_value<std::map<std::string, double>>(scalars, kOptimizerKey, path, "an object of numbers",
                                                       "load_checkpoint");

  for (auto& [name, tensor] : loaded.tensors) {
    if (starts_with(name, kModelPrefix)) {
      out.model.insert(name.substr(std::char_traits<char>::length(kModelPrefix)), tensor);
    } else if (starts_with(name, kOptimizerPrefix)) {
      out.optimizer.tensors[name.substr(std::char_traits<char>::length(kOptimizerPrefix))] = tensor;
    } else {
      EMBER_FAIL("load_checkpoint", "'", path, "': tensor '", name, "' is neither '", kModelPrefix, "*' nor '",
                 kOptimizerPrefix, "*'");
    }
  }
  return out;
}

}  // namespace

void save_checkpoint(const std::string& path, const nn::Module& module, const optim::Optimizer& optimizer,
                     int64_t step, const Metadata& extra_metadata) {
  EMBER_CHECK(step >= 0, "save_checkpoint", "step must be non-negative, got ", step);
  const optim::OptimizerStateDict optimizer_state = optimizer.state_dict();
  TensorList tensors;
  for (const auto& item : module.state_dict()) tensors.emplace_back(kModelPrefix + item.key(), item.value());
  for (const auto& [key, tensor] : optimizer_state.tensors) tensors.emplace_back(kOptimizerPrefix + key, tensor);
  save_safetensors(path, tensors, checkpoint_metadata(optimizer_state, step, extra_metadata));
}

int64_t load_checkpoint(const std::string& path, nn::Module& module, optim::Optimizer& optimizer) {
  const Checkpoint checkpoint = read_checkpoint(path);
  // Each load_state_dict is all-or-nothing; the optimizer goes first and is put back if
  // the module rejects its tensors, so a failure changes nothing.
  const optim::OptimizerStateDict previous_optimizer = optimizer.state_dict();
  try {
    optimizer.load_state_dict(checkpoint.optimizer);
  } catch (const Error& e) {
    EMBER_FAIL("load_checkpoint", "'", path, "': ", e.what());
  }
  try {
    module.load_state_dict(checkpoint.model, /*strict=*/true);
  } catch (const Error& e) {
    optimizer.load_state_dict(previous_optimizer);
    EMBER_FAIL("load_checkpoint", "'", path, "': ", e.what());
  }
  default_generator().set_state(checkpoint.generator);
  return checkpoint.step;
}

int64_t load_checkpoint_weights(const std::string& path, nn::Module& module) {
  const Checkpoint checkpoint = read_checkpoint(path);
  try {
    module.load_state_dict(checkpoint.model, /*strict=*/true);
  } catch (const Error& e) {
    EMBER_FAIL("load_checkpoint", "'", path, "': ", e.what());
  }
  return checkpoint.step;
}

Metadata checkpoint_extra_metadata(const std::string& path) {
  const SafeOpen file(path);
  Metadata extra;
  for (const auto& [key, value] : file.metadata()) {
    if (!starts_with(key, kReservedPrefix)) extra[key] = value;
  }
  return extra;
}

}  // namespace ember::io
