// Saving and loading a module's state_dict as a safetensors file, as safetensors.torch's
// save_model / load_model: keys are the dotted state_dict names ("layers.0.weight").
#pragma once
#include <optional>
#include <string>

#include "ember/dtype.h"
#include "ember/io/safetensors.h"
#include "ember/nn/module.h"

namespace ember::io {

// Writes the parameters and persistent buffers of `module` (atomically, see save_safetensors).
void save(const nn::Module& module, const std::string& path, const Metadata& metadata = {});

// Copies the tensors of the file at `path` into `module` through load_state_dict. Throws
// ember::Error naming the file and every problem: missing and unexpected keys (when
// `strict`), shape mismatches, and dtype mismatches. Dtypes are converted only when asked:
// with `convert_to`, the file's floating-point tensors are cast to that dtype before they
// are matched (integer and bool tensors are never cast). Nothing is copied when it throws.
nn::LoadStateDictResult load(nn::Module& module, const std::string& path, bool strict = true,
                             std::optional<ScalarType> convert_to = std::nullopt);

}  // namespace ember::io
