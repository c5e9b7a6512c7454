// Element types. Names follow libtorch: ember::kFloat32 == ember::kFloat, ember::kInt64 ==
// ember::kLong, ... float16 and bfloat16 are storage types: arithmetic runs in float32.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>

#include "ember/detail/float16.h"

namespace ember {

enum class ScalarType : int8_t {
  Bool,
  UInt8,
  Int8,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};
constexpr int kNumScalarTypes = 9;
using Dtype = ScalarType;

constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kUInt8 = ScalarType::UInt8;
constexpr ScalarType kByte = ScalarType::UInt8;
constexpr ScalarType kInt8 = ScalarType::Int8;
constexpr ScalarType kChar = ScalarType::Int8;
constexpr ScalarType kInt32 = ScalarType::Int32;
constexpr ScalarType kInt = ScalarType::Int32;
constexpr ScalarType kInt64 = ScalarType::Int64;
constexpr ScalarType kLong = ScalarType::Int64;
constexpr ScalarType kFloat16 = ScalarType::Float16;
constexpr ScalarType kHalf = ScalarType::Float16;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kFloat32 = ScalarType::Float32;
constexpr ScalarType kFloat = ScalarType::Float32;
constexpr ScalarType kFloat64 = ScalarType::Float64;
constexpr ScalarType kDouble = ScalarType::Float64;

// IEEE binary16, round-to-nearest-even conversions.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float value) : bits(from_float(value)) {}  // NOLINT: implicit like c10::Half
  operator float() const { return to_float(bits); }  // NOLINT

  static uint16_t from_float(float value) { return detail::float_to_half(value); }
  static float to_float(uint16_t h) { return detail::half_to_float(h); }
};

// bfloat16: the top half of a float32, round-to-nearest-even, NaN kept quiet.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float value) : bits(from_float(value)) {}  // NOLINT
  operator float() const { return to_float(bits); }  // NOLINT

  static uint16_t from_float(float value) { return detail::float_to_bf16(value); }
  static float to_float(uint16_t b) { return detail::bf16_to_float(b); }
};

inline size_t element_size(ScalarType t) {
  switch (t) {
    case kBool: case kUInt8: case kInt8: return 1;
    case kFloat16: case kBFloat16: return 2;
    case kInt32: case kFloat32: return 4;
    case kInt64: case kFloat64: return 8;
  }
  return 0;
}

inline const char* dtype_name(ScalarType t) {
  switch (t) {
    case kBool: return "bool";
    case kUInt8: return "uint8";
    case kInt8: return "int8";
    case kInt32: return "int32";
    case kInt64: return "int64";
    case kFloat16: return "float16";
    case kBFloat16: return "bfloat16";
    case kFloat32: return "float32";
    case kFloat64: return "float64";
  }
  return "unknown";
}

// libtorch's name of a dtype (c10::toString: "Float", "Long", "BFloat16"); dtype_name is
// PyTorch's Python name ("float32").
inline const char* toString(ScalarType t) {
  switch (t) {
    case kBool: return "Bool";
    case kUInt8: return "Byte";
    case kInt8: return "Char";
    case kInt32: return "Int";
    case kInt64: return "Long";
    case kFloat16: return "Half";
    case kBFloat16: return "BFloat16";
    case kFloat32: return "Float";
    case kFloat64: return "Double";
  }
  return "UNKNOWN_SCALAR";
}

inline std::ostream& operator<<(std::ostream& out, ScalarType t) { return out << dtype_name(t); }

inline bool is_floating_point(ScalarType t) {
  return t == kFloat16 || t == kBFloat16 || t == kFloat32 || t == kFloat64;
}
inline bool is_integral(ScalarType t, bool include_bool = false) {
  return t == kUInt8 || t == kInt8 || t == kInt32 || t == kInt64 || (include_bool && t == kBool);
}

// PyTorch's promotion lattice for two tensors of the same category rank.
ScalarType promote_types(ScalarType a, ScalarType b);

// C++ type <-> ScalarType.
template <typename T> struct CppTypeToScalarType;
template <> struct CppTypeToScalarType<bool> { static constexpr ScalarType value = kBool; };
template <> struct CppTypeToScalarType<uint8_t> { static constexpr ScalarType value = kUInt8; };
template <> struct CppTypeToScalarType<int8_t> { static constexpr ScalarType value = kInt8; };
template <> struct CppTypeToScalarType<int32_t> { static constexpr ScalarType value = kInt32; };
template <> struct CppTypeToScalarType<int64_t> { static constexpr ScalarType value = kInt64; };
template <> struct CppTypeToScalarType<Half> { static constexpr ScalarType value = kFloat16; };
template <> struct CppTypeToScalarType<BFloat16> { static constexpr ScalarType value = kBFloat16; };
template <> struct CppTypeToScalarType<float> { static constexpr ScalarType value = kFloat32; };
template <> struct CppTypeToScalarType<double> { static constexpr ScalarType value = kFloat64; };

}  // namespace ember
