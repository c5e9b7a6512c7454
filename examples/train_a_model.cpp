// Example 2: a small model trained with nn and optim. A two-layer MLP (a module written as
// in libtorch) learns y = sin(x) on [-3, 3] with AdamW; the program fails unless the loss
// falls at least tenfold.
#include <ember/ember.h>

#include <iostream>

struct SineNetImpl : ember::nn::Module {
  explicit SineNetImpl(int64_t hidden) {
    fc1 = register_module("fc1", ember::nn::Linear(1, hidden));
    fc2 = register_module("fc2", ember::nn::Linear(hidden, 1));
  }

  // x: (N, 1) -> (N, 1)
  ember::Tensor forward(ember::Tensor x) { return fc2->forward(ember::tanh(fc1->forward(x))); }

  ember::nn::Linear fc1{nullptr}, fc2{nullptr};
};
EMBER_MODULE(SineNet);  // SineNet: the holder, as TORCH_MODULE makes one

int main() {
  ember::manual_seed(0);
  SineNet net(32);
  ember::optim::AdamW optimizer(net->parameters(), ember::optim::AdamWOptions(1e-2));

  const ember::Tensor x = ember::linspace(-3, 3, 128).unsqueeze(1);  // (128, 1)
  const ember::Tensor y = x.sin();

  double first_loss = 0, loss_value = 0;
  for (int step = 0; step <= 500; ++step) {
    optimizer.zero_grad();
    ember::Tensor loss = ember::nn::functional::mse_loss(net(x), y);
    loss.backward();
    optimizer.step();
    loss_value = loss.item<double>();
    if (step == 0) first_loss = loss_value;
    if (step % 100 == 0) std::cout << "step " << step << "  mse " << loss_value << "\n";
  }
  for (const auto& item : net->named_parameters()) std::cout << item.key() << ": " << item.value().numel() << " values\n";
  std::cout << "mse fell from " << first_loss << " to " << loss_value << "\n";
  return loss_value < first_loss / 10 ? 0 : 1;
}
