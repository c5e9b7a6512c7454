// Options of the activation layers beyond ReLU/GELU/SiLU/Softmax (options.h), as libtorch's
// torch::nn::LeakyReLUOptions, ELUOptions, PReLUOptions, ReLU6Options, SoftplusOptions,
// HardtanhOptions and GLUOptions, with the same defaults; the functional forms take the same
// classes under *FuncOptions names.
#pragma once
#include <cstdint>

#include "ember/arg.h"

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

namespace functional {
using nn::ELUFuncOptions;
using nn::GLUFuncOptions;
using nn::HardtanhFuncOptions;
using nn::LeakyReLUFuncOptions;
using nn::ReLU6FuncOptions;
using nn::SoftplusFuncOptions;
}  // namespace functional

}  // namespace ember::nn
