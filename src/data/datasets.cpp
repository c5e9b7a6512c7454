// TensorDataset (datasets.h).
#include "ember/data/datasets.h"

#include "ember/error.h"

namespace ember::data::datasets {

TensorDataset::TensorDataset(Tensor tensor) : tensor(std::move(tensor)) {
  EMBER_CHECK(this->tensor.defined() && this->tensor.dim() >= 1, "TensorDataset",
              "expected a tensor with at least one dimension, got ",
              this->tensor.defined() ? this->tensor.dim() : 0, " dimensions");
}

TensorExample TensorDataset::get(size_t index) {
  EMBER_CHECK(index < static_cast<size_t>(tensor.size(0)), "TensorDataset", "index ", index,
              " is out of range for ", tensor.size(0), " examples");
  return tensor[static_cast<int64_t>(index)];
}

std::optional<size_t> TensorDataset::size() const { return static_cast<size_t>(tensor.size(0)); }

}  // namespace ember::data::datasets
