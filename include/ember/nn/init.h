// Parameter initialisers, as torch::nn::init. Each fills `tensor` in place without
// recording autograd and returns it. Fans follow PyTorch: for a weight [out, in, *k],
// fan_in = in * prod(k), fan_out = out * prod(k).
#pragma once
#include <utility>

#include "ember/nn/enums.h"
#include "ember/tensor.h"

namespace ember::nn::init {

// The recommended gain for a nonlinearity (param: LeakyReLU's negative slope, default 0.01).
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);
// {fan_in, fan_out}; needs at least 2 dimensions.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor uniform_(Tensor tensor, double low = 0, double high = 1);
Tensor normal_(Tensor tensor, double mean = 0, double std = 1);
// Normal(mean, std) restricted to [a, b], by inverse-CDF sampling as PyTorch does.
Tensor trunc_normal_(Tensor tensor, double mean = 0, double std = 1, double a = -2, double b = 2);
Tensor constant_(Tensor tensor, double value);
Tensor ones_(Tensor tensor);
Tensor zeros_(Tensor tensor);
Tensor eye_(Tensor tensor);
// U(-bound, bound), bound = gain * sqrt(6 / (fan_in + fan_out)).
Tensor xavier_uniform_(Tensor tensor, double gain = 1);
// N(0, std), std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal_(Tensor tensor, double gain = 1);
// U(-bound, bound), bound = gain(nonlinearity, a) * sqrt(3 / fan).
Tensor kaiming_uniform_(Tensor tensor, double a = 0, FanMode mode = kFanIn, Nonlinearity nonlinearity = kLeakyReLU);
// N(0, std), std = gain(nonlinearity, a) / sqrt(fan).
Tensor kaiming_normal_(Tensor tensor, double a = 0, FanMode mode = kFanIn, Nonlinearity nonlinearity = kLeakyReLU);
// A (semi-)orthogonal matrix times gain, from the QR decomposition of a standard normal
// matrix (R's diagonal made positive): tensor viewed as [size(0), numel / size(0)] gets
// orthonormal columns, or orthonormal rows when it has fewer rows than columns. Needs at
// least 2 dimensions.
Tensor orthogonal_(Tensor tensor, double gain = 1);

}  // namespace ember::nn::init
