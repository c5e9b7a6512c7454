// libtorch's c10::DispatchKey and c10::DispatchKeySet, as Tensor::key_set() reports them.
// ember has no dispatcher: a tensor's key set is the one a libtorch CPU tensor of the same
// kind carries: CPU, and ADInplaceOrView with AutogradCPU unless it is an inference tensor
// (InferenceMode in ember/autograd.h).
#pragma once
#include <cstdint>
#include <initializer_list>

namespace ember {

enum class DispatchKey : uint8_t {
  Undefined = 0,
  CPU,
  CUDA,
  ADInplaceOrView,
  AutogradOther,
  AutogradCPU,
  AutogradCUDA,
  NumDispatchKeys,
};

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr explicit DispatchKeySet(DispatchKey key) : bits_(bit(key)) {}
  constexpr DispatchKeySet(std::initializer_list<DispatchKey> keys) {
    for (DispatchKey key : keys) bits_ |= bit(key);
  }
  constexpr bool has(DispatchKey key) const { return (bits_ & bit(key)) != 0; }
  constexpr bool has_any(DispatchKeySet other) const { return (bits_ & other.bits_) != 0; }
  constexpr bool isSupersetOf(DispatchKeySet other) const { return (bits_ & other.bits_) == other.bits_; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr uint64_t raw_repr() const { return bits_; }
  constexpr DispatchKeySet add(DispatchKey key) const { return DispatchKeySet(bits_ | bit(key), RawTag{}); }
  constexpr DispatchKeySet remove(DispatchKey key) const { return DispatchKeySet(bits_ & ~bit(key), RawTag{}); }
  constexpr DispatchKeySet operator|(DispatchKeySet other) const { return DispatchKeySet(bits_ | other.bits_, RawTag{}); }
  constexpr DispatchKeySet operator&(DispatchKeySet other) const { return DispatchKeySet(bits_ & other.bits_, RawTag{}); }
  constexpr DispatchKeySet operator-(DispatchKeySet other) const { return DispatchKeySet(bits_ & ~other.bits_, RawTag{}); }
  constexpr bool operator==(DispatchKeySet other) const { return bits_ == other.bits_; }
  constexpr bool operator!=(DispatchKeySet other) const { return bits_ != other.bits_; }

 private:
  struct RawTag {};
  constexpr DispatchKeySet(uint64_t bits, RawTag) : bits_(bits) {}
  static constexpr uint64_t bit(DispatchKey key) {
    return key == DispatchKey::Undefined ? 0 : uint64_t{1} << static_cast<unsigned>(key);
  }
  uint64_t bits_ = 0;
};

// The autograd keys (c10::autograd_dispatch_keyset).
constexpr DispatchKeySet autograd_dispatch_keyset{DispatchKey::AutogradOther, DispatchKey::AutogradCPU,
                                                  DispatchKey::AutogradCUDA};

// The thread's dispatch key state as libtorch's c10::impl functions report it, from ember's
// thread state: ADInplaceOrView is included and no key excluded, except in InferenceMode,
// where ADInplaceOrView is not included and the autograd keys are excluded.
namespace impl {
bool tls_is_dispatch_key_included(DispatchKey key);
bool tls_is_dispatch_key_excluded(DispatchKey key);
bool tls_is_dispatch_keyset_included(DispatchKeySet keys);
bool tls_is_dispatch_keyset_excluded(DispatchKeySet keys);
}  // namespace impl

}  // namespace ember
