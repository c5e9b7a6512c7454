#include "ember/device.h"

#include <array>
#include <cctype>
#include <utility>

#include "ember/error.h"
#include "ember/tensor_options.h"

namespace ember {
namespace {

constexpr std::array<std::pair<DeviceType, const char*>, 7> kDeviceTypeNames = {{
    {DeviceType::CPU, "cpu"},
    {DeviceType::CUDA, "cuda"},
    {DeviceType::HIP, "hip"},
    {DeviceType::XLA, "xla"},
    {DeviceType::XPU, "xpu"},
    {DeviceType::MPS, "mps"},
    {DeviceType::Meta, "meta"},
}};

// The index part of "cuda:1": digits only, no sign, no leading zero, fits a DeviceIndex.
DeviceIndex parse_index(const std::string& device_string, const std::string& digits) {
  const bool well_formed = !digits.empty() && (digits.size() == 1 || digits[0] != '0') &&
                           digits.find_first_not_of("0123456789") == std::string::npos;
  EMBER_CHECK(well_formed, "Device", "invalid device string '", device_string,
              "': the index after ':' must be a non-negative integer");
  const int index = digits.size() <= 3 ? std::stoi(digits) : 1000;
  EMBER_CHECK(index <= 127, "Device", "invalid device string '", device_string, "': index ", digits,
              " is out of range (at most 127)");
  return static_cast<DeviceIndex>(index);
}

void validate(DeviceType type, DeviceIndex index) {
  EMBER_CHECK(index >= -1, "Device", "device index must be -1 or non-negative, got ", static_cast<int>(index));
  EMBER_CHECK(type != DeviceType::CPU || index <= 0, "Device", "CPU device index must be -1 or zero, got ",
              static_cast<int>(index));
}

}  // namespace

std::string DeviceTypeName(DeviceType type, bool lower_case) {
  for (const auto& [known, name] : kDeviceTypeNames) {
    if (known != type) continue;
    std::string result = name;
    if (!lower_case) {
      for (char& c : result) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return result;
  }
  EMBER_CHECK(false, "DeviceTypeName", "unknown device type ", static_cast<int>(type));
  return {};
}

Device::Device(DeviceType type, DeviceIndex index) : type_(type), index_(index) { validate(type_, index_); }

Device::Device(const std::string& device_string) : type_(DeviceType::CPU) {
  const size_t colon = device_string.find(':');
  const std::string type_name = device_string.substr(0, colon);
  bool known = false;
  for (const auto& [type, name] : kDeviceTypeNames) {
    if (type_name == name) {
      type_ = type;
      known = true;
    }
  }
  EMBER_CHECK(known, "Device", "expected one of cpu, cuda, hip, xla, xpu, mps, meta device type at start of "
              "device string: '", device_string, "'");
  if (colon != std::string::npos) index_ = parse_index(device_string, device_string.substr(colon + 1));
  validate(type_, index_);
}

std::string Device::str() const {
  std::string result = DeviceTypeName(type_);
  if (has_index()) result += ":" + std::to_string(static_cast<int>(index_));
  return result;
}

std::ostream& operator<<(std::ostream& out, DeviceType type) { return out << DeviceTypeName(type); }
std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }

void check_device_available(const Device& device, const char* op) {
  EMBER_CHECK(device.is_cpu(), op, "device ", device.str(),
              " is not available: ember runs on the CPU only (cuda::is_available() is false)");
}

std::ostream& operator<<(std::ostream& out, const TensorOptions& options) {
  const auto print = [&](const char* label, const auto& value, bool named) {
    out << label << std::boolalpha << value << (named ? "" : " (default)");
  };
  print("TensorOptions(dtype=", TypeMeta(options.dtype()), options.has_dtype());
  print(", device=", options.device(), options.has_device());
  print(", layout=", options.layout(), options.has_layout());
  print(", requires_grad=", options.requires_grad(), options.has_requires_grad());
  print(", pinned_memory=", false, false);
  return out << ", memory_format=(nullopt))";
}

}  // namespace ember
