// ember::save / ember::load, as torch::save / torch::load in torch/serialize.h: a module (or
// its holder), an optimizer, a tensor or a vector of tensors, to and from a file.
//
//   ember::save(model, "model.safetensors");      ember::load(model, "model.safetensors");
//   ember::save(optimizer, "optim.safetensors");  ember::load(optimizer, "optim.safetensors");
//
// The file is safetensors (written atomically) whose metadata "ember.kind" records what it
// holds: "module" (the state_dict under its keys), "optimizer" (its state tensors, its scalars
// as JSON under "ember.optimizer", as in training checkpoints), "tensor" (one, named "tensor")
// or "tensors" (named "0", "1", ...). Loading a file as another kind is an ember::Error that
// names both kinds; loading a module is strict (every key, shape and dtype must match) and
// changes nothing when it fails.
// Differences from libtorch: the file is safetensors, not a TorchScript zip archive; only
// paths (no streams or archives); loaded tensors are copies (never views of the file).
#pragma once
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/pimpl.h"
#include "ember/optim/optimizer.h"
#include "ember/tensor.h"

namespace ember {

void save(const nn::Module& module, const std::string& path);
void save(const optim::Optimizer& optimizer, const std::string& path);
void save(const Tensor& tensor, const std::string& path);
void save(const std::vector<Tensor>& tensors, const std::string& path);

void load(nn::Module& module, const std::string& path);
void load(optim::Optimizer& optimizer, const std::string& path);
// Replaces `tensor` (or the vector's contents) with the file's.
void load(Tensor& tensor, const std::string& path);
void load(std::vector<Tensor>& tensors, const std::string& path);

// Module holders (nn::Linear) and shared pointers to modules, as libtorch takes them.
template <typename M>
void save(const nn::ModuleHolder<M>& module, const std::string& path) {
  save(static_cast<const nn::Module&>(*module), path);
}
template <typename M, typename = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
void save(const std::shared_ptr<M>& module, const std::string& path) {
  save(static_cast<const nn::Module&>(*module), path);
}
template <typename M>
void load(nn::ModuleHolder<M>& module, const std::string& path) {
  load(static_cast<nn::Module&>(*module), path);
}
template <typename M, typename = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
void load(const std::shared_ptr<M>& module, const std::string& path) {
  load(static_cast<nn::Module&>(*module), path);
}

}  // namespace ember
