// TensorAccessor and GenericPackedTensorAccessor, as libtorch's (ATen/core/TensorAccessor.h):
// element access through a tensor's strides without bounds checks, made by
// Tensor::accessor<T, N>() and Tensor::packed_accessor64/32<T, N>(). A TensorAccessor points
// at the tensor's size and stride arrays, so it must not outlive the tensor (accessor() on a
// temporary is deleted, as in libtorch); a packed accessor holds copies of them.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ember/tensor_options.h"

namespace ember {

template <typename T>
struct DefaultPtrTraits {
  using PtrType = T*;
};

template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class TensorAccessorBase {
 public:
  using PtrType = typename PtrTraits<T>::PtrType;

  TensorAccessorBase(PtrType data, const index_t* sizes, const index_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  // As IntArrayRef, like libtorch, which offers them only for 64-bit indices.
  IntArrayRef sizes() const requires std::is_same_v<index_t, int64_t> { return IntArrayRef(sizes_, N); }
  IntArrayRef strides() const requires std::is_same_v<index_t, int64_t> { return IntArrayRef(strides_, N); }
  index_t size(index_t i) const { return sizes_[i]; }
  index_t stride(index_t i) const { return strides_[i]; }
  PtrType data() { return data_; }
  const PtrType data() const { return data_; }

 protected:
  PtrType data_;
  const index_t* sizes_;
  const index_t* strides_;
};

// accessor[i] drops the first dim: a TensorAccessor<T, N - 1>, and at N == 1 the element T&.
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class TensorAccessor : public TensorAccessorBase<T, N, PtrTraits, index_t> {
 public:
  using PtrType = typename PtrTraits<T>::PtrType;
  using TensorAccessorBase<T, N, PtrTraits, index_t>::TensorAccessorBase;

  TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) {
    return {this->data_ + this->strides_[0] * i, this->sizes_ + 1, this->strides_ + 1};
  }
  const TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) const {
    return {this->data_ + this->strides_[0] * i, this->sizes_ + 1, this->strides_ + 1};
  }
};

template <typename T, template <typename U> class PtrTraits, typename index_t>
class TensorAccessor<T, 1, PtrTraits, index_t> : public TensorAccessorBase<T, 1, PtrTraits, index_t> {
 public:
  using PtrType = typename PtrTraits<T>::PtrType;
  using TensorAccessorBase<T, 1, PtrTraits, index_t>::TensorAccessorBase;

  T& operator[](index_t i) { return this->data_[this->strides_[0] * i]; }
  const T& operator[](index_t i) const { return this->data_[this->strides_[0] * i]; }
};

// Holds its sizes and strides by value (libtorch passes these to CUDA kernels); indexing
// gives TensorAccessors pointing into them, so it must outlive what it hands out.
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
class GenericPackedTensorAccessor {
 public:
  using PtrType = typename PtrTraits<T>::PtrType;

  template <typename source_index_t>
  GenericPackedTensorAccessor(PtrType data, const source_index_t* sizes, const source_index_t* strides)
      : data_(data) {
    for (size_t i = 0; i < N; ++i) {
      sizes_[i] = static_cast<index_t>(sizes[i]);
      strides_[i] = static_cast<index_t>(strides[i]);
    }
  }
  index_t size(index_t i) const { return sizes_[i]; }
  index_t stride(index_t i) const { return strides_[i]; }
  PtrType data() { return data_; }
  const PtrType data() const { return data_; }

  decltype(auto) operator[](index_t i) {
    if constexpr (N == 1) {
      return data_[strides_[0] * i];
    } else {
      return TensorAccessor<T, N - 1, PtrTraits, index_t>(data_ + strides_[0] * i, sizes_.data() + 1,
                                                          strides_.data() + 1);
    }
  }
  decltype(auto) operator[](index_t i) const {
    if constexpr (N == 1) {
      return static_cast<const T&>(data_[strides_[0] * i]);
    } else {
      return static_cast<const TensorAccessor<T, N - 1, PtrTraits, index_t>>(
          TensorAccessor<T, N - 1, PtrTraits, index_t>(data_ + strides_[0] * i, sizes_.data() + 1,
                                                       strides_.data() + 1));
    }
  }

 private:
  PtrType data_;
  std::array<index_t, N> sizes_{};
  std::array<index_t, N> strides_{};
};

template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor32 = GenericPackedTensorAccessor<T, N, PtrTraits, int32_t>;
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor64 = GenericPackedTensorAccessor<T, N, PtrTraits, int64_t>;

}  // namespace ember
