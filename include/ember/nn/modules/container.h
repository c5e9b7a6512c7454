// Containers: Sequential (chained forward of modules of any signature), ModuleList (indexed), ModuleDict (keyed).
// Children are named "0", "1", ... (or by key), so state_dict keys read "layers.0.weight".
#pragma once
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules/any.h"

namespace ember::nn {

namespace detail {
// A holder (Linear) or a shared_ptr to a Module subclass (std::shared_ptr<LinearImpl>).
template <typename T, typename = void>
struct module_pointer_type {
  using type = void;
};
template <typename T>
struct module_pointer_type<T, std::enable_if_t<is_module_holder<T>::value>> {
  using type = typename std::decay_t<T>::ContainedType;
};
template <typename T>
struct module_pointer_type<std::shared_ptr<T>, std::enable_if_t<std::is_base_of_v<Module, T>>> {
  using type = T;
};
template <typename T>
using module_type_t = typename module_pointer_type<std::decay_t<T>>::type;
template <typename T>
inline constexpr bool is_module_like_v = !std::is_void_v<module_type_t<T>>;

template <typename T>
std::shared_ptr<module_type_t<T>> to_module_ptr(T&& module) {
  if constexpr (is_module_holder<T>::value) {
    return module.ptr();
  } else {
    return module;
  }
}

// A module object itself (ModuleList(M(1)) in libtorch takes a copy of it).
template <typename T>
inline constexpr bool is_module_value_v = std::is_base_of_v<Module, std::decay_t<T>>;
template <typename T>
inline constexpr bool is_module_or_value_v = is_module_like_v<T> || is_module_value_v<T>;

// A shared_ptr to the module a holder or shared_ptr holds, or to a copy of a module object.
template <typename T>
std::shared_ptr<Module> to_shared_module(T&& module) {
  if constexpr (is_module_value_v<T>) {
    return std::make_shared<std::decay_t<T>>(std::forward<T>(module));
  } else {
    return to_module_ptr(std::forward<T>(module));
  }
}
}  // namespace detail

class SequentialImpl;

namespace detail {
// What Sequential's constructor and push_back take: a module object, a shared_ptr to one, a
// holder or an AnyModule.
template <typename T>
inline constexpr bool is_sequential_element_v =
    is_module_or_value_v<T> || std::is_same_v<std::remove_cvref_t<T>, AnyModule>;
}  // namespace detail

// Modules called one after another, each on what the one before returned (libtorch's
// Sequential). The modules' forwards may have any signature: Sequential(A{}, B{}) with
// `int A::forward(int)` and `std::string B::forward(int)` makes forward<std::string>(1) valid.
// forward(x) without a type returns a Tensor.
class SequentialImpl : public Cloneable<SequentialImpl> {
 public:
  using Iterator = std::vector<AnyModule>::iterator;
  using ConstIterator = std::vector<AnyModule>::const_iterator;

  SequentialImpl() = default;
  template <typename... Modules,
            typename = std::enable_if_t<(sizeof...(Modules) > 0) && (detail::is_sequential_element_v<Modules> && ...) &&
                                        !(sizeof...(Modules) == 1 &&
                                          (std::is_base_of_v<SequentialImpl, std::remove_cvref_t<Modules>> && ...))>>
  explicit SequentialImpl(Modules&&... modules) {
    modules_.reserve(sizeof...(Modules));
    (push_back(std::forward<Modules>(modules)), ...);
  }
  // The modules under their names, in order (from modules_ordered_dict).
  explicit SequentialImpl(OrderedDict<std::string, AnyModule>&& ordered_dict);
  explicit SequentialImpl(std::initializer_list<NamedAnyModule> named_modules);

  // A Sequential of clones of the modules, under the same names.
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  // Nothing to (re)create: clone() rebuilds the list.
  void reset() override {}
  void pretty_print(std::ostream& stream) const override { stream << "ember::nn::Sequential"; }

  // Calls each module's forward on the previous one's result, the first on `inputs`; returns
  // the last result as a ReturnType (throws when it is another type).
  template <typename ReturnType = Tensor, typename... InputTypes>
  ReturnType forward(InputTypes&&... inputs) {
    EMBER_CHECK(!is_empty(), "Sequential", "Cannot call forward() on an empty Sequential");
    auto module = modules_.begin();
    AnyValue value = module->any_forward(std::forward<InputTypes>(inputs)...);
    for (++module; module != modules_.end(); ++module) value = module->any_forward(std::move(value));
    if (auto* result = value.try_get<ReturnType>()) return std::move(*result);
    EMBER_FAIL("Sequential", "The type of the return value is ", ::ember::detail::demangle(value.type_info().name()),
               ", but you asked for type ", ::ember::detail::demangle(typeid(ReturnType).name()));
  }

  // Appends under the name "<index>" or `name`.
  void push_back(AnyModule any_module) { push_back(std::to_string(modules_.size()), std::move(any_module)); }
  void push_back(std::string name, AnyModule any_module);
  template <typename M, typename = std::enable_if_t<detail::is_module_or_value_v<M>>>
  void push_back(M&& module) {
    push_back(std::to_string(modules_.size()), std::forward<M>(module));
  }
  template <typename M, typename = std::enable_if_t<detail::is_module_or_value_v<M>>>
  void push_back(std::string name, M&& module) {
    if constexpr (detail::is_module_holder<M>::value) {
      push_back(std::move(name), AnyModule(module.ptr()));
    } else {
      push_back(std::move(name), AnyModule(std::forward<M>(module)));
    }
  }
  // Appends every module of another Sequential or of a container of modules.
  template <typename Container>
  void extend(const Container& container) {
    for (const auto& module : container) push_back(module);
  }

  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  std::shared_ptr<Module> ptr(size_t index) const;
  // The module at `index` as its own class (the class it was added as).
  template <typename T>
  std::shared_ptr<T> ptr(size_t index) const {
    return module_at(index).ptr<T>();
  }
  template <typename T>
  T& at(size_t index) const {
    return module_at(index).get<T>();
  }
  Iterator begin() { return modules_.begin(); }
  ConstIterator begin() const { return modules_.begin(); }
  Iterator end() { return modules_.end(); }
  ConstIterator end() const { return modules_.end(); }

 private:
  const AnyModule& module_at(size_t index) const;

  std::vector<AnyModule> modules_;
};

class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  using Impl = SequentialImpl;
  Sequential() = default;
  Sequential(std::initializer_list<NamedAnyModule> named_modules)  // NOLINT
      : ModuleHolder(std::make_shared<SequentialImpl>(named_modules)) {}
};

// An OrderedDict of named modules for Sequential's constructor:
//   Sequential(modules_ordered_dict({{"fc", Linear(2, 3)}, {"act", ReLU()}}))
OrderedDict<std::string, AnyModule> modules_ordered_dict(std::initializer_list<NamedAnyModule> named_modules);

class ModuleListImpl : public Cloneable<ModuleListImpl> {
 public:
  ModuleListImpl() = default;
  // Holders, shared_ptrs or module objects (each copied once into a shared_ptr).
  template <typename... Modules, typename = std::enable_if_t<(sizeof...(Modules) > 0) &&
                                                             (detail::is_module_or_value_v<Modules> && ...)>>
  explicit ModuleListImpl(Modules&&... modules) {
    (push_back(std::forward<Modules>(modules)), ...);
  }

  // Appends under the name "<index>".
  // A ModuleList of clones of the modules.
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  void reset() override {}
  void pretty_print(std::ostream& stream) const override { stream << "ember::nn::ModuleList"; }

  void push_back(std::shared_ptr<Module> module);
  template <typename M, typename = std::enable_if_t<detail::is_module_or_value_v<M>>>
  void push_back(M&& module) {
    push_back(detail::to_shared_module(std::forward<M>(module)));
  }
  // Appends every module of a ModuleList or of a container of modules.
  template <typename Container>
  void extend(const Container& modules) {
    for (const auto& module : modules) push_back(module);
  }
  // Inserts before position `index` (index == size() appends); the later modules are renamed
  // to their new positions.
  void insert(size_t index, std::shared_ptr<Module> module);
  template <typename M, typename = std::enable_if_t<detail::is_module_or_value_v<M>>>
  void insert(size_t index, M&& module) {
    insert(index, detail::to_shared_module(std::forward<M>(module)));
  }

  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }
  std::shared_ptr<Module> operator[](size_t index) const { return ptr(index); }
  std::shared_ptr<Module> ptr(size_t index) const;
  template <typename T>
  std::shared_ptr<T> ptr(size_t index) const {
    auto typed = std::dynamic_pointer_cast<T>(ptr(index));
    EMBER_CHECK(typed != nullptr, "ModuleList", "module ", index, " is a ", ptr(index)->name(),
                ", not the requested type");
    return typed;
  }
  template <typename T>
  T& at(size_t index) const {
    return *ptr<T>(index);
  }
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return modules_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
EMBER_MODULE(ModuleList);

class ModuleDictImpl : public Cloneable<ModuleDictImpl> {
 public:
  ModuleDictImpl() = default;
  explicit ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules);
  explicit ModuleDictImpl(const OrderedDict<std::string, std::shared_ptr<Module>>& modules) { update(modules); }

  // Adds `key`, or replaces the module already under it (keeping its position).
  // A ModuleDict of clones of the modules, under the same keys.
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  void reset() override {}
  void pretty_print(std::ostream& stream) const override { stream << "ember::nn::ModuleDict"; }

  void insert(const std::string& key, std::shared_ptr<Module> module);
  template <typename M, typename = std::enable_if_t<detail::is_module_holder<M>::value>>
  void insert(const std::string& key, M&& holder) {
    insert(key, std::shared_ptr<Module>(holder.ptr()));
  }
  // Inserts (or replaces, in place) every entry of a container of (key, module) pairs, an
  // OrderedDict or another ModuleDict.
  template <typename Container>
  void update(const Container& modules) {
    for (const auto& entry : modules) {
      if constexpr (requires { entry.first; }) {
        insert(entry.first, entry.second);
      } else {
        insert(entry.key(), entry.value());
      }
    }
  }
  std::shared_ptr<Module> pop(const std::string& key);
  void clear();

  bool contains(const std::string& key) const { return children_.contains(key); }
  size_t size() const noexcept { return children_.size(); }
  bool is_empty() const noexcept { return children_.is_empty(); }
  bool empty() const noexcept { return children_.is_empty(); }
  std::vector<std::string> keys() const { return children_.keys(); }
  std::vector<std::shared_ptr<Module>> values() const { return children_.values(); }
  const std::vector<OrderedDict<std::string, std::shared_ptr<Module>>::Item>& items() const { return children_.items(); }
  OrderedDict<std::string, std::shared_ptr<Module>>::const_iterator begin() const { return children_.begin(); }
  OrderedDict<std::string, std::shared_ptr<Module>>::const_iterator end() const { return children_.end(); }
  std::shared_ptr<Module> operator[](const std::string& key) const;
  template <typename T>
  std::shared_ptr<T> ptr(const std::string& key) const {
    auto typed = std::dynamic_pointer_cast<T>((*this)[key]);
    EMBER_CHECK(typed != nullptr, "ModuleDict", "module '", key, "' is a ", (*this)[key]->name(),
                ", not the requested type");
    return typed;
  }
  template <typename T>
  T& at(const std::string& key) const {
    return *ptr<T>(key);
  }
};
EMBER_MODULE(ModuleDict);

}  // namespace ember::nn
