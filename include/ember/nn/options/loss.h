// Options of the losses added for libtorch parity (BCELoss, SmoothL1Loss, HuberLoss,
// MarginRankingLoss, TripletMarginLoss, CosineEmbeddingLoss, CTCLoss), as libtorch's
// torch::nn::*LossOptions with the same defaults; the functional forms take the same classes
// under *FuncOptions names. Reductions are ember::Reduction values (kNone, kMean, kSum).
#pragma once
#include <cstdint>
#include <optional>

#include "ember/arg.h"
#include "ember/nn/enums.h"
#include "ember/tensor.h"

namespace ember::nn {

struct BCELossOptions {
  // Rescales each element's loss; broadcast against the input.
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Reduction, reduction) = kMean;
};
using BinaryCrossEntropyFuncOptions = BCELossOptions;

struct SmoothL1LossOptions {
  SmoothL1LossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  EMBER_ARG(Reduction, reduction);
  // Where the loss turns from quadratic to linear; unset means 1.0.
  EMBER_ARG(std::optional<double>, beta) = std::nullopt;
};
using SmoothL1LossFuncOptions = SmoothL1LossOptions;

struct HuberLossOptions {
  HuberLossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  EMBER_ARG(Reduction, reduction);
  EMBER_ARG(double, delta) = 1.0;
};
using HuberLossFuncOptions = HuberLossOptions;

struct MarginRankingLossOptions {
  EMBER_ARG(double, margin) = 0;
  EMBER_ARG(Reduction, reduction) = kMean;
};
using MarginRankingLossFuncOptions = MarginRankingLossOptions;

struct TripletMarginLossOptions {
  EMBER_ARG(double, margin) = 1.0;
  // The norm degree of the pairwise distance.
  EMBER_ARG(double, p) = 2.0;
  // Added to the differences before the norm, as F::pairwise_distance.
  EMBER_ARG(double, eps) = 1e-6;
  // Use min(d(a, n), d(p, n)) as the negative distance (Balntas et al.).
  EMBER_ARG(bool, swap) = false;
  EMBER_ARG(Reduction, reduction) = kMean;
};
using TripletMarginLossFuncOptions = TripletMarginLossOptions;

struct CosineEmbeddingLossOptions {
  EMBER_ARG(double, margin) = 0.0;
  EMBER_ARG(Reduction, reduction) = kMean;
};
using CosineEmbeddingLossFuncOptions = CosineEmbeddingLossOptions;

struct CTCLossOptions {
  EMBER_ARG(int64_t, blank) = 0;
  // kMean divides each sequence's loss by its target length (at least 1), then averages.
  EMBER_ARG(Reduction, reduction) = kMean;
  // Infinite losses (inputs too short for their targets) and their gradients become zero.
  EMBER_ARG(bool, zero_infinity) = false;
};
using CTCLossFuncOptions = CTCLossOptions;

namespace functional {
using nn::BinaryCrossEntropyFuncOptions;
using nn::CosineEmbeddingLossFuncOptions;
using nn::CTCLossFuncOptions;
using nn::HuberLossFuncOptions;
using nn::MarginRankingLossFuncOptions;
using nn::SmoothL1LossFuncOptions;
using nn::TripletMarginLossFuncOptions;
}  // namespace functional

}  // namespace ember::nn
