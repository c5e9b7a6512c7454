// Options of the activation layers beyond GELU/SiLU/Softmax (options.h), as libtorch's
// torch::nn::ReLUOptions, LeakyReLUOptions, ELUOptions, SELUOptions, CELUOptions, PReLUOptions,
// ReLU6Options, RReLUOptions, SoftplusOptions, HardtanhOptions, HardshrinkOptions,
// SoftshrinkOptions, ThresholdOptions, SoftminOptions and GLUOptions, with the same defaults;
// the functional forms take the same classes under *FuncOptions names (RReLU and Softmin have
// their own, with training / dtype).
#pragma once
#include <cstdint>
#include <optional>

#include "ember/arg.h"
#include "ember/dtype.h"

namespace ember::nn {

struct LeakyReLUOptions {
  EMBER_ARG(double, negative_slope) = 1e-2;
  EMBER_ARG(bool, inplace) = false;
};
using LeakyReLUFuncOptions = LeakyReLUOptions;

struct ELUOptions {
  EMBER_ARG(double, alpha) = 1.0;
  EMBER_ARG(bool, inplace) = false;
};
using ELUFuncOptions = ELUOptions;

// One slope per channel (num_parameters = C, the input's dim 1) or one shared slope (1).
struct PReLUOptions {
  EMBER_ARG(int64_t, num_parameters) = 1;
  EMBER_ARG(double, init) = 0.25;
};

struct ReLU6Options {
  ReLU6Options(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  EMBER_ARG(bool, inplace);
};
using ReLU6FuncOptions = ReLU6Options;

// log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold.
struct SoftplusOptions {
  EMBER_ARG(double, beta) = 1.0;
  EMBER_ARG(double, threshold) = 20.0;
};
using SoftplusFuncOptions = SoftplusOptions;

struct HardtanhOptions {
  EMBER_ARG(double, min_val) = -1.0;
  EMBER_ARG(double, max_val) = 1.0;
  EMBER_ARG(bool, inplace) = false;
};
using HardtanhFuncOptions = HardtanhOptions;

// The dim that is halved: first half * sigmoid(second half).
struct GLUOptions {
  GLUOptions(int64_t dim = -1) : dim_(dim) {}  // NOLINT
  EMBER_ARG(int64_t, dim);
};
using GLUFuncOptions = GLUOptions;

struct ReLUOptions {
  ReLUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  EMBER_ARG(bool, inplace);
};
using ReLUFuncOptions = ReLUOptions;

// scale * elu(x, alpha) with PyTorch's fixed scale and alpha.
struct SELUOptions {
  SELUOptions(bool inplace = false) : inplace_(inplace) {}  // NOLINT
  EMBER_ARG(bool, inplace);
};
using SELUFuncOptions = SELUOptions;

// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
struct CELUOptions {
  EMBER_ARG(double, alpha) = 1.0;
  EMBER_ARG(bool, inplace) = false;
};
using CELUFuncOptions = CELUOptions;

// x where |x| > lambda, else 0.
struct HardshrinkOptions {
  HardshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  EMBER_ARG(double, lambda);
};
using HardshrinkFuncOptions = HardshrinkOptions;

// x - lambda where x > lambda, x + lambda where x < -lambda, else 0.
struct SoftshrinkOptions {
  SoftshrinkOptions(double lambda = 0.5) : lambda_(lambda) {}  // NOLINT
  EMBER_ARG(double, lambda);
};
using SoftshrinkFuncOptions = SoftshrinkOptions;

// x where x > threshold, else value.
struct ThresholdOptions {
  ThresholdOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  EMBER_ARG(double, threshold);
  EMBER_ARG(double, value);
  EMBER_ARG(bool, inplace) = false;
};
using ThresholdFuncOptions = ThresholdOptions;

// Randomised leaky ReLU: in training, each negative element is scaled by a slope drawn
// uniformly from [lower, upper]; otherwise by (lower + upper) / 2.
struct RReLUOptions {
  EMBER_ARG(double, lower) = 1.0 / 8.0;
  EMBER_ARG(double, upper) = 1.0 / 3.0;
  EMBER_ARG(bool, inplace) = false;
};

struct RReLUFuncOptions {
  EMBER_ARG(double, lower) = 1.0 / 8.0;
  EMBER_ARG(double, upper) = 1.0 / 3.0;
  EMBER_ARG(bool, training) = false;
  EMBER_ARG(bool, inplace) = false;
};

// softmax(-x) along dim.
struct SoftminOptions {
  SoftminOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  EMBER_ARG(int64_t, dim);
};

struct SoftminFuncOptions {
  SoftminFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT
  EMBER_ARG(int64_t, dim);
  // Converts the input to this dtype first.
  EMBER_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};

// Samples of the Gumbel-softmax distribution: softmax((logits + g) / tau) along dim with g
// standard Gumbel noise; hard returns the one-hot of its argmax with the soft sample's
// gradient (the straight-through estimator).
struct GumbelSoftmaxFuncOptions {
  EMBER_ARG(double, tau) = 1.0;
  EMBER_ARG(bool, hard) = false;
  EMBER_ARG(int, dim) = -1;
};

namespace functional {
using nn::CELUFuncOptions;
using nn::GumbelSoftmaxFuncOptions;
using nn::HardshrinkFuncOptions;
using nn::ReLUFuncOptions;
using nn::RReLUFuncOptions;
using nn::SELUFuncOptions;
using nn::SoftminFuncOptions;
using nn::SoftshrinkFuncOptions;
using nn::ThresholdFuncOptions;
using nn::ELUFuncOptions;
using nn::GLUFuncOptions;
using nn::HardtanhFuncOptions;
using nn::LeakyReLUFuncOptions;
using nn::ReLU6FuncOptions;
using nn::SoftplusFuncOptions;
}  // namespace functional

}  // namespace ember::nn
