// Devices, as in libtorch (c10/core/Device.h, torch/cuda.h): ember::Device, kCPU, kCUDA,
// cuda::is_available(). ember runs on the CPU only, so a program written for libtorch ports
// unchanged: `Device device(cuda::is_available() ? kCUDA : kCPU)` picks the CPU, and a tensor
// or module asked to move to any other device is an ember::Error naming that device.
// Differences from libtorch: DeviceType lists the common libtorch types only (with libtorch's
// numbering); strings parse the same way ("cpu", "cuda:1", "mps").
#pragma once
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

namespace ember {

enum class DeviceType : int8_t {
  CPU = 0,
  CUDA = 1,
  HIP = 6,
  XLA = 9,
  XPU = 12,
  MPS = 13,
  Meta = 14,
};

constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kHIP = DeviceType::HIP;
constexpr DeviceType kXLA = DeviceType::XLA;
constexpr DeviceType kXPU = DeviceType::XPU;
constexpr DeviceType kMPS = DeviceType::MPS;
constexpr DeviceType kMeta = DeviceType::Meta;

using DeviceIndex = int8_t;

// "cpu", "cuda", ... (lower case, as libtorch prints them).
std::string DeviceTypeName(DeviceType type, bool lower_case = true);

class Device {
 public:
  // An index of -1 means "the current device" of that type; a CPU index must be -1 or 0.
  Device(DeviceType type, DeviceIndex index = -1);  // NOLINT: implicit, as in libtorch
  // "cpu", "cuda", "cuda:1": a device type name, then optionally ':' and an index.
  Device(const std::string& device_string);  // NOLINT: implicit, as in libtorch

  DeviceType type() const noexcept { return type_; }
  DeviceIndex index() const noexcept { return index_; }
  bool has_index() const noexcept { return index_ != -1; }
  bool is_cpu() const noexcept { return type_ == DeviceType::CPU; }
  bool is_cuda() const noexcept { return type_ == DeviceType::CUDA; }
  bool is_mps() const noexcept { return type_ == DeviceType::MPS; }
  bool is_meta() const noexcept { return type_ == DeviceType::Meta; }
  std::string str() const;

  bool operator==(const Device& other) const noexcept { return type_ == other.type_ && index_ == other.index_; }
  bool operator!=(const Device& other) const noexcept { return !(*this == other); }

 private:
  DeviceType type_;
  DeviceIndex index_ = -1;
};

std::ostream& operator<<(std::ostream& out, DeviceType type);
std::ostream& operator<<(std::ostream& out, const Device& device);

// Throws ember::Error naming `op` unless `device` is the CPU (the only device ember has).
void check_device_available(const Device& device, const char* op);

namespace cuda {
// No GPU backend exists yet: false / 0, so libtorch programs fall back to the CPU.
inline bool is_available() { return false; }
inline size_t device_count() { return 0; }
inline bool cudnn_is_available() { return false; }
}  // namespace cuda

}  // namespace ember
