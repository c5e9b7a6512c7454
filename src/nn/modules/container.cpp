// Sequential, ModuleList and ModuleDict.
#include "ember/nn/modules/container.h"

namespace ember::nn {

SequentialImpl::SequentialImpl(OrderedDict<std::string, AnyModule>&& ordered_dict) {
  modules_.reserve(ordered_dict.size());
  for (auto& item : ordered_dict) push_back(item.key(), std::move(item.value()));
}

SequentialImpl::SequentialImpl(std::initializer_list<NamedAnyModule> named_modules) {
  modules_.reserve(named_modules.size());
  for (const auto& named : named_modules) push_back(named.name(), named.module());
}

std::shared_ptr<Module> SequentialImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<SequentialImpl>();
  const auto names = named_children().keys();
  for (size_t i = 0; i < modules_.size(); ++i) copy->push_back(names[i], modules_[i].clone(device));
  return copy;
}

void SequentialImpl::push_back(std::string name, AnyModule any_module) {
  EMBER_CHECK(!any_module.is_empty(), "Sequential", "cannot add an empty module as '", name, "'");
  register_module(std::move(name), any_module.ptr());
  modules_.push_back(std::move(any_module));
}

const AnyModule& SequentialImpl::module_at(size_t index) const {
  EMBER_CHECK(index < modules_.size(), "Sequential", "Index out of range: index ", index, " for ", modules_.size(),
              " modules");
  return modules_[index];
}

std::shared_ptr<Module> SequentialImpl::ptr(size_t index) const { return module_at(index).ptr(); }

OrderedDict<std::string, AnyModule> modules_ordered_dict(std::initializer_list<NamedAnyModule> named_modules) {
  OrderedDict<std::string, AnyModule> dict;
  for (const auto& named : named_modules) dict.insert(named.name(), named.module());
  return dict;
}

std::shared_ptr<Module> ModuleListImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ModuleListImpl>();
  for (const auto& module : modules_) copy->push_back(module->clone(device));
  return copy;
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

std::shared_ptr<Module> ModuleDictImpl::clone(const std::optional<Device>& device) const {
  auto copy = std::make_shared<ModuleDictImpl>();
  for (const auto& item : children_) copy->insert(item.key(), item.value()->clone(device));
  return copy;
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
