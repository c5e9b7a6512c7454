// Gradient clipping with PyTorch's formulas (torch/nn/utils/clip_grad.py).
#include "ember/nn/utils.h"

#include <cmath>

#include "ember/autograd.h"
#include "ember/functions.h"

namespace ember::nn::utils {
namespace {

// The norm_type norm of one gradient, accumulated in at least float32.
double gradient_norm(const Tensor& grad, double norm_type) {
  Tensor g = grad.scalar_type() == kFloat64 ? grad : grad.to(kFloat32);
  if (g.numel() == 0) return 0;
  if (std::isinf(norm_type)) return g.abs().max().item<double>();
  if (norm_type == 0) return (g != 0).sum().item<double>();
  if (norm_type == 2) return g.square().sum().sqrt().item<double>();
  return g.abs().pow(norm_type).sum().pow(1 / norm_type).item<double>();
}

double combine_norms(const std::vector<double>& norms, double norm_type) {
  double total = 0;
  if (std::isinf(norm_type)) {
    for (double n : norms) total = std::isnan(n) || std::isnan(total) ? NAN : std::max(total, n);
    return total;
  }
  if (norm_type == 0) {
    for (double n : norms) total += n;
    return total;
  }
  for (double n : norms) total += std::pow(n, norm_type);
  return std::pow(total, 1 / norm_type);
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  EMBER_CHECK(norm_type >= 0, "clip_grad_norm_", "norm_type must be non-negative, got ",
              norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  std::vector<double> norms;
  for (const Tensor& p : parameters) {
    if (!p.defined() || !p.grad().defined()) continue;
    grads.push_back(p.grad());
    norms.push_back(gradient_norm(p.grad(), norm_type));
  }
  if (grads.empty()) return 0;
  const double total_norm = combine_norms(norms, norm_type);
  EMBER_CHECK(!(error_if_nonfinite && !std::isfinite(total_norm)), "clip_grad_norm_", "the total norm of order ",
              norm_type, " for gradients from `parameters` is non-finite (", total_norm,
              "), so it cannot be clipped; pass error_if_nonfinite=false to scale anyway");
  const double clip_coef = std::min(max_norm / (total_norm + 1e-6), 1.0);
  for (Tensor& g : grads) g.mul_(clip_coef);
  return total_norm;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : parameters) {
    if (!p.defined() || !p.grad().defined()) continue;
    Tensor grad = p.grad();
    grad.clamp_(-clip_value, clip_value);
  }
}

}  // namespace ember::nn::utils
