#include "ember/io/module_io.h"

namespace ember::io {

void save(const nn::Module& module, const std::string& path, const Metadata& metadata) {
  TensorList tensors;
  for (const auto& item : module.state_dict()) tensors.emplace_back(item.key(), item.value());
  save_safetensors(path, tensors, metadata);
}

namespace {

// The file's tensors by name; floating-point ones cast to `convert_to` when given.
OrderedDict<std::string, Tensor> file_state_dict(const LoadedTensors& loaded, std::optional<ScalarType> convert_to) {
  OrderedDict<std::string, Tensor> dict("state_dict key");
  for (const auto& [name, tensor] : loaded.tensors) {
    const bool cast = convert_to && is_floating_point(tensor.scalar_type()) && tensor.scalar_type() != *convert_to;
    dict.insert(name, cast ? tensor.to(*convert_to) : tensor);
  }
  return dict;
}

bool has_dtype_mismatch(const nn::Module& module, const OrderedDict<std::string, Tensor>& dict) {
  for (const auto& target : module.state_dict()) {
    const Tensor* source = dict.find(target.key());
    if (source && source->defined() && source->scalar_type() != target.value().scalar_type()) return true;
  }
  return false;
}

}  // namespace

nn::LoadStateDictResult load(nn::Module& module, const std::string& path, bool strict,
                             std::optional<ScalarType> convert_to) {
  const LoadedTensors loaded = load_safetensors(path);
  const OrderedDict<std::string, Tensor> dict = file_state_dict(loaded, convert_to);
  try {
    return module.load_state_dict(dict, strict);
  } catch (const Error& e) {
    // A dtype mismatch is never resolved silently; say how to ask for the conversion.
    const char* hint = !convert_to && has_dtype_mismatch(module, dict)
                           ? " (dtypes are converted only when asked: pass convert_to)"
                           : "";
    EMBER_FAIL("io::load", "'", path, "': ", e.what(), hint);
  }
}

}  // namespace ember::io
