// ParameterList (parameters by position, named "0", "1", ...) and ParameterDict (by key), as
// libtorch's torch::nn::ParameterList and ParameterDict: modules that hold parameters and
// nothing else. A tensor keeps its requires_grad when added.
//
// Differs from libtorch: no clone(); ParameterDict::update also inserts keys it does not hold
// (libtorch's throws for them); modules print without libtorch's "torch::nn::" prefix.
#pragma once
#include <cstddef>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

namespace detail {
// "(key): Parameter containing: [float32 of size [2, 3]]" a line, as libtorch prints them.
inline void print_parameters(std::ostream& stream, const char* name, const OrderedDict<std::string, Tensor>& items) {
  stream << "ember::nn::" << name << "(\n";
  for (const auto& item : items)
    stream << '(' << item.key() << "): Parameter containing: [" << toString(item.value().scalar_type()) << " of size "
           << item.value().sizes() << "]\n";
  stream << ')';
}

// Copies of `items` (moved to `device` when given), each with its requires_grad: what the
// clone() of ParameterList and ParameterDict hold.
inline OrderedDict<std::string, Tensor> copied_parameters(const OrderedDict<std::string, Tensor>& items,
                                                          const std::optional<Device>& device) {
  NoGradGuard no_grad;
  OrderedDict<std::string, Tensor> copies;
  for (const auto& item : items) {
    const Tensor& value = item.value();
    Tensor data = device && value.device() != *device ? value.to(*device) : value.clone();
    copies.insert(item.key(), data.requires_grad_(value.requires_grad()));
  }
  return copies;
}
}  // namespace detail

class ParameterListImpl : public Cloneable<ParameterListImpl> {
 public:
  using Iterator = OrderedDict<std::string, Tensor>::Iterator;
  using ConstIterator = OrderedDict<std::string, Tensor>::ConstIterator;

  ParameterListImpl() = default;
  template <typename... Tensors, typename = std::enable_if_t<(sizeof...(Tensors) > 0) &&
                                                             (std::is_convertible_v<Tensors, const Tensor&> && ...)>>
  explicit ParameterListImpl(Tensors&&... tensors) {
    parameters_.reserve(sizeof...(Tensors));
    (append(std::forward<Tensors>(tensors)), ...);
  }

  // Appends under the name "<size>"; an OrderedDict item's key is dropped.
  void append(const Tensor& tensor) { register_parameter(std::to_string(size()), tensor, tensor.requires_grad()); }
  void append(const OrderedDict<std::string, Tensor>::Item& item) { append(item.value()); }
  // Appends every tensor of a container (or every parameter of another ParameterList).
  template <typename Container>
  void extend(const Container& tensors) {
    for (const auto& tensor : tensors) append(tensor);
  }
  template <typename Container>
  ParameterListImpl& operator+=(const Container& tensors) {
    extend(tensors);
    return *this;
  }

  Tensor& at(size_t index) {
    check_index(index);
    return parameters_[std::to_string(index)];
  }
  const Tensor& at(size_t index) const {
    check_index(index);
    return parameters_[std::to_string(index)];
  }
  Tensor& operator[](size_t index) { return at(index); }
  const Tensor& operator[](size_t index) const { return at(index); }

  size_t size() const noexcept { return parameters_.size(); }
  bool is_empty() const noexcept { return parameters_.is_empty(); }
  Iterator begin() { return parameters_.begin(); }
  Iterator end() { return parameters_.end(); }
  ConstIterator begin() const { return parameters_.begin(); }
  ConstIterator end() const { return parameters_.end(); }

  void pretty_print(std::ostream& stream) const override {
    detail::print_parameters(stream, "ParameterList", parameters_);
  }
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override {
    auto copy = std::make_shared<ParameterListImpl>();
    for (const auto& item : detail::copied_parameters(parameters_, device)) copy->append(item.value());
    return copy;
  }
  void reset() override {}

 private:
  void check_index(size_t index) const {
    EMBER_CHECK(index < size(), "ParameterList", "Index out of range: index ", index, " for ", size(), " parameters");
  }
};
EMBER_MODULE(ParameterList);

class ParameterDictImpl : public Cloneable<ParameterDictImpl> {
 public:
  using Iterator = OrderedDict<std::string, Tensor>::Iterator;
  using ConstIterator = OrderedDict<std::string, Tensor>::ConstIterator;

  ParameterDictImpl() = default;
  explicit ParameterDictImpl(const OrderedDict<std::string, Tensor>& tensors) {
    for (const auto& item : tensors) insert(item.key(), item.value());
  }

  // Adds `key`; a key already present is an error, as in libtorch.
  Tensor& insert(std::string key, const Tensor& tensor) {
    return register_parameter(std::move(key), tensor, tensor.requires_grad());
  }
  // Replaces the tensor of every key of an OrderedDict or another ParameterDict; a key this
  // dict does not hold is an error, as in libtorch (insert adds keys).
  template <typename Container>
  void update(const Container& tensors) {
    for (const auto& item : tensors) parameters_[item.key()] = item.value();
  }
  // Removes `key` and returns its tensor; a key not held is an error naming it.
  Tensor pop(const std::string& key) {
    Tensor tensor = parameters_[key];
    parameters_.erase(key);
    return tensor;
  }
  void erase(const std::string& key) { parameters_.erase(key); }
  void clear() { parameters_.clear(); }

  bool contains(const std::string& key) const noexcept { return parameters_.contains(key); }
  std::vector<std::string> keys() const { return parameters_.keys(); }
  std::vector<Tensor> values() const { return parameters_.values(); }
  size_t size() const noexcept { return parameters_.size(); }
  bool empty() const noexcept { return parameters_.is_empty(); }
  Tensor& get(const std::string& key) { return parameters_[key]; }
  const Tensor& get(const std::string& key) const { return parameters_[key]; }
  Tensor& operator[](const std::string& key) { return parameters_[key]; }
  const Tensor& operator[](const std::string& key) const { return parameters_[key]; }
  Iterator begin() { return parameters_.begin(); }
  Iterator end() { return parameters_.end(); }
  ConstIterator begin() const { return parameters_.begin(); }
  ConstIterator end() const { return parameters_.end(); }

  void pretty_print(std::ostream& stream) const override {
    detail::print_parameters(stream, "ParameterDict", parameters_);
  }
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override {
    return std::make_shared<ParameterDictImpl>(detail::copied_parameters(parameters_, device));
  }
  void reset() override {}
};
EMBER_MODULE(ParameterDict);

}  // namespace ember::nn
