// Module: registration, traversal in PyTorch's order, modes, dtype conversion, state dicts.
#include "ember/nn/module.h"


#include <sstream>
#include <typeinfo>

#include "core/tensor_impl.h"
#include "ember/autograd.h"
#include "ember/detail/demangle.h"
#include "ember/functions.h"
#include "ember/warning.h"

namespace ember::nn {
namespace {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

void convert_in_place(Tensor& tensor, ScalarType dtype) {
  if (!tensor.defined() || !tensor.is_floating_point() || tensor.scalar_type() == dtype) return;
  NoGradGuard no_grad;
  Tensor grad = tensor.grad();
  tensor.set_data(tensor.to(dtype));
  if (grad.defined()) tensor.set_grad(grad.to(dtype));
}

std::string describe_dtype_and_shape(const Tensor& t) {
  std::ostringstream out;
  out << dtype_name(t.scalar_type()) << ' ' << IntArrayRef(t.sizes());
  return out.str();
}

std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + ("'" + keys[i] + "'");
  return out;
}

}  // namespace

const std::string& Module::name() const noexcept {
  if (name_.empty()) name_ = ::ember::detail::demangle(typeid(*this).name());
  return name_;
}

std::shared_ptr<Module> Module::clone(const std::optional<Device>&) const {
  EMBER_FAIL("clone", "clone() has not been implemented for ", name(), ". Subclass ember::nn::Cloneable<", name(),
             "> instead of ember::nn::Module to inherit the ability to clone.");
}

void Module::clone_(Module&, const std::optional<Device>&) {
  EMBER_FAIL("clone", "clone() has not been implemented for ", name(), ". Subclass ember::nn::Cloneable<", name(),
             "> instead of ember::nn::Module to inherit the ability to clone.");
}

// ---- traversal -------------------------------------------------------------------------------

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_modules(const std::string& name_prefix,
                                                                        bool include_self) const {
  OrderedDict<std::string, std::shared_ptr<Module>> out("module");
  std::unordered_set<const Module*> seen{this};
  if (include_self) out.insert(name_prefix, shared_self("named_modules"));
  std::function<void(const Module&, const std::string&)> visit = [&](const Module& module, const std::string& prefix) {
    for (const auto& child : module.children_) {
      if (!seen.insert(child.value().get()).second) continue;
      const std::string name = join_name(prefix, child.key());
      out.insert(name, child.value());
      visit(*child.value(), name);
    }
  };
  visit(*this, name_prefix);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) const {
  return named_modules("", include_self).values();
}

OrderedDict<std::string, std::shared_ptr<Module>> Module::named_children() const { return children_; }

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

OrderedDict<std::string, Tensor> Module::named_tensors(OrderedDict<std::string, Tensor> Module::*member, bool recurse,
                                                       const char* description) const {
  OrderedDict<std::string, Tensor> out(description);
  std::unordered_set<const TensorImpl*> seen;
  auto add_own = [&](const Module& module, const std::string& prefix) {
    for (const auto& item : module.*member) {
      if (item.value().defined() && seen.insert(item.value().unsafeGetTensorImpl()).second)
        out.insert(join_name(prefix, item.key()), item.value());
    }
  };
  add_own(*this, "");
  if (recurse) {
    for (const auto& module : named_modules("", false)) add_own(*module.value(), module.key());
  }
  return out;
}

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  return named_tensors(&Module::parameters_, recurse, "parameter");
}

std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  return named_tensors(&Module::buffers_, recurse, "buffer");
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

void Module::apply_to_submodules(const NamedModulePointerApplyFunction& function,
                                 const std::string& name_prefix) const {
  for (const auto& child : children_) {
    const std::string name = join_name(name_prefix, child.key());
    function(name, child.value());
    child.value()->apply_to_submodules(function, name);
  }
}

void Module::apply(const ModuleApplyFunction& function) {
  function(*this);
  apply_to_submodules([&](const std::string&, const std::shared_ptr<Module>& module) { function(*module); }, "");
}

void Module::apply(const ConstModuleApplyFunction& function) const {
  function(*this);
  apply_to_submodules([&](const std::string&, const std::shared_ptr<Module>& module) { function(*module); }, "");
}

void Module::apply(const NamedModuleApplyFunction& function, const std::string& name_prefix) {
  function(name_prefix, *this);
  apply_to_submodules([&](const std::string& name, const std::shared_ptr<Module>& module) { function(name, *module); },
                      name_prefix);
}

void Module::apply(const ConstNamedModuleApplyFunction& function, const std::string& name_prefix) const {
  function(name_prefix, *this);
  apply_to_submodules([&](const std::string& name, const std::shared_ptr<Module>& module) { function(name, *module); },
                      name_prefix);
}

void Module::apply(const ModulePointerApplyFunction& function) const {
  function(shared_self("apply"));
  apply_to_submodules([&](const std::string&, const std::shared_ptr<Module>& module) { function(module); }, "");
}

void Module::apply(const NamedModulePointerApplyFunction& function, const std::string& name_prefix) const {
  function(name_prefix, shared_self("apply"));
  apply_to_submodules(function, name_prefix);
}

// ---- modes and conversion ------------------------------------------------------------------------

void Module::train(bool on) {
  is_training_ = on;
  for (auto& child : children_) child.value()->train(on);
}

void Module::to(ScalarType dtype, bool) {
  for (auto& item : parameters_) convert_in_place(item.value(), dtype);
  for (auto& item : buffers_) convert_in_place(item.value(), dtype);
  for (auto& child : children_) child.value()->to(dtype);
}

void Module::to(Device device, bool) { check_device_available(device, "Module::to"); }

void Module::to(Device device, ScalarType dtype, bool non_blocking) {
  check_device_available(device, "Module::to");
  to(dtype, non_blocking);
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& parameter : parameters()) {
    if (!parameter.grad().defined()) continue;
    if (set_to_none) {
      parameter.mutable_grad() = Tensor();
    } else {
      NoGradGuard no_grad;
      parameter.mutable_grad() = parameter.grad().detach();
      parameter.mutable_grad().zero_();
    }
  }
}

// ---- forward hooks ---------------------------------------------------------------------------

RemovableHandle Module::register_forward_pre_hook(ForwardPreHook hook) {
  EMBER_CHECK(hook != nullptr, "register_forward_pre_hook", "the hook of ", name(), " is empty");
  return forward_pre_hooks_.add(std::move(hook));
}

RemovableHandle Module::register_forward_hook(ForwardHook hook) {
  EMBER_CHECK(hook != nullptr, "register_forward_hook", "the hook of ", name(), " is empty");
  return forward_hooks_.add(std::move(hook));
}

void Module::run_forward_pre_hooks(std::vector<Tensor>& inputs) {
  const size_t count = inputs.size();
  forward_pre_hooks_.run(*this, inputs);
  EMBER_CHECK(inputs.size() == count, "forward_pre_hook", "a hook of ", name(), " changed the number of inputs from ",
              count, " to ", inputs.size());
}

void Module::run_forward_hooks(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  const size_t count = outputs.size();
  forward_hooks_.run(*this, inputs, outputs);
  EMBER_CHECK(outputs.size() == count, "forward_hook", "a hook of ", name(), " changed the number of outputs from ",
              count, " to ", outputs.size());
}

// ---- state dicts -------------------------------------------------------------------------------

void Module::append_state(const std::string& prefix, OrderedDict<std::string, Tensor>& out) const {
  for (const auto& item : parameters_) {
    if (item.value().defined()) out.insert(join_name(prefix, item.key()), item.value());
  }
  for (const auto& item : buffers_) {
    if (item.value().defined() && non_persistent_buffers_.count(item.key()) == 0)
      out.insert(join_name(prefix, item.key()), item.value());
  }
  for (const auto& child : children_) child.value()->append_state(join_name(prefix, child.key()), out);
}

OrderedDict<std::string, Tensor> Module::state_dict() const {
  OrderedDict<std::string, Tensor> live("state_dict key");
  append_state("", live);
  OrderedDict<std::string, Tensor> out("state_dict key");
  for (const auto& item : live) out.insert(item.key(), item.value().detach());
  return out;
}

LoadStateDictResult Module::load_state_dict(const OrderedDict<std::string, Tensor>& state_dict, bool strict) {
  OrderedDict<std::string, Tensor> targets("state_dict key");
  append_state("", targets);

  LoadStateDictResult result;
  std::vector<std::string> mismatches;
  for (const auto& target : targets) {
    const Tensor* source = state_dict.find(target.key());
    if (source == nullptr) {
      result.missing_keys.push_back(target.key());
    } else if (!source->defined() || source->sizes() != target.value().sizes() ||
               source->scalar_type() != target.value().scalar_type()) {
      mismatches.push_back("'" + target.key() + "': checkpoint has " +
                           (source->defined() ? describe_dtype_and_shape(*source) : std::string("an undefined tensor")) +
                           ", module has " + describe_dtype_and_shape(target.value()));
    }
  }
  for (const auto& item : state_dict) {
    if (!targets.contains(item.key())) result.unexpected_keys.push_back(item.key());
  }

  std::vector<std::string> problems;
  if (strict && !result.missing_keys.empty()) problems.push_back("missing keys: " + join_keys(result.missing_keys));
  if (strict && !result.unexpected_keys.empty())
    problems.push_back("unexpected keys: " + join_keys(result.unexpected_keys));
  for (const auto& mismatch : mismatches) problems.push_back("mismatch for " + mismatch);
  if (!problems.empty()) {
    std::string message = "error(s) loading state_dict for " + name() + ": ";
    for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    EMBER_FAIL("load_state_dict", message);
  }

  NoGradGuard no_grad;
  for (auto& target : targets) {
    if (const Tensor* source = state_dict.find(target.key())) target.value().copy_(*source);
  }
  return result;
}

// ---- registration ---------------------------------------------------------------------------

void Module::check_new_name(const std::string& name, const char* op) const {
  // libtorch's wording: "Parameter name must not be empty", "Buffer 'b' already defined".
  const std::string kind = std::string(op) == "register_parameter" ? "Parameter"
                           : std::string(op) == "register_buffer"  ? "Buffer"
                                                                   : "Submodule";
  EMBER_CHECK(!name.empty(), op, kind, " name must not be empty");
  EMBER_CHECK(name.find('.') == std::string::npos, op, kind, " name must not contain a dot (got '", name, "')");
  EMBER_CHECK(!parameters_.contains(name) && !buffers_.contains(name) && !children_.contains(name), op, kind, " '",
              name, "' already defined (in ", this->name(), ")");
}

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "register_parameter");
  if (tensor.defined()) {
    EMBER_CHECK(tensor.is_leaf(), "register_parameter", "parameter '", name,
                "' is not a leaf tensor (it was computed by an op that recorded a graph); pass tensor.detach()");
    tensor.requires_grad_(requires_grad);
  } else if (requires_grad) {
    EMBER_WARN("An undefined tensor cannot require grad. Ignoring the `requires_grad=true` function parameter.");
  }
  return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor, bool persistent) {
  check_new_name(name, "register_buffer");
  if (!persistent) non_persistent_buffers_.insert(name);
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::unregister_module(const std::string& name) {
  EMBER_CHECK(children_.contains(name), "unregister_module", "No Module with name `", name, "` is registered (in ",
              this->name(), ")");
  children_.pop(name);
}

std::shared_ptr<Module> Module::shared_self(const char* op) const {
  auto self = std::const_pointer_cast<Module>(weak_from_this().lock());
  EMBER_CHECK(self != nullptr, op,
              "It looks like you attempted to retrieve your top-level module as a shared_ptr, but it is not "
              "stored in a shared_ptr: own it by a holder or std::make_shared, or pass include_self=false");
  return self;
}

// ---- printing ----------------------------------------------------------------------------

void Module::pretty_print(std::ostream& stream) const { stream << name(); }

namespace {
void print_tree(std::ostream& stream, const Module& module, const std::string& indent) {
  module.pretty_print(stream);
  const auto children = module.named_children();
  if (children.is_empty()) return;
  stream << "(\n";
  for (const auto& child : children) {
    stream << indent << "  (" << child.key() << "): ";
    print_tree(stream, *child.value(), indent + "  ");
    stream << '\n';
  }
  stream << indent << ')';
}
}  // namespace

std::ostream& operator<<(std::ostream& stream, const Module& module) {
  print_tree(stream, module, "");
  return stream;
}

}  // namespace ember::nn
