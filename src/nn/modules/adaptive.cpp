// AdaptiveLogSoftmaxWithLoss: the head's log-softmax over shortlist + clusters, each cluster's
// own log-softmax added to its head entry.
#include "ember/nn/modules/adaptive.h"

#include <algorithm>
#include <cmath>

#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn {

AdaptiveLogSoftmaxWithLossImpl::AdaptiveLogSoftmaxWithLossImpl(AdaptiveLogSoftmaxWithLossOptions options_)
    : options(std::move(options_)) {
  reset();
}

void AdaptiveLogSoftmaxWithLossImpl::reset() {
  const char* op = "AdaptiveLogSoftmaxWithLoss";
  const auto& given = options.cutoffs();
  const int64_t n_classes = options.n_classes();
  EMBER_CHECK(std::is_sorted(given.begin(), given.end()) &&
                  std::adjacent_find(given.begin(), given.end()) == given.end(),
              op, "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, got ",
              given);
  EMBER_CHECK(!given.empty() && given.front() > 0 && given.back() <= n_classes - 1, op,
              "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each "
              "value is between 1 and n_classes-1 (",
              n_classes - 1, "), got ", given);
  cutoffs = given;
  cutoffs.push_back(n_classes);
  shortlist_size = cutoffs[0];
  n_clusters = static_cast<int64_t>(cutoffs.size()) - 1;
  head_size = shortlist_size + n_clusters;
  head = register_module("head", Linear(LinearOptions(options.in_features(), head_size).bias(options.head_bias())));
  tail = register_module("tail", ModuleList());
  for (int64_t i = 0; i < n_clusters; ++i) {
    const auto hidden = static_cast<int64_t>(
        std::floor(static_cast<double>(options.in_features()) / std::pow(options.div_value(), i + 1)));
    const int64_t out = cutoffs[i + 1] - cutoffs[i];
    tail->push_back(Sequential(Linear(LinearOptions(options.in_features(), hidden).bias(false)),
                               Linear(LinearOptions(hidden, out).bias(false))));
  }
}

void AdaptiveLogSoftmaxWithLossImpl::reset_parameters() {
  head->reset_parameters();
  for (const auto& module : tail->modules())
    if (auto linear = std::dynamic_pointer_cast<LinearImpl>(module)) linear->reset_parameters();
}

ASMoutput AdaptiveLogSoftmaxWithLossImpl::forward(const Tensor& input, const Tensor& target) {
  const char* op = "AdaptiveLogSoftmaxWithLoss";
  const bool batched = target.dim() == 1;
  EMBER_CHECK(target.dim() <= 1, op, "target should be 0-D or 1-D, got shape ", target.sizes());
  if (batched)
    EMBER_CHECK(input.dim() == 2 && input.size(0) == target.size(0), op,
                "input and target should have the same size in the batch dimension, got input ", input.sizes(),
                " and target ", target.sizes());
  else
    EMBER_CHECK(input.dim() == 1, op, "a 0-D target needs a 1-D input, got input ", input.sizes());
  const Tensor rows_in = batched ? input : input.unsqueeze(0);
  const Tensor targets = batched ? target : target.unsqueeze(0);
  const int64_t batch = targets.size(0);

  EMBER_CHECK(batch == 0 || (targets.min().item<int64_t>() >= 0 && targets.max().item<int64_t>() < options.n_classes()),
              op, "target values should be in [0, ", options.n_classes() - 1, "], but values in range [",
              targets.min().item<int64_t>(), ", ", targets.max().item<int64_t>(), "] were found");
  // Each row's entry of the head: its class in the shortlist, else its cluster's entry.
  Tensor head_index = targets;
  Tensor output = zeros({batch}, rows_in.scalar_type());
  for (int64_t i = 0; i < n_clusters; ++i) {
    const int64_t low = cutoffs[i], high = cutoffs[i + 1];
    const Tensor in_cluster = (targets >= low).logical_and(targets < high);
    const Tensor rows = in_cluster.nonzero().reshape({-1});
    if (rows.numel() == 0) continue;
    head_index = where(in_cluster, Scalar(shortlist_size + i), head_index);
    auto cluster = tail->ptr<SequentialImpl>(static_cast<size_t>(i));
    const Tensor cluster_log_prob = log_softmax(cluster->forward(rows_in.index_select(0, rows)), 1);
    const Tensor relative = targets.index_select(0, rows) - low;
    output = output.scatter_add(0, rows, cluster_log_prob.gather(1, relative.unsqueeze(1)).squeeze(1));
  }
  const Tensor head_log_prob = log_softmax(head(rows_in), 1);
  output = output + head_log_prob.gather(1, head_index.unsqueeze(1)).squeeze(1);
  const double loss = (-output).mean().item<double>();
  return ASMoutput(batched ? output : output.squeeze(0), loss);
}

Tensor AdaptiveLogSoftmaxWithLossImpl::full_log_prob(const Tensor& input, const Tensor& head_output) {
  const Tensor head_log_prob = log_softmax(head_output, 1);
  std::vector<Tensor> parts{head_log_prob.narrow(1, 0, shortlist_size)};
  for (int64_t i = 0; i < n_clusters; ++i) {
    auto cluster = tail->ptr<SequentialImpl>(static_cast<size_t>(i));
    const Tensor cluster_log_prob = log_softmax(cluster->forward(input), 1);
    parts.push_back(cluster_log_prob + head_log_prob.narrow(1, shortlist_size + i, 1));
  }
  return cat(parts, 1);
}

Tensor AdaptiveLogSoftmaxWithLossImpl::log_prob(const Tensor& input) { return full_log_prob(input, head(input)); }

Tensor AdaptiveLogSoftmaxWithLossImpl::predict(const Tensor& input) {
  const Tensor head_output = head(input);
  Tensor output = head_output.argmax(1);
  const Tensor outside = output >= shortlist_size;
  if (!outside.any().item<bool>()) return output;
  const Tensor rows = outside.nonzero().reshape({-1});
  const Tensor best = full_log_prob(input.index_select(0, rows), head_output.index_select(0, rows)).argmax(1);
  return output.scatter(0, rows, best);
}

void AdaptiveLogSoftmaxWithLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::AdaptiveLogSoftmaxWithLoss";
}

}  // namespace ember::nn
