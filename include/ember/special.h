// libtorch's torch::special namespace (torch/special.h): the special functions under their
// SciPy names, for the ones ember has.
#pragma once
#include "ember/functions.h"

namespace ember::special {

// log|Gamma(x)|, as ember::lgamma.
inline Tensor gammaln(const Tensor& x) { return lgamma(x); }
// The logistic sigmoid.
inline Tensor expit(const Tensor& x) { return sigmoid(x); }
inline Tensor erf(const Tensor& x) { return ember::erf(x); }
inline Tensor expm1(const Tensor& x) { return ember::expm1(x); }

}  // namespace ember::special
