#include "cpu/random.h"

#include <cmath>

#include "cpu/parallel.h"

namespace ember::cpu {
namespace {

struct Block {
  uint32_t v[4];
};

Block philox(uint64_t seed, uint64_t counter) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = 0xD2511F53ull * c0;
    const uint64_t p1 = 0xCD9E8D57ull * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in [0, 1) on a grid of 2^-digits. With `digits` no larger than a float type's
// significand, every value is exact in that type, so storing it cannot round up to 1.
double uniform01(const Block& r, int digits = 53) {
  const uint64_t bits = ((static_cast<uint64_t>(r.v[0]) << 21) ^ (static_cast<uint64_t>(r.v[1]) >> 11)) & ((1ull << 53) - 1);
  return std::ldexp(static_cast<double>(bits >> (53 - digits)), -digits);
}

int significand_digits(ScalarType dtype) {
  switch (dtype) {
    case kFloat16: return 11;
    case kBFloat16: return 8;
    case kFloat32: return 24;
    default: return 53;
  }
}

// `value` as `dtype` will store it.
double stored_value(ScalarType dtype, double value) {
  switch (dtype) {
    case kFloat16: return static_cast<float>(Half(static_cast<float>(value)));
    case kBFloat16: return static_cast<float>(BFloat16(static_cast<float>(value)));
    case kFloat32: return static_cast<float>(value);
    default: return value;
  }
}

template <typename T>
void store(void* out, int64_t i, double value) {
  static_cast<T*>(out)[i] = static_cast<T>(static_cast<std::conditional_t<sizeof(T) == 2, float, T>>(value));
}

void store_as(ScalarType dtype, void* out, int64_t i, double value) {
  switch (dtype) {
    case kBool: static_cast<bool*>(out)[i] = value != 0; break;
    case kUInt8: store<uint8_t>(out, i, value); break;
    case kInt8: store<int8_t>(out, i, value); break;
    case kInt32: store<int32_t>(out, i, value); break;
    case kInt64: store<int64_t>(out, i, value); break;
    case kFloat16: static_cast<Half*>(out)[i] = Half(static_cast<float>(value)); break;
    case kBFloat16: static_cast<BFloat16*>(out)[i] = BFloat16(static_cast<float>(value)); break;
    case kFloat32: store<float>(out, i, value); break;
    case kFloat64: store<double>(out, i, value); break;
  }
}

template <typename F>
void for_each_index(int64_t n, F f) {
  parallel_for(0, n, 16384, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) f(i);
  });
}

}  // namespace

void fill_random(ScalarType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, Distribution dist, double a,
                 double b) {
  for_each_index(n, [&](int64_t i) {
    Block r = philox(seed, offset + static_cast<uint64_t>(i));
    double value;
    if (dist == Distribution::Uniform) {
      value = a + (b - a) * uniform01(r, significand_digits(dtype));
      // For bounds other than [0, 1) rounding can still reach `b`; keep the interval half-open.
      if (stored_value(dtype, value) >= stored_value(dtype, b)) value = a;
    } else if (dist == Distribution::Normal) {
      const double u1 = 1.0 - uniform01(r);  // (0, 1]
      Block r2{{r.v[2], r.v[3], r.v[0] ^ 0x5bd1e995u, r.v[1]}};
      const double u2 = uniform01(r2);
      value = a + b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    } else {
      value = uniform01(r) < a ? 1.0 : 0.0;
    }
    store_as(dtype, out, i, value);
  });
}

void fill_randint(ScalarType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, int64_t low, int64_t high) {
  const uint64_t range = static_cast<uint64_t>(high - low);
  for_each_index(n, [&](int64_t i) {
    Block r = philox(seed, offset + static_cast<uint64_t>(i));
    const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
    store_as(dtype, out, i, static_cast<double>(low + static_cast<int64_t>(bits % range)));
  });
}

void fill_bernoulli(ScalarType dtype, void* out, const double* p, int64_t n, uint64_t seed, uint64_t offset) {
  for_each_index(n, [&](int64_t i) {
    Block r = philox(seed, offset + static_cast<uint64_t>(i));
    store_as(dtype, out, i, uniform01(r) < p[i] ? 1.0 : 0.0);
  });
}

uint64_t random_bits(uint64_t seed, uint64_t index) {
  Block r = philox(seed, index);
  return (static_cast<uint64_t>(r.v[0]) << 32) | r.v[1];
}

}  // namespace ember::cpu
