// Sequential, ModuleList and ModuleDict.
#include "ember/nn/modules/container.h"

namespace ember::nn {

SequentialImpl::SequentialImpl(std::initializer_list<NamedAnyModule> named_modules) {
  for (const auto& named : named_modules) push_back(named.name, named.module);
}

void SequentialImpl::push_back(AnyModule module) { push_back(std::to_string(modules_.size()), std::move(module)); }

void SequentialImpl::push_back(std::string name, AnyModule module) {
  EMBER_CHECK(!module.is_empty(), "Sequential", "cannot add an empty module as '", name, "'");
  register_module(std::move(name), module.ptr());
  modules_.push_back(std::move(module));
}

Tensor SequentialImpl::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& module : modules_) x = module.forward(x);
  return x;
}

std::shared_ptr<Module> SequentialImpl::ptr(size_t index) const {
  EMBER_CHECK(index < modules_.size(), "Sequential", "Index out of range: index ", index, " for ", modules_.size(),
              " modules");
  return modules_[index].ptr();
}

void ModuleListImpl::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

void ModuleListImpl::insert(size_t index, std::shared_ptr<Module> module) {
  EMBER_CHECK(index <= modules_.size(), "ModuleList", "Index out of range: cannot insert at ", index, " in ",
              modules_.size(), " modules");
  EMBER_CHECK(module != nullptr, "ModuleList", "cannot insert an empty module (nullptr)");
  if (index == modules_.size()) return push_back(std::move(module));
  modules_.insert(modules_.begin() + static_cast<std::ptrdiff_t>(index), std::move(module));
  for (size_t i = index; i + 1 < modules_.size(); ++i) replace_module(std::to_string(i), modules_[i]);
  register_module(std::to_string(modules_.size() - 1), modules_.back());
}

std::shared_ptr<Module> ModuleListImpl::ptr(size_t index) const {
  EMBER_CHECK(index < modules_.size(), "ModuleList", "Index out of range: index ", index, " for ", modules_.size(),
              " modules");
  return modules_[index];
}

ModuleDictImpl::ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
  for (const auto& [key, module] : modules) insert(key, module);
}

void ModuleDictImpl::insert(const std::string& key, std::shared_ptr<Module> module) {
  if (children_.contains(key)) {
    replace_module(key, std::move(module));
  } else {
    register_module(key, std::move(module));
  }
}

std::shared_ptr<Module> ModuleDictImpl::pop(const std::string& key) {
  std::shared_ptr<Module> module = (*this)[key];
  unregister_module(key);
  return module;
}

void ModuleDictImpl::clear() { children_.clear(); }

std::shared_ptr<Module> ModuleDictImpl::operator[](const std::string& key) const {
  const auto* module = children_.find(key);
  EMBER_CHECK(module != nullptr, "ModuleDict", "Key '", key, "' is not defined; keys are ", children_.keys());
  return *module;
}

}  // namespace ember::nn
