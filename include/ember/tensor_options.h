// TensorOptions, as in libtorch: zeros({2, 3}, ember::kFloat64) or
// zeros({2, 3}, ember::TensorOptions().dtype(ember::kFloat64).requires_grad(true)).
#pragma once
#include <cstdint>

#include "ember/array_ref.h"
#include "ember/device.h"
#include "ember/dtype.h"

namespace ember {

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
