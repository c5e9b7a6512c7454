// Uses ember the way an application would: tensors, a BLAS product, autograd and an error
// thrown across the library boundary. run.sh compares the output line by line.
#include <ember/ember.h>

#include <iostream>

int main() {
  auto a = ember::arange(6, ember::kFloat32).view({2, 3});
  auto c = ember::matmul(a, ember::ones({3, 2}));  // [[3, 3], [12, 12]]
  auto w = ember::ones({2}, ember::TensorOptions().dtype(ember::kFloat64).requires_grad(true));
  (w * w * 3).sum().backward();  // dw = 6 w
  std::cout << "matmul sum " << c.sum().item<float>() << ", grad " << w.grad()[0].item<double>() << "\n";
  try {
    ember::matmul(a, a);
  } catch (const ember::Error& e) {
    std::cout << e.what() << "\n";
  }
  return 0;
}
