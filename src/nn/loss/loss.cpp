// Loss functions with PyTorch's exact formulas (aten/src/ATen/native/Loss*.cpp), composed
// from ember ops so autograd comes for free.
#include <cmath>
#include <limits>

#include "core/record_op.h"
#include "ember/functions.h"
#include "ember/graph.h"
#include "ember/nn/functional.h"

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

// softplus(-x) = -log(sigmoid(x)), stable for any x; minimum's tie rule gives the exact
// gradient (-1/2) at x = 0.
Tensor softplus_of_negative(const Tensor& x) {
  return (-x.abs()).exp().log1p() - x.minimum(zeros({}, x.scalar_type()));
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
  Tensor softplus = softplus_of_negative(input);
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

}  // namespace ember::nn::functional
