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
  EMBER_CHECK(index < modules_.size(), "Sequential", "index ", index, " is out of range for ", modules_.size(),
              " modules");
  return modules_[index].ptr();
}

void ModuleListImpl::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

std::shared_ptr<Module> ModuleListImpl::ptr(size_t index) const {
  EMBER_CHECK(index < modules_.size(), "ModuleList", "index ", index, " is out of range for ", modules_.size(),
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
  EMBER_CHECK(module != nullptr, "ModuleDict", "no module named '", key, "'; keys are ", children_.keys());
  return *module;
}

}  // namespace ember::nn
