// Cloneable<Derived>: the base of modules that can deep-copy themselves, as libtorch's
// torch::nn::Cloneable. Derived implements reset(), which registers every parameter, buffer
// and submodule (the constructor calls it too); clone() copy-constructs a Derived, clears
// what it registered, calls reset() for fresh tensors and submodules, and copies the
// values in, so that nothing of the clone is shared with the original. A layer family
// sharing a base class (BatchNormNdImpl<D>) passes it as Base.
#pragma once
#include <memory>
#include <optional>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/nn/module.h"

namespace ember::nn {

template <typename Derived, typename Base>
class Cloneable : public Base {
 public:
  using Base::Base;

  // (Re)creates every member with reference semantics: parameters, buffers, submodules.
  virtual void reset() = 0;

  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override {
    NoGradGuard no_grad;
    const auto& self = static_cast<const Derived&>(*this);
    auto copy = std::make_shared<Derived>(self);
    copy->parameters_.clear();
    copy->buffers_.clear();
    copy->children_.clear();
    copy->reset();
    EMBER_CHECK(copy->parameters_.size() == this->parameters_.size(), "clone",
                "the cloned module does not have the same number of parameters as the original module after "
                "calling reset() (",
                copy->parameters_.size(), " vs ", this->parameters_.size(),
                "); does reset() call register_parameter() rather than the constructor?");
    for (const auto& parameter : this->named_parameters(/*recurse=*/false))
      copy->parameters_[parameter.key()].set_data(copied(parameter.value(), device));
    EMBER_CHECK(copy->buffers_.size() == this->buffers_.size(), "clone",
                "the cloned module does not have the same number of buffers as the original module after calling "
                "reset() (",
                copy->buffers_.size(), " vs ", this->buffers_.size(),
                "); does reset() call register_buffer() rather than the constructor?");
    for (const auto& buffer : this->named_buffers(/*recurse=*/false))
      copy->buffers_[buffer.key()].set_data(copied(buffer.value(), device));
    EMBER_CHECK(copy->children_.size() == this->children_.size(), "clone",
                "the cloned module does not have the same number of submodules as the original module after "
                "calling reset() (",
                copy->children_.size(), " vs ", this->children_.size(),
                "); does reset() call register_module() rather than the constructor?");
    for (const auto& child : this->children_) copy->children_[child.key()]->clone_(*child.value(), device);
    return copy;
  }

 private:
  static Tensor copied(const Tensor& tensor, const std::optional<Device>& device) {
    return device && tensor.device() != *device ? tensor.to(*device) : tensor.clone();
  }

  void clone_(Module& other, const std::optional<Device>& device) final {
    // The submodule registered under the same name is a Derived unless reset() registered
    // another type: dynamic_pointer_cast checks.
    auto clone = std::dynamic_pointer_cast<Derived>(other.clone(device));
    EMBER_CHECK(clone != nullptr, "clone",
                "attempted to clone a submodule into one of a different type (", other.name(), " into ", this->name(), ")");
    static_cast<Derived&>(*this) = *clone;
  }
};

}  // namespace ember::nn
