// Example 1: tensors, ops and reverse-mode autograd, written as libtorch code is (with
// ember:: for torch::). Prints a few tensors, then checks a gradient against the formula.
#include <ember/ember.h>

#include <cmath>
#include <iostream>

int main() {
  ember::manual_seed(0);

  // Tensors: factories, views, broadcasting and reductions, as in PyTorch.
  ember::Tensor a = ember::arange(6, ember::kFloat32).view({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  ember::Tensor column_means = a.mean(/*dim=*/0);                    // [1.5, 2.5, 3.5]
  ember::Tensor centred = a - column_means;                           // broadcast over the rows
  std::cout << "a =\n" << a << "\ncolumn means = " << column_means << "\ncentred =\n" << centred << "\n";

  // Autograd: a leaf that requires grad records the graph of what is computed from it.
  // loss = sum(tanh(x W^T)) for x [4, 3] and W [2, 3].
  ember::Tensor x = ember::randn({4, 3});
  ember::Tensor w = ember::randn({2, 3}, ember::TensorOptions().requires_grad(true));
  ember::Tensor loss = x.matmul(w.t()).tanh().sum();
  loss.backward();
  std::cout << "loss = " << loss.item<double>() << "\nd loss / d W =\n" << w.grad() << "\n";

  // The same gradient by hand: d/dW sum(tanh(x W^T)) = (1 - tanh(x W^T)^2)^T x.
  ember::Tensor by_hand;
  {
    ember::NoGradGuard no_grad;  // plain arithmetic, no graph
    ember::Tensor t = x.matmul(w.t()).tanh();
    by_hand = (1 - t * t).t().matmul(x);
  }
  const double error = (w.grad() - by_hand).abs().max().item<double>();
  std::cout << "largest difference from the formula: " << error << "\n";
  return error < 1e-5 ? 0 : 1;
}
