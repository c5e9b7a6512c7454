// Models the export tests and the runtime's tests both export: the tiny GPT of
// test_support.h, a small CNN, and the forward of an LSTM or GRU as a list of outputs.
#pragma once
#include <type_traits>
#include <vector>

#include "../test_support.h"
#include "ember/ember.h"
#include "ember/models/gpt.h"

namespace ember::test {

// The suites' one tiny GPT (test_support.h).
using testutil::tiny_gpt_config;

class SmallCNNImpl : public nn::Module {
 public:
  SmallCNNImpl() {
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(1)));
    bn1 = register_module("bn1", nn::BatchNorm2d(8));
    pool1 = register_module("pool1", nn::MaxPool2d(nn::MaxPool2dOptions(2)));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(8, 6, 3).stride(2)));
    pool2 = register_module("pool2", nn::AvgPool2d(nn::AvgPool2dOptions(2).padding(1)));
    fc = register_module("fc", nn::Linear(6 * 2 * 2, 5));
  }
  // x: [N, 3, 12, 12] -> [N, 5]
  Tensor forward(const Tensor& x) {
    Tensor h = pool1->forward(bn1->forward(conv1->forward(x)).relu());  // [N, 8, 6, 6]
    h = pool2->forward(conv2->forward(h));                               // [N, 6, 2, 2]
    return fc->forward(h.flatten(1));
  }
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  nn::MaxPool2d pool1{nullptr};
  nn::AvgPool2d pool2{nullptr};
  nn::Linear fc{nullptr};
};
EMBER_MODULE(SmallCNN);

// rnn's forward on in[0] as {output, h_n} (GRU) or {output, h_n, c_n} (LSTM).
template <typename Module>
auto rnn_outputs(Module rnn) {
  return [rnn](const std::vector<Tensor>& in) mutable {
    auto result = rnn->forward(in[0]);
    std::vector<Tensor> out = {std::get<0>(result)};
    if constexpr (std::is_same_v<std::decay_t<decltype(std::get<1>(result))>, Tensor>) {
      out.push_back(std::get<1>(result));
    } else {
      out.push_back(std::get<0>(std::get<1>(result)));
      out.push_back(std::get<1>(std::get<1>(result)));
    }
    return out;
  };
}

}  // namespace ember::test
