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

}  // namespace ember::nn
