// Loss modules over the functional losses.
#include "ember/nn/modules/loss.h"

#include "ember/nn/functional.h"

namespace ember::nn {

CrossEntropyLossImpl::CrossEntropyLossImpl(const CrossEntropyLossOptions& options_) : options(options_) { reset(); }
void CrossEntropyLossImpl::reset() {
  weight = register_buffer("weight", options.weight());
}
void CrossEntropyLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::CrossEntropyLoss()";
}
Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::cross_entropy(input, target, CrossEntropyFuncOptions(options).weight(weight));
}

NLLLossImpl::NLLLossImpl(const NLLLossOptions& options_) : options(options_) { reset(); }
void NLLLossImpl::reset() {
  weight = register_buffer("weight", options.weight());
}
void NLLLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::NLLLoss()";
}
Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::nll_loss(input, target, NLLLossFuncOptions(options).weight(weight));
}

MSELossImpl::MSELossImpl(const MSELossOptions& options_) : options(options_) {}
void MSELossImpl::reset() {}
void MSELossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::MSELoss()";
}
Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::mse_loss(input, target, options);
}

L1LossImpl::L1LossImpl(const L1LossOptions& options_) : options(options_) {}
void L1LossImpl::reset() {}
void L1LossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::L1Loss()";
}
Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::l1_loss(input, target, options);
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options_) : options(options_) { reset(); }
void BCEWithLogitsLossImpl::reset() {
  weight = register_buffer("weight", options.weight());
  pos_weight = register_buffer("pos_weight", options.pos_weight());
}
void BCEWithLogitsLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::BCEWithLogitsLoss()";
}
Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::binary_cross_entropy_with_logits(
      input, target, BinaryCrossEntropyWithLogitsFuncOptions(options).weight(weight).pos_weight(pos_weight));
}

KLDivLossImpl::KLDivLossImpl(const KLDivLossOptions& options_) : options(options_) {}
void KLDivLossImpl::reset() {}
void KLDivLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::KLDivLoss()";
}
Tensor KLDivLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::kl_div(input, target, options);
}

BCELossImpl::BCELossImpl(const BCELossOptions& options_) : options(options_) { reset(); }
void BCELossImpl::reset() {
  weight = register_buffer("weight", options.weight());
}
void BCELossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::BCELoss()";
}
Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::binary_cross_entropy(input, target, BinaryCrossEntropyFuncOptions(options).weight(weight));
}

SmoothL1LossImpl::SmoothL1LossImpl(const SmoothL1LossOptions& options_) : options(options_) {}
void SmoothL1LossImpl::reset() {}
void SmoothL1LossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::SmoothL1Loss";
}
Tensor SmoothL1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::smooth_l1_loss(input, target, options);
}

HuberLossImpl::HuberLossImpl(const HuberLossOptions& options_) : options(options_) {}
void HuberLossImpl::reset() {}
void HuberLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::HuberLoss()";
}
Tensor HuberLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::huber_loss(input, target, options);
}

MarginRankingLossImpl::MarginRankingLossImpl(const MarginRankingLossOptions& options_) : options(options_) {}
void MarginRankingLossImpl::reset() {}
void MarginRankingLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::MarginRankingLoss()";
}
Tensor MarginRankingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return functional::margin_ranking_loss(input1, input2, target, options);
}

TripletMarginLossImpl::TripletMarginLossImpl(const TripletMarginLossOptions& options_) : options(options_) {}
void TripletMarginLossImpl::reset() {}
void TripletMarginLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::TripletMarginLoss(margin=" << options.margin() << ", p=" << options.p() << ", eps=" << options.eps() << ", swap=" << (options.swap() ? "true" : "false") << ")";
}
Tensor TripletMarginLossImpl::forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) {
  return functional::triplet_margin_loss(anchor, positive, negative, options);
}

CosineEmbeddingLossImpl::CosineEmbeddingLossImpl(const CosineEmbeddingLossOptions& options_) : options(options_) {}
void CosineEmbeddingLossImpl::reset() {}
void CosineEmbeddingLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::CosineEmbeddingLoss(margin=" << options.margin() << ")";
}
Tensor CosineEmbeddingLossImpl::forward(const Tensor& input1, const Tensor& input2, const Tensor& target) {
  return functional::cosine_embedding_loss(input1, input2, target, options);
}

CTCLossImpl::CTCLossImpl(const CTCLossOptions& options_) : options(options_) {}
void CTCLossImpl::reset() {}
void CTCLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::CTCLoss()";
}
Tensor CTCLossImpl::forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                            const Tensor& target_lengths) {
  return functional::ctc_loss(log_probs, targets, input_lengths, target_lengths, options);
}

Tensor HingeEmbeddingLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::hinge_embedding_loss(input, target, options);
}
void HingeEmbeddingLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::HingeEmbeddingLoss(margin=" << options.margin() << ")";
}

MultiMarginLossImpl::MultiMarginLossImpl(const MultiMarginLossOptions& options_) : options(options_) {
  EMBER_CHECK(options.p() == 1 || options.p() == 2, "MultiMarginLoss", "only p == 1 and p == 2 supported, got ",
              options.p());
  EMBER_CHECK(!options.weight().defined() || options.weight().dim() == 1, "MultiMarginLoss",
              "weight must be 1-D, got shape ", options.weight().sizes());
  weight = register_buffer("weight", options.weight());
}
Tensor MultiMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::multi_margin_loss(input, target, MultiMarginLossFuncOptions(options).weight(weight));
}
void MultiMarginLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::MultiMarginLoss(p=" << options.p() << ", margin=" << options.margin()
         << ", weight=" << (options.weight().defined() ? "<tensor>" : "{}") << ")";
}

Tensor MultiLabelMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::multilabel_margin_loss(input, target, options);
}
void MultiLabelMarginLossImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::MultiLabelMarginLoss()"; }

Tensor SoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::soft_margin_loss(input, target, options);
}
void SoftMarginLossImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::SoftMarginLoss()"; }

MultiLabelSoftMarginLossImpl::MultiLabelSoftMarginLossImpl(const MultiLabelSoftMarginLossOptions& options_)
    : options(options_) {
  weight = register_buffer("weight", options.weight());
}
Tensor MultiLabelSoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return functional::multilabel_soft_margin_loss(input, target,
                                                 MultilabelSoftMarginLossFuncOptions(options).weight(weight));
}
void MultiLabelSoftMarginLossImpl::pretty_print(std::ostream& stream) const { stream << "ember::nn::MultiLabelSoftMarginLoss()"; }

Tensor PoissonNLLLossImpl::forward(const Tensor& log_input, const Tensor& target) {
  return functional::poisson_nll_loss(log_input, target, options);
}
void PoissonNLLLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::PoissonNLLLoss()";
}

Tensor TripletMarginWithDistanceLossImpl::forward(const Tensor& anchor, const Tensor& positive,
                                                  const Tensor& negative) {
  return functional::triplet_margin_with_distance_loss(anchor, positive, negative, options);
}
void TripletMarginWithDistanceLossImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::TripletMarginWithDistanceLoss(margin=" << options.margin()
         << ", swap=" << (options.swap() ? "true" : "false") << ")";
}

}  // namespace ember::nn
