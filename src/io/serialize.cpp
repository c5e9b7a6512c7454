// ember::save / ember::load (ember/serialize.h) on safetensors, with the kind of object each
// file holds in its metadata.
#include "ember/serialize.h"

#include <string>

#include "ember/error.h"
#include "ember/io/safetensors.h"
#include "io/metadata_json.h"

namespace ember {
namespace {

constexpr const char* kKindKey = "ember.kind";
constexpr const char* kOptimizerKey = "ember.optimizer";  // the same key as in training checkpoints
constexpr const char* kTensorName = "tensor";

// A recorded kind in words: "a module", "an optimizer", "a vector of tensors".
std::string kind_in_words(const std::string& kind) {
  if (kind == "tensors") return "a vector of tensors";
  return (kind == "optimizer" ? "an " : "a ") + kind;
}

// What the file holds, in words, for errors: its recorded kind, else what it looks like.
std::string described_kind(const io::Metadata& metadata) {
  if (auto it = metadata.find(kKindKey); it != metadata.end()) return kind_in_words(it->second);
  if (metadata.count("ember.step")) return "a training checkpoint (io::save_checkpoint; load it with io::load_checkpoint)";
  return "no recorded kind (not written by ember::save; a plain state_dict loads with io::load)";
}

// The file's tensors once its recorded kind is `kind`.
io::LoadedTensors load_kind(const std::string& path, const char* kind) {
  io::LoadedTensors loaded = io::load_safetensors(path);
  auto it = loaded.metadata.find(kKindKey);
  EMBER_CHECK(it != loaded.metadata.end() && it->second == kind, "ember::load", "'", path, "' holds ",
              described_kind(loaded.metadata), ", not ", kind_in_words(kind));
  return loaded;
}

void save_kind(const std::string& path, const char* kind, const io::TensorList& tensors, io::Metadata metadata = {}) {
  metadata[kKindKey] = kind;
  io::save_safetensors(path, tensors, metadata);
}

}  // namespace

void save(const nn::Module& module, const std::string& path) {
  io::TensorList tensors;
  for (const auto& item : module.state_dict()) tensors.emplace_back(item.key(), item.value());
  save_kind(path, "module", tensors);
}

void load(nn::Module& module, const std::string& path) {
  const io::LoadedTensors loaded = load_kind(path, "module");
  OrderedDict<std::string, Tensor> dict("state_dict key");
  for (const auto& [name, tensor] : loaded.tensors) dict.insert(name, tensor);
  try {
    module.load_state_dict(dict, /*strict=*/true);
  } catch (const Error& e) {
    EMBER_FAIL("ember::load", "'", path, "': ", e.what());
  }
}

void save(const optim::Optimizer& optimizer, const std::string& path) {
  const optim::OptimizerStateDict state = optimizer.state_dict();
  io::TensorList tensors(state.tensors.begin(), state.tensors.end());
  save_kind(path, "optimizer", tensors, {{kOptimizerKey, io::detail::scalars_json(state.scalars, "ember::save")}});
}

void load(optim::Optimizer& optimizer, const std::string& path) {
  const io::LoadedTensors loaded = load_kind(path, "optimizer");
  optim::OptimizerStateDict state;
  const nlohmann::json scalars =
      io::detail::metadata_json(loaded.metadata, kOptimizerKey, path, "ember::load", "an optimizer file");
  state.scalars = io::detail::json_value<std::map<std::string, double>>(scalars, kOptimizerKey, path,
                                                                        "an object of numbers", "ember::load");
  for (const auto& [name, tensor] : loaded.tensors) state.tensors[name] = tensor;
  try {
    optimizer.load_state_dict(state);
  } catch (const Error& e) {
    EMBER_FAIL("ember::load", "'", path, "': ", e.what());
  }
}

void save(const Tensor& tensor, const std::string& path) {
  EMBER_CHECK(tensor.defined(), "ember::save", "cannot save an undefined tensor to '", path, "'");
  save_kind(path, "tensor", {{kTensorName, tensor}});
}

void load(Tensor& tensor, const std::string& path) {
  const io::LoadedTensors loaded = load_kind(path, "tensor");
  EMBER_CHECK(loaded.tensors.size() == 1 && loaded.tensors[0].first == kTensorName, "ember::load", "'", path,
              "' must hold one tensor named '", kTensorName, "', it holds ", loaded.tensors.size());
  tensor = loaded.tensors[0].second.clone();
}

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  io::TensorList list;
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].defined(), "ember::save", "tensor ", i, " of ", tensors.size(), " is undefined");
    list.emplace_back(std::to_string(i), tensors[i]);
  }
  save_kind(path, "tensors", list);
}

void load(std::vector<Tensor>& tensors, const std::string& path) {
  const io::LoadedTensors loaded = load_kind(path, "tensors");
  std::vector<Tensor> result(loaded.tensors.size());
  // Tensors sit in the file in layout order; "0" .. "n-1" name their places in the vector.
  for (size_t i = 0; i < result.size(); ++i) result[i] = loaded.at(std::to_string(i)).clone();
  tensors = std::move(result);
}

}  // namespace ember
