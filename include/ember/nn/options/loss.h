// Options of the losses added for libtorch parity (BCELoss, SmoothL1Loss, HuberLoss,
// MarginRankingLoss, TripletMarginLoss, CosineEmbeddingLoss, CTCLoss, SoftMarginLoss,
// MultiLabelSoftMarginLoss, HingeEmbeddingLoss, MultiMarginLoss, MultiLabelMarginLoss,
// PoissonNLLLoss, TripletMarginWithDistanceLoss), as libtorch's
// torch::nn::*LossOptions with the same defaults; the functional forms take the same classes
// under *FuncOptions names. Reductions are ember::Reduction values (kNone, kMean, kSum).
#pragma once
#include <cstdint>
#include <functional>
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

// log(1 + exp(-y * x)) per element (targets 1 or -1).
struct SoftMarginLossOptions {
  SoftMarginLossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  EMBER_ARG(Reduction, reduction);
};
using SoftMarginLossFuncOptions = SoftMarginLossOptions;

// -mean_c w_c * (y_c * logsigmoid(x_c) + (1 - y_c) * logsigmoid(-x_c)) per sample.
struct MultiLabelSoftMarginLossOptions {
  // Per-class weights [C].
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Reduction, reduction) = kMean;
};
using MultilabelSoftMarginLossFuncOptions = MultiLabelSoftMarginLossOptions;

// x where y = 1, max(0, margin - x) where y = -1 (other targets add both terms, as PyTorch).
struct HingeEmbeddingLossOptions {
  EMBER_ARG(double, margin) = 1.0;
  EMBER_ARG(Reduction, reduction) = kMean;
};
using HingeEmbeddingLossFuncOptions = HingeEmbeddingLossOptions;

// sum_{j != y} w_y * max(0, margin - x_y + x_j)^p / C per sample (p is 1 or 2).
struct MultiMarginLossOptions {
  EMBER_ARG(int64_t, p) = 1;
  EMBER_ARG(double, margin) = 1.0;
  // Per-class weights [C], applied by the target's class.
  EMBER_ARG(Tensor, weight) = {};
  EMBER_ARG(Reduction, reduction) = kMean;
};
using MultiMarginLossFuncOptions = MultiMarginLossOptions;

// Targets are class indices ended by the first -1; per sample,
// sum over targets j and non-targets k of max(0, 1 - (x_j - x_k)) / C.
struct MultiLabelMarginLossOptions {
  MultiLabelMarginLossOptions(Reduction reduction = kMean) : reduction_(reduction) {}  // NOLINT
  EMBER_ARG(Reduction, reduction);
};
using MultilabelMarginLossFuncOptions = MultiLabelMarginLossOptions;

// Negative log-likelihood of a Poisson target: exp(x) - t * x with log_input, else
// x - t * log(x + eps); full adds Stirling's t * log(t) - t + 0.5 * log(2 pi t) where t > 1.
struct PoissonNLLLossOptions {
  EMBER_ARG(bool, log_input) = true;
  EMBER_ARG(bool, full) = false;
  EMBER_ARG(double, eps) = 1e-8;
  EMBER_ARG(Reduction, reduction) = kMean;
};
using PoissonNLLLossFuncOptions = PoissonNLLLossOptions;

// triplet_margin_loss with any distance: max(0, margin + d(a, p) - d(a, n)); the distance
// defaults to F::pairwise_distance (p = 2, eps = 1e-6).
struct TripletMarginWithDistanceLossOptions {
  using distance_function_t = std::function<Tensor(const Tensor&, const Tensor&)>;
  using reduction_t = Reduction;
  EMBER_ARG(std::optional<distance_function_t>, distance_function) = std::nullopt;
  EMBER_ARG(double, margin) = 1.0;
  EMBER_ARG(bool, swap) = false;
  EMBER_ARG(Reduction, reduction) = kMean;
};
using TripletMarginWithDistanceLossFuncOptions = TripletMarginWithDistanceLossOptions;

namespace functional {
using nn::HingeEmbeddingLossFuncOptions;
using nn::MultilabelMarginLossFuncOptions;
using nn::MultilabelSoftMarginLossFuncOptions;
using nn::MultiMarginLossFuncOptions;
using nn::PoissonNLLLossFuncOptions;
using nn::SoftMarginLossFuncOptions;
using nn::TripletMarginWithDistanceLossFuncOptions;
using nn::BinaryCrossEntropyFuncOptions;
using nn::CosineEmbeddingLossFuncOptions;
using nn::CTCLossFuncOptions;
using nn::HuberLossFuncOptions;
using nn::MarginRankingLossFuncOptions;
using nn::SmoothL1LossFuncOptions;
using nn::TripletMarginLossFuncOptions;
}  // namespace functional

}  // namespace ember::nn
