// Special functions built from elementwise ops, so autograd comes from theirs.
#include <cmath>
#include <limits>

#include "ops/op_utils.h"

namespace ember {

// Lanczos' approximation (g = 7, nine terms; relative error near 1e-15) for z >= 0.5:
// lgamma(z) = log(2 pi) / 2 + (z - 1/2) log(t) - t + log(A(z)), t = z + g - 1/2,
// A(z) = c0 + sum_k c_k / (z - 1 + k). Below 0.5 the reflection formula
// lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x) brings x above it. Both branches are
// computed on inputs inside their own domain, so the branch `where` drops never makes a NaN
// gradient.
Tensor lgamma(const Tensor& x) {
  EMBER_CHECK(x.defined(), "lgamma", "called on an undefined tensor");
  static constexpr double kCoefficients[] = {0.99999999999980993,  676.5203681218851,     -1259.1392167224028,
                                             771.32342877765313,   -176.61502916214059,   12.507343278686905,
                                             -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};
  constexpr double kG = 7;
  const ScalarType out_dtype = x.is_floating_point() ? x.scalar_type() : ops::default_floating_dtype();
  const Tensor v = x.to(kFloat64);
  const Tensor reflect = v < 0.5;
  const Tensor z = where(reflect, 1 - v, v) - 1;
  Tensor series = full_like(z, kCoefficients[0]);
  for (int k = 1; k < 9; ++k) series = series + kCoefficients[k] / (z + k);
  const Tensor t = z + (kG + 0.5);
  const Tensor upper = 0.5 * std::log(2 * M_PI) + (z + 0.5) * t.log() - t + series.log();
  const Tensor sine = where(reflect, (v * M_PI).sin().abs(), ones_like(v));
  Tensor out = where(reflect, (M_PI / sine).log() - upper, upper);
  // The poles (0, -1, -2, ...) and both infinities are +inf, as libtorch's.
  const Tensor infinite = logical_or(logical_and(v <= 0, v == v.floor()), v.isinf());
  out = where(infinite, std::numeric_limits<double>::infinity(), out);
  return out.to(out_dtype);
}

}  // namespace ember
