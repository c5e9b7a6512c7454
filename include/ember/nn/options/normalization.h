// Options of GroupNorm and InstanceNorm1d/2d/3d, as libtorch's torch::nn::GroupNormOptions,
// GroupNormFuncOptions, InstanceNormOptions and InstanceNormFuncOptions, same defaults.
#pragma once
#include <cstdint>

#include "ember/arg.h"
#include "ember/tensor.h"

namespace ember::nn {

struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  EMBER_ARG(int64_t, num_groups);
  EMBER_ARG(int64_t, num_channels);
  EMBER_ARG(double, eps) = 1e-5;
  // Learnt per-channel weight (ones) and bias (zeros).
  EMBER_ARG(bool, affine) = true;
};

struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}  // NOLINT
  EMBER_ARG(int64_t, num_groups);
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Tensor, bias) = {};
  EMBER_ARG(double, eps) = 1e-5;
};

struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}  // NOLINT
  EMBER_ARG(int64_t, num_features);
  EMBER_ARG(double, eps) = 1e-5;
  EMBER_ARG(double, momentum) = 0.1;
  EMBER_ARG(bool, affine) = false;
  EMBER_ARG(bool, track_running_stats) = false;
};

// One options type for every rank, as libtorch's.
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;

struct InstanceNormFuncOptions {
  EMBER_ARG(Tensor, running_mean) = {};
  EMBER_ARG(Tensor, running_var) = {};
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Tensor, bias) = {};
  // Normalise with each instance's own statistics (and move the running ones, if given);
  // false uses the running ones.
  EMBER_ARG(bool, use_input_stats) = true;
  EMBER_ARG(double, momentum) = 0.1;
  EMBER_ARG(double, eps) = 1e-5;
};

// Lua Torch's cross-channel normalisation of [N, C, H, W]:
// x / (k + alpha / size * sum of x^2 over channels c - (size-1)/2 .. c + (size-1)/2)^beta.
struct CrossMapLRN2dOptions {
  CrossMapLRN2dOptions(int64_t size) : size_(size) {}  // NOLINT
  EMBER_ARG(int64_t, size);
  EMBER_ARG(double, alpha) = 1e-4;
  EMBER_ARG(double, beta) = 0.75;
  EMBER_ARG(int64_t, k) = 1;
};

namespace functional {
using nn::GroupNormFuncOptions;
using nn::InstanceNormFuncOptions;
}  // namespace functional

}  // namespace ember::nn
