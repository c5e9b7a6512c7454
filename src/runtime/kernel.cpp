#include "runtime/kernel.h"

#include <cstring>

namespace ember::rt {

const program::Attribute* find_attribute(const program::Call* call, const char* name) {
  if (call->attributes() == nullptr) return nullptr;
  for (const program::Attribute* attribute : *call->attributes())
    if (std::strcmp(attribute->name()->c_str(), name) == 0) return attribute;
  return nullptr;
}

const char* dtype_name(program::ScalarType dtype) {
  const char* name = program::EnumNameScalarType(dtype);
  return name[0] != '\0' ? name : "unknown";
}

int64_t element_size(program::ScalarType dtype) {
  switch (dtype) {
    case program::ScalarType::Bool:
    case program::ScalarType::UInt8:
    case program::ScalarType::Int8: return 1;
    case program::ScalarType::Float16:
    case program::ScalarType::BFloat16: return 2;
    case program::ScalarType::Int32:
    case program::ScalarType::Float32: return 4;
    case program::ScalarType::Int64:
    case program::ScalarType::Float64: return 8;
  }
  return 1;
}

}  // namespace ember::rt
