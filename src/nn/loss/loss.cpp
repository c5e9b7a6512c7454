// Loss functions with PyTorch's exact formulas (aten/src/ATen/native/Loss*.cpp), composed
// from ember ops so autograd comes for free.
#include <cmath>
#include <limits>

#include "core/record_op.h"
#include "ember/functions.h"
#include "ember/graph.h"
#include "ember/nn/functional.h"
#include "nn/activation.h"

namespace ember {

const char* reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::None: return "none";
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
    case Reduction::BatchMean: return "batchmean";
  }
  return "unknown";
}

}  // namespace ember

namespace ember::nn::functional {
namespace {

Tensor reduce(const Tensor& loss, Reduction reduction, const char* op) {
  switch (reduction) {
    case kNone: return loss;
    case kSum: return loss.sum();
    case kMean: return loss.mean();
    case kBatchMean: break;
  }
  EMBER_FAIL(op, "reduction 'batchmean' is only supported by kl_div; use kMean, kSum or kNone");
}

// Class-index targets against [C] / [N, C] / [N, C, d...] scores, flattened so that the
// classes are the last dim: scores [M, C], target [M] (int64), in PyTorch's element order.
struct FlatClassProblem {
  Tensor scores;
  Tensor target;
  Tensor ignored;             // [M] bool
  Tensor safe_target;         // [M], ignored rows point at class 0
  Tensor target_weight;       // [M], weight[t] (or 1), 0 on ignored rows
  std::vector<int64_t> shape;  // the unreduced loss's shape (target's shape)
};

FlatClassProblem flatten_class_problem(const Tensor& scores, const Tensor& target, const Tensor& weight,
                                       int64_t ignore_index, const char* op) {
  EMBER_CHECK(scores.dim() >= 1, op, "input must have at least 1 dim (classes), got a 0-dim tensor");
  EMBER_CHECK(is_integral(target.scalar_type()), op, "class-index target must be an integer tensor, got ",
              dtype_name(target.scalar_type()));
  const int64_t class_dim = scores.dim() == 1 ? 0 : 1;
  const int64_t classes = scores.size(class_dim);
  std::vector<int64_t> expected = scores.sizes();
  expected.erase(expected.begin() + class_dim);
  EMBER_CHECK(target.sizes() == expected, op, "target shape ", target.sizes(), " does not match input shape ",
              scores.sizes(), " (expected target shape ", expected, ")");
  if (weight.defined()) {
    EMBER_CHECK(weight.dim() == 1 && weight.size(0) == classes, op, "weight of shape ", weight.sizes(),
                " must be 1-D with one value per class (", classes, ")");
  }

  FlatClassProblem p;
  p.shape = target.sizes();
  std::vector<int64_t> order;  // classes last
  for (int64_t d = 0; d < scores.dim(); ++d) if (d != class_dim) order.push_back(d);
  order.push_back(class_dim);
  p.scores = scores.permute(order).reshape({-1, classes});
  p.target = target.to(kInt64).reshape({-1});
  p.ignored = p.target == ignore_index;

  Tensor bad = ((p.target < 0).logical_or(p.target >= classes)).logical_and(p.ignored.logical_not());
  // A graph capture cannot read the targets; the gather of the picked scores checks them at replay.
  if (!is_current_stream_capturing() && bad.any().item<bool>()) {
    const int64_t lowest = where(bad, p.target, classes).min().item<int64_t>();
    const int64_t offending = lowest < 0 ? lowest : where(bad, p.target, int64_t{-1}).max().item<int64_t>();
    EMBER_FAIL(op, "target ", offending, " is out of bounds for ", classes, " classes (ignore_index is ",
               ignore_index, ")");
  }
  p.safe_target = p.target.masked_fill(p.ignored, 0);
  Tensor kept = p.ignored.logical_not().to(scores.scalar_type());
  p.target_weight = weight.defined() ? weight.index_select(0, p.safe_target).to(scores.scalar_type()) * kept : kept;
  return p;
}

// -weight[t_i] * log_probs[i, t_i] per row, zero on ignored rows.
Tensor picked_nll(const FlatClassProblem& p) {
  Tensor picked = p.scores.gather(1, p.safe_target.unsqueeze(1)).squeeze(1);
  return -(picked * p.target_weight);
}

Tensor reduce_nll(const Tensor& rows, const FlatClassProblem& p, Reduction reduction, const char* op) {
  switch (reduction) {
    case kNone: return rows.reshape(p.shape);
    case kSum: return rows.sum();
    case kMean: return rows.sum() / p.target_weight.sum();
    case kBatchMean: break;
  }
  return reduce(rows, reduction, op);
}

// weight broadcasts to `sizes` without growing the result.
void check_broadcasts_to(const Tensor& weight, const std::vector<int64_t>& sizes, const char* what, const char* op) {
  bool fits = weight.dim() <= static_cast<int64_t>(sizes.size());
  for (int64_t i = 1; fits && i <= weight.dim(); ++i) {
    const int64_t w = weight.size(weight.dim() - i), s = sizes[sizes.size() - i];
    fits = w == 1 || w == s;
  }
  EMBER_CHECK(fits, op, what, " of shape ", weight.sizes(), " does not broadcast to the input shape ", sizes);
}

Tensor class_weight_view(const Tensor& weight, int64_t dims, int64_t class_dim) {
  std::vector<int64_t> shape(static_cast<size_t>(dims), 1);
  shape[class_dim] = weight.size(0);
  return weight.view(shape);
}

Tensor cross_entropy_probabilities(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options) {
  const char* op = "cross_entropy";
  EMBER_CHECK(is_floating_point(target.scalar_type()), op,
              "target with class probabilities must be floating point, got ", dtype_name(target.scalar_type()));
  EMBER_CHECK(options.ignore_index() < 0, op, "ignore_index (", options.ignore_index(),
              ") is not supported for class-probability targets");
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t classes = input.size(class_dim);
  Tensor log_probs = input.log_softmax(class_dim);
  const double eps = options.label_smoothing();
  Tensor smoothed = eps > 0 ? target * (1 - eps) + eps / static_cast<double>(classes) : target;
  Tensor terms = log_probs * smoothed;
  if (options.weight().defined()) {
    EMBER_CHECK(options.weight().dim() == 1 && options.weight().size(0) == classes, op, "weight of shape ",
                options.weight().sizes(), " must be 1-D with one value per class (", classes, ")");
    terms = terms * class_weight_view(options.weight(), input.dim(), class_dim);
  }
  switch (options.reduction()) {
    case kNone: return -terms.sum(class_dim);
    case kSum: return -terms.sum();
    case kMean: {
      // Divides by the number of rows; an empty input gives NaN.
      const double rows = static_cast<double>(input.numel() / std::max<int64_t>(classes, 1));
      return -terms.sum() / (input.numel() == 0 ? std::numeric_limits<double>::quiet_NaN() : rows);
    }
    case kBatchMean: break;
  }
  return reduce(terms, options.reduction(), op);
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& options) {
  FlatClassProblem p = flatten_class_problem(input, target, options.weight(), options.ignore_index(), "nll_loss");
  return reduce_nll(picked_nll(p), p, options.reduction(), "nll_loss");
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& options) {
  const char* op = "cross_entropy";
  EMBER_RECORD_OP(op, input, target);
  const double eps = options.label_smoothing();
  EMBER_CHECK(eps >= 0 && eps <= 1, op, "label_smoothing must be within [0, 1], got ", eps);
  if (input.sizes() == target.sizes() && is_floating_point(target.scalar_type()))
    return cross_entropy_probabilities(input, target, options);

  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  Tensor log_probs = input.dim() == 0 ? input : input.log_softmax(class_dim);
  FlatClassProblem p = flatten_class_problem(log_probs, target, options.weight(), options.ignore_index(), op);
  Tensor nll = reduce_nll(picked_nll(p), p, options.reduction(), op);
  if (eps == 0) return nll;

  const double classes = static_cast<double>(p.scores.size(1));
  Tensor weighted = options.weight().defined() ? p.scores * options.weight().to(p.scores.scalar_type()) : p.scores;
  Tensor smooth = (-weighted.sum(1)).masked_fill(p.ignored, 0);
  return nll * (1 - eps) + reduce_nll(smooth, p, options.reduction(), op) * (eps / classes);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& options) {
  return reduce((input - target).square(), options.reduction(), "mse_loss");
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& options) {
  return reduce((input - target).abs(), options.reduction(), "l1_loss");
}


Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& options) {
  const char* op = "binary_cross_entropy_with_logits";
  EMBER_CHECK(input.sizes() == target.sizes(), op, "target size ", target.sizes(),
              " must be the same as input size ", input.sizes());
  Tensor log_weight = options.pos_weight().defined() ? (options.pos_weight() - 1) * target + 1 : Tensor();
  Tensor softplus = nn::detail::log1p_exp(-input);  // -log(sigmoid(x))
  Tensor loss = (1 - target) * input + (log_weight.defined() ? log_weight * softplus : softplus);
  if (options.weight().defined()) loss = loss * options.weight();
  return reduce(loss, options.reduction(), op);
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& options) {
  Tensor pointwise;
  if (options.log_target()) {
    pointwise = target.exp() * (target - input);
  } else {
    // xlogy(t, t): 0 where t == 0.
    pointwise = target * where(target == 0, 1.0, target).log() - target * input;
  }
  if (options.reduction() == kBatchMean) {
    Tensor total = pointwise.sum();
    return input.dim() == 0 ? total : total / static_cast<double>(input.size(0));
  }
  return reduce(pointwise, options.reduction(), "kl_div");
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
  const char* op = "binary_cross_entropy";
  EMBER_RECORD_OP(op, input, target);
  EMBER_CHECK(target.sizes() == input.sizes(), op, "target size ", target.sizes(), " must be the same as input size ",
              input.sizes());
  EMBER_CHECK(input.is_floating_point(), op, "expected a floating-point input, got ", dtype_name(input.scalar_type()));
  const Tensor& weight = options.weight();
  if (weight.defined()) check_broadcasts_to(weight, input.sizes(), "weight", op);
  Tensor outside = ((input >= 0).logical_and(input <= 1)).logical_not();
  if (outside.any().item<bool>()) {
    const int64_t first = outside.reshape({-1}).to(kInt32).argmax().item<int64_t>();
    EMBER_FAIL(op, "all elements of input should be between 0 and 1, got ",
               input.detach().reshape({-1})[first].item<double>(), " at flat index ", first);
  }
  // PyTorch clamps each log at -100 so that a saturated probability gives a finite loss.
  Tensor loss = -(target * input.log().clamp_min(-100) + (1 - target) * (1 - input).log().clamp_min(-100));
  if (weight.defined()) loss = loss * weight;
  return reduce(loss, options.reduction(), op);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options) {
  const char* op = "smooth_l1_loss";
  const double beta = options.beta().value_or(1.0);
  EMBER_CHECK(beta >= 0, op, "beta must not be negative, got ", beta);
  Tensor z = (input - target).abs();
  if (beta == 0) return reduce(z, options.reduction(), op);
  return reduce(where(z < beta, z * z * (0.5 / beta), z - 0.5 * beta), options.reduction(), op);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& options, double beta) {
  EMBER_CHECK(!options.beta().has_value(), "smooth_l1_loss",
              "expected beta not to be set in options when given apart, but options.beta() is ",
              options.beta().value_or(0), " and beta is ", beta);
  return smooth_l1_loss(input, target, SmoothL1LossFuncOptions(options).beta(beta));
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& options) {
  const char* op = "huber_loss";
  const double delta = options.delta();
  EMBER_CHECK(delta > 0, op, "delta must be positive, got ", delta);
  Tensor z = (input - target).abs();
  return reduce(where(z < delta, z * z * 0.5, (z - 0.5 * delta) * delta), options.reduction(), op);
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& options) {
  const char* op = "margin_ranking_loss";
  EMBER_CHECK(input1.dim() == input2.dim() && input1.dim() == target.dim(), op,
              "input1, input2 and target must have the same number of dims, got shapes ", input1.sizes(), ", ",
              input2.sizes(), " and ", target.sizes());
  return reduce((-target * (input1 - input2) + options.margin()).clamp_min(0), options.reduction(), op);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& options) {
  const char* op = "triplet_margin_loss";
  EMBER_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(), op,
              "anchor, positive and negative must have the same number of dims, got shapes ", anchor.sizes(), ", ",
              positive.sizes(), " and ", negative.sizes());
  EMBER_CHECK(anchor.dim() >= 1, op, "inputs must have at least 1 dim (the features), got 0-dim tensors");
  EMBER_CHECK(options.p() > 0, op, "p must be positive, got ", options.p());
  auto distance = [&](const Tensor& x1, const Tensor& x2) {
    return pairwise_distance(x1, x2, PairwiseDistanceFuncOptions().p(options.p()).eps(options.eps()));
  };
  Tensor positive_distance = distance(anchor, positive);
  Tensor negative_distance = distance(anchor, negative);
  if (options.swap()) negative_distance = negative_distance.minimum(distance(positive, negative));
  return reduce((positive_distance - negative_distance + options.margin()).clamp_min(0), options.reduction(), op);
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& options) {
  const char* op = "cosine_embedding_loss";
  const int64_t target_dim = target.dim();
  EMBER_CHECK(target_dim <= 1, op, "target must be 0-dim or 1-D, got shape ", target.sizes());
  EMBER_CHECK(input1.dim() == target_dim + 1 && input2.dim() == target_dim + 1, op, "a ", target_dim,
              "-dim target needs ", target_dim + 1, "-dim inputs, got shapes ", input1.sizes(), " and ",
              input2.sizes());
  const double kEpsilon = 1e-12;  // PyTorch's EPSILON in Loss.cpp
  Tensor dot = (input1 * input2).sum({target_dim});
  Tensor squared_norm1 = (input1 * input1).sum({target_dim}) + kEpsilon;
  Tensor squared_norm2 = (input2 * input2).sum({target_dim}) + kEpsilon;
  Tensor cosine = dot / (squared_norm1 * squared_norm2).sqrt();
  Tensor zero = zeros_like(cosine);
  Tensor loss =
      where(target == 1, 1 - cosine, zero) + where(target == -1, (cosine - options.margin()).clamp_min(0), zero);
  return reduce(loss, options.reduction(), op);
}

Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& options) {
  const char* op = "triplet_margin_with_distance_loss";
  EMBER_CHECK(options.margin() > 0, op, "margin must be greater than 0, got ", options.margin());
  auto distance = [&](const Tensor& x1, const Tensor& x2) {
    return options.distance_function() ? (*options.distance_function())(x1, x2) : functional::pairwise_distance(x1, x2);
  };
  Tensor positive_distance = distance(anchor, positive);
  Tensor negative_distance = distance(anchor, negative);
  if (options.swap()) negative_distance = negative_distance.minimum(distance(positive, negative));
  return reduce((positive_distance - negative_distance + options.margin()).clamp_min(0), options.reduction(), op);
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& options) {
  return reduce(nn::detail::log1p_exp(-target * input), options.reduction(), "soft_margin_loss");
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& options) {
  const char* op = "multilabel_soft_margin_loss";
  EMBER_CHECK(input.dim() == 2 && target.sizes() == input.sizes(), op,
              "expected input [N, C] and a target of the same shape, got ", input.sizes(), " and ", target.sizes());
  // -(y * logsigmoid(x) + (1 - y) * logsigmoid(-x)), with logsigmoid(x) = -log1p_exp(-x).
  Tensor loss = target * nn::detail::log1p_exp(-input) + (1 - target) * nn::detail::log1p_exp(input);
  if (options.weight().defined()) loss = loss * options.weight();
  loss = loss.sum({1}) / input.size(1);
  return reduce(loss, options.reduction(), op);
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& options) {
  Tensor zero = zeros({}, input.scalar_type());
  Tensor margin_part = where(target != 1, (options.margin() - input).clamp_min(0), zero);
  Tensor self_part = where(target != -1, input, zero);
  return reduce(margin_part + self_part, options.reduction(), "hinge_embedding_loss");
}

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& options) {
  const char* op = "multi_margin_loss";
  EMBER_CHECK(options.p() == 1 || options.p() == 2, op, "only p == 1 and p == 2 supported, got ", options.p());
  EMBER_CHECK((input.dim() == 2 && target.dim() == 1 && target.size(0) == input.size(0)) ||
                  (input.dim() == 1 && target.dim() == 0),
              op, "expected input [N, C] with target [N], or input [C] with a 0-dim target, got ", input.sizes(),
              " and ", target.sizes());
  EMBER_CHECK(is_integral(target.scalar_type()), op, "target must hold class indices (an integer tensor), got ",
              dtype_name(target.scalar_type()));
  const bool batched = input.dim() == 2;
  Tensor x = batched ? input : input.unsqueeze(0);
  Tensor y = (batched ? target : target.unsqueeze(0)).to(kInt64).unsqueeze(1);  // [N, 1]
  const int64_t classes = x.size(1);
  EMBER_CHECK(y.numel() == 0 || (y.min().item<int64_t>() >= 0 && y.max().item<int64_t>() < classes), op,
              "target values must be class indices in [0, ", classes, ")");
  Tensor margins = (options.margin() - x.gather(1, y) + x).clamp_min(0);
  if (options.p() == 2) margins = margins * margins;
  // The target's own class does not count.
  margins = margins.scatter(1, y, Scalar(0));
  if (options.weight().defined()) {
    EMBER_CHECK(options.weight().dim() == 1 && options.weight().size(0) == classes, op, "weight of shape ",
                options.weight().sizes(), " must be 1-D with one value per class (", classes, ")");
    margins = margins * options.weight().index_select(0, y.squeeze(1)).unsqueeze(1);
  }
  Tensor loss = margins.sum({1}) / classes;
  return reduce(batched ? loss : loss.squeeze(0), options.reduction(), op);
}

Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target,
                              const MultilabelMarginLossFuncOptions& options) {
  const char* op = "multilabel_margin_loss";
  EMBER_CHECK(input.dim() <= 2 && target.sizes() == input.sizes(), op,
              "expected input [N, C] or [C] and a target of the same shape, got ", input.sizes(), " and ",
              target.sizes());
  EMBER_CHECK(is_integral(target.scalar_type()), op, "target must hold class indices (an integer tensor), got ",
              dtype_name(target.scalar_type()));
  const bool batched = input.dim() == 2;
  Tensor x = input.dim() == 0 ? input.reshape({1, 1}) : batched ? input : input.unsqueeze(0);
  Tensor t = target.reshape(x.sizes()).to(kInt64);
  const int64_t classes = x.size(1);
  EMBER_CHECK(t.numel() == 0 || (t.min().item<int64_t>() >= -1 && t.max().item<int64_t>() < classes), op,
              "target values must be class indices in [0, ", classes, ") or -1");
  // The targets of a row are its entries before the first -1.
  Tensor valid = (t != -1).to(kInt64).cumprod(1);
  Tensor safe = where(valid.to(kBool), t, zeros({}, kInt64));
  Tensor is_target = zeros(x.sizes(), kInt64).scatter_add(1, safe, valid) > 0;
  Tensor target_scores = x.gather(1, safe);  // [N, C]: x at each target slot
  // hinge[n, j, k] = max(0, 1 - (x[n, target j] - x[n, k])) over valid slots j and classes k
  // that are not targets.
  Tensor hinge = (1 - target_scores.unsqueeze(2) + x.unsqueeze(1)).clamp_min(0);
  Tensor keep = valid.to(x.scalar_type()).unsqueeze(2) * is_target.logical_not().to(x.scalar_type()).unsqueeze(1);
  Tensor loss = (hinge * keep).sum({1, 2}) / classes;
  return reduce(batched ? loss : loss.squeeze(0), options.reduction(), op);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& options) {
  const char* op = "poisson_nll_loss";
  Tensor loss = options.log_input() ? input.exp() - target * input : input - target * (input + options.eps()).log();
  if (options.full()) {
    // Stirling's approximation of log(t!), only where t > 1.
    Tensor safe = where(target > 1, target, ones({}, target.scalar_type()));
    Tensor stirling = safe * safe.log() - safe + 0.5 * (2 * M_PI * safe).log();
    loss = loss + where(target > 1, stirling, zeros({}, stirling.scalar_type()));
  }
  return reduce(loss, options.reduction(), op);
}

}  // namespace ember::nn::functional

namespace ember {
namespace {

Reduction reduction_from_int(int64_t reduction, const char* op) {
  EMBER_CHECK(reduction >= 0 && reduction <= 2, op, "reduction must be 0 (none), 1 (mean) or 2 (sum), got ",
              reduction);
  return reduction == 0 ? Reduction::None : reduction == 1 ? Reduction::Mean : Reduction::Sum;
}

}  // namespace

namespace F = nn::functional;

Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const Tensor& weight, int64_t reduction) {
  return binary_cross_entropy(self, target, weight, reduction_from_int(reduction, "binary_cross_entropy"));
}
Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const Tensor& weight, Reduction reduction) {
  // ATen's kernel works on the squeezed input and target, so their sizes may differ by dims of
  // size 1 (an [N, 1] input with an [N] target); F::binary_cross_entropy requires equal sizes.
  Tensor aligned = target;
  if (self.defined() && target.defined() && target.sizes() != self.sizes()) {
    EMBER_CHECK(self.squeeze().sizes() == target.squeeze().sizes(), "binary_cross_entropy", "target size ",
                target.sizes(), " must be the same as input size ", self.sizes(), " up to dims of size 1");
    aligned = target.reshape(self.sizes());
  }
  return F::binary_cross_entropy(self, aligned, F::BinaryCrossEntropyFuncOptions().weight(weight).reduction(reduction));
}
Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return mse_loss(self, target, reduction_from_int(reduction, "mse_loss"));
}
Tensor mse_loss(const Tensor& self, const Tensor& target, Reduction reduction) {
  return F::mse_loss(self, target, reduction);
}
Tensor l1_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return l1_loss(self, target, reduction_from_int(reduction, "l1_loss"));
}
Tensor l1_loss(const Tensor& self, const Tensor& target, Reduction reduction) {
  return F::l1_loss(self, target, reduction);
}
Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  return smooth_l1_loss(self, target, reduction_from_int(reduction, "smooth_l1_loss"), beta);
}
Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, Reduction reduction, double beta) {
  return F::smooth_l1_loss(self, target, F::SmoothL1LossFuncOptions(reduction).beta(beta));
}
Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  return huber_loss(self, target, reduction_from_int(reduction, "huber_loss"), delta);
}
Tensor huber_loss(const Tensor& self, const Tensor& target, Reduction reduction, double delta) {
  return F::huber_loss(self, target, F::HuberLossFuncOptions(reduction).delta(delta));
}
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           int64_t reduction) {
  return F::margin_ranking_loss(
      input1, input2, target,
      F::MarginRankingLossFuncOptions().margin(margin).reduction(reduction_from_int(reduction, "margin_ranking_loss")));
}
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, int64_t reduction) {
  return F::triplet_margin_loss(anchor, positive, negative,
                                F::TripletMarginLossFuncOptions().margin(margin).p(p).eps(eps).swap(swap).reduction(
                                    reduction_from_int(reduction, "triplet_margin_loss")));
}
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             int64_t reduction) {
  return F::cosine_embedding_loss(input1, input2, target,
                                  F::CosineEmbeddingLossFuncOptions().margin(margin).reduction(
                                      reduction_from_int(reduction, "cosine_embedding_loss")));
}
Tensor nll_loss(const Tensor& self, const Tensor& target, const Tensor& weight, int64_t reduction,
                int64_t ignore_index) {
  return nll_loss(self, target, weight, reduction_from_int(reduction, "nll_loss"), ignore_index);
}
Tensor nll_loss(const Tensor& self, const Tensor& target, const Tensor& weight, Reduction reduction,
                int64_t ignore_index) {
  return F::nll_loss(self, target, nn::NLLLossOptions().weight(weight).reduction(reduction).ignore_index(ignore_index));
}
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, int64_t reduction, bool zero_infinity) {
  return F::ctc_loss(log_probs, targets, input_lengths, target_lengths,
                     F::CTCLossFuncOptions().blank(blank).zero_infinity(zero_infinity).reduction(
                         reduction_from_int(reduction, "ctc_loss")));
}
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths, IntArrayRef target_lengths,
                int64_t blank, int64_t reduction, bool zero_infinity) {
  // Unbatched inputs take one length each, as 0-dim tensors.
  auto lengths = [&](IntArrayRef values) {
    Tensor t = tensor(values.vec());
    return log_probs.dim() == 2 && values.size() == 1 ? t.reshape({}) : t;
  };
  return ctc_loss(log_probs, targets, lengths(input_lengths), lengths(target_lengths), blank, reduction, zero_infinity);
}

}  // namespace ember
