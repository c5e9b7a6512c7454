// Random tensors from the default generator.
#include <limits>
#include <mutex>

#include "cpu/random.h"
#include "ember/random.h"
#include "ops/op_utils.h"

namespace ember {
namespace {

std::mutex g_generator_mutex;

// Reserves `n` counter values of the default generator; returns (seed, first offset). Called
// inside the recorded call, so that each graph replay draws afresh (Note [Graph capture]).
std::pair<uint64_t, uint64_t> reserve(int64_t n) {
  std::lock_guard<std::mutex> lock(g_generator_mutex);
  Generator& gen = default_generator();
  return {gen.current_seed(), gen.reserve(static_cast<uint64_t>(n))};
}

// Generates into a fresh contiguous tensor of t's shape and dtype, then copies into t.
template <typename F>
Tensor& generate_into(const Tensor& t, const char* op, F fill) {
  EMBER_RECORD_OP(op, t);
  EMBER_CHECK(!ember_trace_op_.active(), op, "(in place) cannot be exported: random values are not a program");
  autograd::check_inplace(t, op);
  if (t.is_contiguous()) {
    fill(t);
  } else {
    Tensor tmp = core::make_tensor(t.sizes(), t.scalar_type());
    fill(tmp);
    ops::copy_into(t, tmp);
  }
  t.storage().bump_version();
  return const_cast<Tensor&>(t);  // tensors are handles: in-place methods are const, as in libtorch
}

Tensor& fill_distribution(const Tensor& t, const char* op, cpu::Distribution dist, double a, double b) {
  return generate_into(t, op, [&](const Tensor& out) {
    core::launch(op, [&] {
      return [dtype = out.scalar_type(), p = out.data_ptr(), n = out.numel(), dist, a, b] {
        auto [seed, offset] = reserve(n);
        cpu::fill_random(dtype, p, n, seed, offset, dist, a, b);
      };
    });
  });
}

}  // namespace

Generator& default_generator() {
  static Generator gen;
  return gen;
}

uint64_t random_bits(uint64_t seed, uint64_t index) { return cpu::random_bits(seed, index); }

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_generator_mutex);
  default_generator().manual_seed(seed);
}

Tensor& Tensor::uniform_(double from, double to) const {
  EMBER_CHECK(from <= to, "uniform_", "expects from <= to, but got from=", from, " > to=", to);
  return fill_distribution(*this, "uniform_", cpu::Distribution::Uniform, from, to);
}

Tensor& Tensor::normal_(double mean, double std) const {
  EMBER_CHECK(std >= 0, "normal_", "expects std >= 0.0, but found std ", std);
  return fill_distribution(*this, "normal_", cpu::Distribution::Normal, mean, std);
}

Tensor& Tensor::bernoulli_(double p) const {
  EMBER_CHECK(p >= 0 && p <= 1, "bernoulli_", "expects 0 <= p <= 1, but got p=", p);
  return fill_distribution(*this, "bernoulli_", cpu::Distribution::Bernoulli, p, 0);
}

Tensor& Tensor::random_(int64_t from, std::optional<int64_t> to) const {
  const char* op = "random_";
  EMBER_CHECK(defined(), op, "called on an undefined tensor");
  const ScalarType dtype = scalar_type();
  int64_t high = 0;
  if (to) {
    high = *to;
  } else {
    // One past the largest value the dtype holds exactly (libtorch's default range).
    switch (dtype) {
      case kBool: high = 2; break;
      case kUInt8: high = 256; break;
      case kInt8: high = 128; break;
      case kInt32: high = int64_t{1} << 31; break;
      case kInt64: high = std::numeric_limits<int64_t>::max(); break;
      case kFloat16: high = (int64_t{1} << 11) + 1; break;
      case kBFloat16: high = (int64_t{1} << 8) + 1; break;
      case kFloat32: high = (int64_t{1} << 24) + 1; break;
      case kFloat64: high = (int64_t{1} << 53) + 1; break;
    }
  }
  EMBER_CHECK(from < high, op, "expects 'from' to be less than 'to', but got from=", from, " >= to=", high);
  return generate_into(*this, op, [&](const Tensor& out) {
    core::launch(op, [&] {
      return [dtype, p = out.data_ptr(), n = out.numel(), from, high] {
        auto [seed, offset] = reserve(n);
        cpu::fill_randint(dtype, p, n, seed, offset, from, high);
      };
    });
  });
}

Tensor rand(IntArrayRef sizes, const TensorOptions& options) {
  check_device_available(options.device(), "rand");
  core::check_sizes(sizes, "rand");
  Tensor t = empty(sizes, options.requires_grad(false));
  EMBER_CHECK(t.is_floating_point(), "rand", "dtype must be floating point, got ", dtype_name(t.scalar_type()));
  t.uniform_(0, 1);
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

Tensor randn(IntArrayRef sizes, const TensorOptions& options) {
  check_device_available(options.device(), "randn");
  core::check_sizes(sizes, "randn");
  Tensor t = empty(sizes, options.requires_grad(false));
  EMBER_CHECK(t.is_floating_point(), "randn", "dtype must be floating point, got ", dtype_name(t.scalar_type()));
  t.normal_(0, 1);
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

Tensor randint(int64_t high, IntArrayRef sizes, const TensorOptions& options) { return randint(0, high, sizes, options); }

Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, const TensorOptions& options) {
  check_device_available(options.device(), "randint");
  EMBER_CHECK(low < high, "randint", "expects low < high, but got low=", low, " and high=", high);
  core::check_sizes(sizes, "randint");
  Tensor t = empty(sizes, options.has_dtype() ? options.requires_grad(false) : TensorOptions(kInt64));
  core::launch("randint", [&] {
    return [dtype = t.scalar_type(), p = t.data_ptr(), n = t.numel(), low, high] {
      auto [seed, offset] = reserve(n);
      cpu::fill_randint(dtype, p, n, seed, offset, low, high);
    };
  });
  return t;
}

Tensor randperm(int64_t n, const TensorOptions& options) {
  check_device_available(options.device(), "randperm");
  EMBER_CHECK(n >= 0, "randperm", "n must be non-negative, got ", n);
  Tensor perm = arange(n, kInt64);
  core::launch("randperm", [&] {
    return [p = perm.data_ptr<int64_t>(), n] {
      auto [seed, offset] = reserve(n);
      for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
        int64_t j = static_cast<int64_t>(cpu::random_bits(seed, offset + static_cast<uint64_t>(i)) %
                                         static_cast<uint64_t>(i + 1));
        std::swap(p[i], p[j]);
      }
    };
  });
  return perm.to(options.has_dtype() ? options.dtype() : kInt64);
}

Tensor bernoulli(const Tensor& probabilities) {
  EMBER_RECORD_OP("bernoulli", probabilities);
  Tensor p = probabilities.to(kFloat64).contiguous();
  Tensor out = empty(probabilities.sizes(), probabilities.scalar_type());
  core::launch("bernoulli", [&] {
    return [pp = p.data_ptr<double>(), dtype = out.scalar_type(), o = out.data_ptr(), n = out.numel()] {
      for (int64_t i = 0; i < n; ++i)
        EMBER_CHECK(pp[i] >= 0 && pp[i] <= 1, "bernoulli", "probability ", pp[i], " at index ", i, " is outside [0, 1]");
      auto [seed, offset] = reserve(n);
      cpu::fill_bernoulli(dtype, o, pp, n, seed, offset);
    };
  });
  return out;
}

Tensor bernoulli(const Tensor& like, double p) {
  Tensor out = empty_like(like);
  out.bernoulli_(p);
  return out;
}

Tensor dropout(const Tensor& x, double p, bool train) {
  EMBER_CHECK(p >= 0 && p <= 1, "dropout", "probability has to be between 0 and 1, but got ", p);
  if (!train || p == 0) return x;
  EMBER_RECORD_OP("dropout", x);
  if (p == 1) return x * zeros_like(x);
  Tensor mask = bernoulli(x.detach(), 1 - p).div_(1 - p);
  return x * mask;
}

}  // namespace ember
