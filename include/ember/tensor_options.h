// TensorOptions, as in libtorch: zeros({2, 3}, ember::kFloat64) or
// zeros({2, 3}, ember::TensorOptions().dtype(ember::kFloat64).requires_grad(true)).
#pragma once
#include <cstdint>
#include <ostream>

#include "ember/array_ref.h"
#include "ember/device.h"
#include "ember/dtype.h"

namespace ember {

// How a tensor's elements are laid out in memory: ember's tensors are all strided (dense,
// with sizes and strides), libtorch's default layout.
enum class Layout : int8_t { Strided };
constexpr Layout kStrided = Layout::Strided;
inline std::ostream& operator<<(std::ostream& out, Layout) { return out << "Strided"; }

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType dtype) : dtype_(dtype), has_dtype_(true) {}  // NOLINT: libtorch allows zeros(s, kFloat)
  TensorOptions(TypeMeta dtype) : TensorOptions(dtype.toScalarType()) {}  // NOLINT
  TensorOptions(Device device) : device_(device), has_device_(true) {}  // NOLINT: and x.to(device)
  TensorOptions(DeviceType type) : TensorOptions(Device(type)) {}      // NOLINT: and zeros(s, kCPU)
  TensorOptions(Layout layout) : has_layout_(true) { (void)layout; }  // NOLINT

  TensorOptions dtype(ScalarType t) const { TensorOptions o = *this; o.dtype_ = t; o.has_dtype_ = true; return o; }
  TensorOptions dtype(TypeMeta t) const { return dtype(t.toScalarType()); }
  template <typename T>
  TensorOptions dtype() const { return dtype(CppTypeToScalarType<T>::value); }
  TensorOptions requires_grad(bool r) const {
    TensorOptions o = *this;
    o.requires_grad_ = r;
    o.has_requires_grad_ = true;
    return o;
  }
  // Any device may be named; creating or moving a tensor to one other than the CPU is an error.
  TensorOptions device(Device d) const { TensorOptions o = *this; o.device_ = d; o.has_device_ = true; return o; }
  TensorOptions device(DeviceType type, DeviceIndex index) const { return device(Device(type, index)); }
  TensorOptions layout(Layout) const { TensorOptions o = *this; o.has_layout_ = true; return o; }

  // The dtype named, else the default dtype (ember::get_default_dtype()), as libtorch's.
  ScalarType dtype() const { return has_dtype_ ? dtype_ : get_default_dtype_as_scalartype(); }
  bool has_dtype() const { return has_dtype_; }
  bool requires_grad() const { return requires_grad_; }
  bool has_requires_grad() const { return has_requires_grad_; }
  Device device() const { return device_; }
  bool has_device() const { return has_device_; }
  Layout layout() const { return kStrided; }
  bool has_layout() const { return has_layout_; }

 private:
  ScalarType dtype_ = kFloat32;
  bool has_dtype_ = false;
  bool requires_grad_ = false;
  bool has_requires_grad_ = false;
  Device device_ = Device(kCPU);
  bool has_device_ = false;
  bool has_layout_ = false;
};

inline TensorOptions dtype(ScalarType t) { return TensorOptions().dtype(t); }
inline TensorOptions dtype(TypeMeta t) { return TensorOptions().dtype(t); }
template <typename T>
TensorOptions dtype() { return TensorOptions().dtype<T>(); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions layout(Layout l) { return TensorOptions().layout(l); }

// As libtorch's: TensorOptions(dtype=float (default), device=cpu (default), layout=Strided
// (default), requires_grad=false (default), pinned_memory=false (default),
// memory_format=(nullopt)); ember has no pinned memory or memory formats.
std::ostream& operator<<(std::ostream& out, const TensorOptions& options);

}  // namespace ember
