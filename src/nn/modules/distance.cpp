// CosineSimilarity and PairwiseDistance modules.
#include "ember/nn/modules/distance.h"

#include "ember/nn/functional.h"

namespace ember::nn {

Tensor CosineSimilarityImpl::forward(const Tensor& input1, const Tensor& input2) {
  return functional::cosine_similarity(input1, input2, options);
}
void CosineSimilarityImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::CosineSimilarity(dim=" << options.dim() << ", eps=" << options.eps() << ")";
}

Tensor PairwiseDistanceImpl::forward(const Tensor& input1, const Tensor& input2) {
  return functional::pairwise_distance(input1, input2, options);
}
void PairwiseDistanceImpl::pretty_print(std::ostream& stream) const {
  stream << "ember::nn::PairwiseDistance(p=" << options.p() << ", eps=" << options.eps()
         << ", keepdim=" << (options.keepdim() ? "true" : "false") << ")";
}

}  // namespace ember::nn
