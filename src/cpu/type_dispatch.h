// Calling a generic kernel body with the C++ type of a runtime dtype (internal, for
// src/cpu/*.cpp; the per-ISA files under src/cpu/simd have their own switches).
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ember/dtype.h"

namespace ember::cpu {

template <typename T> struct TypeTag { using type = T; };

// Calls body(TypeTag<T>{}) with T the C++ type of `dtype`.
template <typename Body>
void dispatch_dtype(ScalarType dtype, Body&& body) {
  switch (dtype) {
    case kBool: body(TypeTag<bool>{}); return;
    case kUInt8: body(TypeTag<uint8_t>{}); return;
    case kInt8: body(TypeTag<int8_t>{}); return;
    case kInt32: body(TypeTag<int32_t>{}); return;
    case kInt64: body(TypeTag<int64_t>{}); return;
    case kFloat16: body(TypeTag<Half>{}); return;
    case kBFloat16: body(TypeTag<BFloat16>{}); return;
    case kFloat32: body(TypeTag<float>{}); return;
    case kFloat64: body(TypeTag<double>{}); return;
  }
}

// Elements that are only moved, never computed with, are handled by size: body gets
// TypeTag<Bits> with Bits an unsigned integer of `element_size` bytes.
template <typename Body>
void dispatch_element_size(size_t element_size, Body&& body) {
  switch (element_size) {
    case 1: body(TypeTag<uint8_t>{}); return;
    case 2: body(TypeTag<uint16_t>{}); return;
    case 4: body(TypeTag<uint32_t>{}); return;
    default: body(TypeTag<uint64_t>{}); return;
  }
}

// Moves one element of type Bits between byte addresses (memcpy keeps this free of
// aliasing assumptions; it compiles to a single load and store).
template <typename Bits>
inline void move_element(char* dst, const char* src) {
  std::memcpy(dst, src, sizeof(Bits));
}

}  // namespace ember::cpu
