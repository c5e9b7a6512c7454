// ember::nn::Module: the base of every layer, as torch::nn::Module. A module owns named
// parameters, buffers and child modules; names join with dots into PyTorch's state_dict
// keys ("layers.0.attn.wq.weight").
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_set>
#include <vector>

#include "ember/hooks.h"
#include "ember/nn/ordered_dict.h"
#include "ember/tensor.h"

namespace ember::nn {

template <typename Contained>
class ModuleHolder;

// The keys load_state_dict(dict, strict=false) skipped: in the module but not the dict
// (missing) and in the dict but not the module (unexpected).
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

class Module;
// Base: the class Cloneable derives from, Module unless a layer family shares a base class
// (BatchNorm1dImpl is a Cloneable<BatchNorm1dImpl, BatchNormNdImpl<1>>).
template <typename Derived, typename Base = Module>
class Cloneable;

class Module : public std::enable_shared_from_this<Module> {
 public:
  using ModuleApplyFunction = std::function<void(Module&)>;
  using ConstModuleApplyFunction = std::function<void(const Module&)>;
  using NamedModuleApplyFunction = std::function<void(const std::string&, Module&)>;
  using ConstNamedModuleApplyFunction = std::function<void(const std::string&, const Module&)>;
  using ModulePointerApplyFunction = std::function<void(const std::shared_ptr<Module>&)>;
  using NamedModulePointerApplyFunction = std::function<void(const std::string&, const std::shared_ptr<Module>&)>;

  Module() = default;
  // `name` replaces the default name (the demangled class name) in printing and errors.
  explicit Module(std::string name) : name_(std::move(name)) {}
  virtual ~Module() = default;
  Module(const Module&) = default;
  Module& operator=(const Module&) = default;
  Module(Module&&) noexcept = default;
  Module& operator=(Module&&) noexcept = default;

  // The name given to the constructor, else the demangled class name with its namespaces
  // ("ember::nn::LinearImpl", "MyNet"), as libtorch's.
  const std::string& name() const noexcept;

  // A deep copy: new parameters, buffers and submodules holding copies of the values (moved
  // to `device` when given). Modules derived from Cloneable<Derived> (every built-in layer)
  // implement it; on a plain Module it throws.
  virtual std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const;

  // ---- traversal (PyTorch's order: own entries first, then children depth-first) --------
  // Each tensor or module appears once, under its first name, so tied weights are updated once.
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  // include_self needs this module to be owned by a shared_ptr (a holder or make_shared).
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true) const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_modules(const std::string& name_prefix = "",
                                                                  bool include_self = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::string, std::shared_ptr<Module>> named_children() const;

  // Calls `function` on this module and then on every submodule, depth-first in registration
  // order (libtorch's order; Python's apply visits the children first). The named forms pass
  // the dotted name, starting at `name_prefix` for this module.
  void apply(const ModuleApplyFunction& function);
  void apply(const ConstModuleApplyFunction& function) const;
  void apply(const NamedModuleApplyFunction& function, const std::string& name_prefix = std::string());
  void apply(const ConstNamedModuleApplyFunction& function, const std::string& name_prefix = std::string()) const;
  void apply(const ModulePointerApplyFunction& function) const;
  void apply(const NamedModulePointerApplyFunction& function, const std::string& name_prefix = std::string()) const;

  // ---- modes and conversion ---------------------------------------------------------------
  virtual void train(bool on = true);
  void eval() { train(false); }
  virtual bool is_training() const noexcept { return is_training_; }
  // Converts floating-point parameters and buffers in place: tensors held elsewhere (a
  // layer's `weight` member, an optimizer) see the new dtype.
  virtual void to(ScalarType dtype, bool non_blocking = false);
  // ember has the CPU only: moving to it changes nothing, any other device is an error.
  virtual void to(Device device, bool non_blocking = false);
  virtual void to(Device device, ScalarType dtype, bool non_blocking = false);
  // Drops (set_to_none) or zeroes the gradients of all parameters.
  virtual void zero_grad(bool set_to_none = true);

  // ---- checkpoints -------------------------------------------------------------------
  // Parameters and persistent buffers by dotted name, detached and sharing storage. Unlike
  // named_parameters, a tied tensor appears under every name, as in PyTorch.
  OrderedDict<std::string, Tensor> state_dict() const;
  // Copies values into this module's tensors. Throws ember::Error listing every problem by
  // name: shape or dtype mismatches always; missing and unexpected keys when `strict`.
  // Nothing is copied when it throws.
  LoadStateDictResult load_state_dict(const OrderedDict<std::string, Tensor>& state_dict, bool strict = true);

  // ---- registration ---------------------------------------------------------------------
  // Returns the stored tensor; keep a copy of the handle (weight = register_parameter(...)).
  // An undefined tensor registers an absent entry (bias=false), skipped everywhere.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  // Non-persistent buffers stay out of state_dict (PyTorch's persistent=False).
  Tensor& register_buffer(std::string name, Tensor tensor, bool persistent = true);
  template <typename ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, std::shared_ptr<ModuleType> module);
  template <typename ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, ModuleHolder<ModuleType> module_holder);
  template <typename ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string& name, std::shared_ptr<ModuleType> module);
  template <typename ModuleType>
  std::shared_ptr<ModuleType> replace_module(const std::string& name, ModuleHolder<ModuleType> module_holder);
  void unregister_module(const std::string& name);

  // ---- forward hooks (PyTorch's Module.__call__) ----------------------------------------------
  // Calling a module through its holder (fc(x), model.call(&Impl::method, ...)) or a container
  // runs the pre-hooks, forward and then the hooks; calling forward() directly runs none, as in
  // libtorch. Hooks see the call's Tensor arguments in order and the Tensors of its result (a
  // Tensor, those of a tuple or a std::vector<Tensor>), and may replace them one for one.
  using ForwardPreHook = std::function<void(Module& module, std::vector<Tensor>& inputs)>;
  using ForwardHook =
      std::function<void(Module& module, const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs)>;
  RemovableHandle register_forward_pre_hook(ForwardPreHook hook);
  RemovableHandle register_forward_hook(ForwardHook hook);
  bool has_forward_hooks() const { return !forward_pre_hooks_.empty() || !forward_hooks_.empty(); }
  void run_forward_pre_hooks(std::vector<Tensor>& inputs);
  void run_forward_hooks(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs);

  // This module as `T` (an Impl class or a holder's Impl), or nullptr.
  template <typename T>
  auto* as() noexcept;
  template <typename T>
  const auto* as() const noexcept;

  // One line describing this module without its children, as libtorch's
  // ("ember::nn::Linear(in_features=4, ...)"); by default name().
  virtual void pretty_print(std::ostream& stream) const;

 protected:
  OrderedDict<std::string, Tensor> parameters_{"Parameter"};
  OrderedDict<std::string, Tensor> buffers_{"Buffer"};
  OrderedDict<std::string, std::shared_ptr<Module>> children_{"Submodule"};

 private:
  template <typename Derived, typename Base>
  friend class Cloneable;

  // Cloneable's: replaces this module's contents with a clone of `other`.
  virtual void clone_(Module& other, const std::optional<Device>& device);
  // Calls function(name, submodule) on every submodule, depth-first, this module excluded.
  void apply_to_submodules(const NamedModulePointerApplyFunction& function, const std::string& name_prefix) const;
  void check_new_name(const std::string& name, const char* op) const;
  std::shared_ptr<Module> shared_self(const char* op) const;
  void append_state(const std::string& prefix, OrderedDict<std::string, Tensor>& out) const;
  // The defined tensors of `member` (parameters_ or buffers_) of this module and, with
  // recurse, of every submodule, each tensor once.
  OrderedDict<std::string, Tensor> named_tensors(OrderedDict<std::string, Tensor> Module::*member, bool recurse,
                                                 const char* description) const;

  HookList<ForwardPreHook> forward_pre_hooks_;
  HookList<ForwardHook> forward_hooks_;
  std::unordered_set<std::string> non_persistent_buffers_;
  bool is_training_ = true;
  mutable std::string name_;
};

// Prints the module tree, one module per line, children indented under their names.
std::ostream& operator<<(std::ostream& stream, const Module& module);

}  // namespace ember::nn

#include "ember/nn/cloneable.h"
#include "ember/nn/pimpl.h"

namespace ember::nn {

template <typename ModuleType>
std::shared_ptr<ModuleType> Module::register_module(std::string name, std::shared_ptr<ModuleType> module) {
  check_new_name(name, "register_module");
  EMBER_CHECK(module != nullptr, "register_module", "submodule '", name, "' is empty (nullptr)");
  children_.insert(std::move(name), module);
  return module;
}

template <typename ModuleType>
std::shared_ptr<ModuleType> Module::register_module(std::string name, ModuleHolder<ModuleType> module_holder) {
  return register_module(std::move(name), module_holder.ptr());
}

template <typename ModuleType>
std::shared_ptr<ModuleType> Module::replace_module(const std::string& name, std::shared_ptr<ModuleType> module) {
  EMBER_CHECK(module != nullptr, "replace_module", "submodule '", name, "' is empty (nullptr)");
  children_[name] = module;
  return module;
}

template <typename ModuleType>
std::shared_ptr<ModuleType> Module::replace_module(const std::string& name, ModuleHolder<ModuleType> module_holder) {
  return replace_module(name, module_holder.ptr());
}

template <typename T>
auto* Module::as() noexcept {
  if constexpr (detail::is_module_holder<T>::value) {
    return dynamic_cast<typename T::ContainedType*>(this);
  } else {
    return dynamic_cast<T*>(this);
  }
}

template <typename T>
const auto* Module::as() const noexcept {
  if constexpr (detail::is_module_holder<T>::value) {
    return dynamic_cast<const typename T::ContainedType*>(this);
  } else {
    return dynamic_cast<const T*>(this);
  }
}

}  // namespace ember::nn
