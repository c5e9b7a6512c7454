// Options of the distance functions (F::cosine_similarity, F::pairwise_distance,
// F::normalize and their modules), as libtorch's torch::nn::CosineSimilarityOptions,
// PairwiseDistanceOptions and NormalizeFuncOptions, with the same defaults.
#pragma once
#include <cstdint>
#include <optional>

#include "ember/arg.h"
#include "ember/tensor.h"

namespace ember::nn {

// <x1, x2> / (max(||x1||, eps) * max(||x2||, eps)) along dim.
struct CosineSimilarityOptions {
  EMBER_ARG(int64_t, dim) = 1;
  EMBER_ARG(double, eps) = 1e-8;
};
using CosineSimilarityFuncOptions = CosineSimilarityOptions;

// ||x1 - x2 + eps||_p over the last dim.
struct PairwiseDistanceOptions {
  EMBER_ARG(double, p) = 2.0;
  EMBER_ARG(double, eps) = 1e-6;
  EMBER_ARG(bool, keepdim) = false;
};
using PairwiseDistanceFuncOptions = PairwiseDistanceOptions;

// x / max(||x||_p, eps) along dim; `out`, when given, receives the result (its shape must be
// the input's) and is returned.
struct NormalizeFuncOptions {
  EMBER_ARG(double, p) = 2.0;
  EMBER_ARG(int64_t, dim) = 1;
  EMBER_ARG(double, eps) = 1e-12;
  EMBER_ARG(std::optional<Tensor>, out) = std::nullopt;
};

namespace functional {
using nn::CosineSimilarityFuncOptions;
using nn::NormalizeFuncOptions;
using nn::PairwiseDistanceFuncOptions;
}  // namespace functional

}  // namespace ember::nn
