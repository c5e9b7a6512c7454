// IntArrayRef and TensorOptions, as in libtorch: zeros({2, 3}, ember::kFloat64) or
// zeros({2, 3}, ember::TensorOptions().dtype(ember::kFloat64).requires_grad(true)).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"

namespace ember {

// A non-owning view of int64 values: a vector, a braced list, or one value (x.sum(1)).
class IntArrayRef {
 public:
  IntArrayRef() = default;
  IntArrayRef(const int64_t& one) : data_(&one), size_(1) {}  // NOLINT
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  // Like c10::IntArrayRef: valid for the full expression that holds the braced list.
  IntArrayRef(std::initializer_list<int64_t> list) : data_(list.begin()), size_(list.size()) {}  // NOLINT
#pragma GCC diagnostic pop
  IntArrayRef(const int64_t* data, size_t size) : data_(data), size_(size) {}

  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t front() const { return data_[0]; }
  int64_t back() const { return data_[size_ - 1]; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  bool equals(IntArrayRef other) const {
    if (size_ != other.size_) return false;
    for (size_t i = 0; i < size_; ++i) if (data_[i] != other.data_[i]) return false;
    return true;
  }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

inline std::ostream& operator<<(std::ostream& out, IntArrayRef values) {
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  return out << ']';
}

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType dtype) : dtype_(dtype), has_dtype_(true) {}  // NOLINT: libtorch allows zeros(s, kFloat)
  TensorOptions(Device device) : device_(device), has_device_(true) {}  // NOLINT: and x.to(device)
  TensorOptions(DeviceType type) : TensorOptions(Device(type)) {}      // NOLINT: and zeros(s, kCPU)

  TensorOptions dtype(ScalarType t) const { TensorOptions o = *this; o.dtype_ = t; o.has_dtype_ = true; return o; }
  TensorOptions requires_grad(bool r) const { TensorOptions o = *this; o.requires_grad_ = r; return o; }
  // Any device may be named; creating or moving a tensor to one other than the CPU is an error.
  TensorOptions device(Device d) const { TensorOptions o = *this; o.device_ = d; o.has_device_ = true; return o; }

  ScalarType dtype() const { return dtype_; }
  bool has_dtype() const { return has_dtype_; }
  bool requires_grad() const { return requires_grad_; }
  Device device() const { return device_; }
  bool has_device() const { return has_device_; }

 private:
  ScalarType dtype_ = kFloat32;
  bool has_dtype_ = false;
  bool requires_grad_ = false;
  Device device_ = Device(kCPU);
  bool has_device_ = false;
};

inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }

}  // namespace ember
