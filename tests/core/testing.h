// Helpers shared by the core, ops and autograd suites. Tensors are read and written element
// by element straight from storage (not through ember's cast kernels), so a reference built
// here does not depend on the code under test.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "ember/ember.h"
#include "ember/storage.h"
#include "test_support.h"

namespace ember::testutil {

// Byte address of the element at row-major position `flat` of t's logical shape.
inline char* element_address(const Tensor& t, int64_t flat) {
  int64_t offset = t.storage_offset();
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    offset += (flat % t.size(d)) * t.stride(d);
    flat /= t.size(d);
  }
  return static_cast<char*>(t.storage().data()) + offset * static_cast<int64_t>(t.element_size());
}

template <typename T>
T read_raw(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

inline double element(const Tensor& t, int64_t flat) {
  const char* p = element_address(t, flat);
  switch (t.scalar_type()) {
    case kBool: return read_raw<bool>(p);
    case kUInt8: return read_raw<uint8_t>(p);
    case kInt8: return read_raw<int8_t>(p);
    case kInt32: return read_raw<int32_t>(p);
    case kInt64: return static_cast<double>(read_raw<int64_t>(p));
    case kFloat16: return Half::to_float(read_raw<uint16_t>(p));
    case kBFloat16: return BFloat16::to_float(read_raw<uint16_t>(p));
    case kFloat32: return read_raw<float>(p);
    case kFloat64: return read_raw<double>(p);
  }
  return 0;
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = element(t, i);
  return out;
}

// `value` as stored in `dtype` (round to nearest even for floats, truncation for integers).
inline double round_to(ScalarType dtype, double value) {
  switch (dtype) {
    case kBool: return value != 0;
    case kUInt8: return static_cast<uint8_t>(value);
    case kInt8: return static_cast<int8_t>(value);
    case kInt32: return static_cast<int32_t>(value);
    case kInt64: return static_cast<double>(static_cast<int64_t>(value));
    case kFloat16: return Half::to_float(Half::from_float(static_cast<float>(value)));
    case kBFloat16: return BFloat16::to_float(BFloat16::from_float(static_cast<float>(value)));
    case kFloat32: return static_cast<float>(value);
    case kFloat64: return value;
  }
  return value;
}

inline void write_element(const Tensor& t, int64_t flat, double value) {
  char* p = element_address(t, flat);
  auto put = [p](auto v) { std::memcpy(p, &v, sizeof(v)); };
  switch (t.scalar_type()) {
    case kBool: put(static_cast<bool>(value != 0)); break;
    case kUInt8: put(static_cast<uint8_t>(value)); break;
    case kInt8: put(static_cast<int8_t>(value)); break;
    case kInt32: put(static_cast<int32_t>(value)); break;
    case kInt64: put(static_cast<int64_t>(value)); break;
    case kFloat16: put(Half::from_float(static_cast<float>(value))); break;
    case kBFloat16: put(BFloat16::from_float(static_cast<float>(value))); break;
    case kFloat32: put(static_cast<float>(value)); break;
    case kFloat64: put(value); break;
  }
}

// A contiguous tensor of `dtype` holding `v` (rounded to the dtype) in row-major order.
inline Tensor make(const std::vector<double>& v, IntArrayRef sizes, ScalarType dtype) {
  Tensor t = empty(sizes, dtype);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size())) << "make: value count does not match the shape";
  for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(v.size()); ++i) write_element(t, i, v[i]);
  return t;
}

inline std::vector<double> uniform_values(int64_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> out(static_cast<size_t>(n));
  for (auto& x : out) x = dist(rng);
  return out;
}

inline std::vector<double> integer_values(int64_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<double> out(static_cast<size_t>(n));
  for (auto& x : out) x = dist(rng);
  return out;
}

struct Tolerance {
  double rtol, atol;
};

// Differences allowed by the storage precision of `dtype` (f16/bf16 compute in f32, round once).
inline Tolerance tolerance(ScalarType dtype) {
  switch (dtype) {
    case kFloat64: return {1e-12, 1e-12};
    case kFloat32: return {2e-6, 2e-6};
    case kFloat16: return {1.5e-3, 1e-4};
    case kBFloat16: return {8e-3, 1e-3};
    default: return {0, 0};
  }
}

// actual matches expected element-wise: NaN where NaN, equal infinities, else within tolerance.
inline ::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected, Tolerance tol) {
  if (actual.numel() != static_cast<int64_t>(expected.size())) {
    return ::testing::AssertionFailure() << "numel " << actual.numel() << " != expected " << expected.size();
  }
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = element(actual, i), e = expected[i];
    const bool same_special = (std::isnan(a) && std::isnan(e)) || (std::isinf(e) && a == e);
    if (same_special) continue;
    if (!(std::abs(a - e) <= tol.atol + tol.rtol * std::abs(e))) {
      return ::testing::AssertionFailure() << "element " << i << " of shape " << IntArrayRef(actual.sizes()) << " ("
                                           << dtype_name(actual.scalar_type()) << "): got " << a << ", expected "
                                           << e << " (diff " << std::abs(a - e) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult all_close(const Tensor& actual, const std::vector<double>& expected) {
  return all_close(actual, expected, tolerance(actual.scalar_type()));
}

inline ::testing::AssertionResult all_equal(const Tensor& actual, const std::vector<double>& expected) {
  return all_close(actual, expected, {0, 0});
}

}  // namespace ember::testutil
