// Finite-difference gradient check in float64.
#include <cmath>
#include <sstream>

#include "autograd/function.h"
#include "ember/functions.h"

namespace ember::autograd {

std::string gradcheck_report(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                             const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    EMBER_CHECK(inputs[i].scalar_type() == kFloat64, "gradcheck", "input ", i, " must be float64, got ",
                dtype_name(inputs[i].scalar_type()));
  }
  // Reduce the output with fixed random weights so every output element is checked.
  Tensor probe;
  {
    NoGradGuard guard;
    Tensor out = fn(inputs);
    probe = rand(out.sizes(), kFloat64) + 0.5;
  }
  auto objective = [&](const std::vector<Tensor>& in) { return (fn(in).to(kFloat64) * probe).sum(); };

  std::vector<Tensor> differentiable;
  std::vector<size_t> which;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined() && inputs[i].requires_grad()) {
      differentiable.push_back(inputs[i]);
      which.push_back(i);
    }
  }
  if (differentiable.empty()) return "";
  Tensor value = objective(inputs);
  std::vector<Tensor> analytical = grad({value}, differentiable, {}, std::nullopt, false, true);

  for (size_t j = 0; j < differentiable.size(); ++j) {
    Tensor x = differentiable[j];
    Tensor expected = analytical[j].defined() ? analytical[j].contiguous() : zeros_like(x);
    const double* a = expected.data_ptr<double>();
    std::vector<int64_t> index(x.dim(), 0);
    for (int64_t n = 0; n < x.numel(); ++n) {
      int64_t offset = x.storage_offset();
      for (int64_t d = 0; d < x.dim(); ++d) offset += index[d] * x.stride(d);
      double* element = static_cast<double*>(x.storage().data()) + offset;
      const double original = *element;
      double plus, minus;
      {
        NoGradGuard guard;
        *element = original + options.eps;
        plus = objective(inputs).item<double>();
        *element = original - options.eps;
        minus = objective(inputs).item<double>();
        *element = original;
      }
      const double numerical = (plus - minus) / (2 * options.eps);
      const double analytic = a[n];
      if (!(std::abs(analytic - numerical) <= options.atol + options.rtol * std::abs(numerical))) {
        std::ostringstream out;
        out << "gradient mismatch for input " << which[j] << " (shape " << IntArrayRef(x.sizes()) << ") at flat index "
            << n << ": analytical " << analytic << ", numerical " << numerical;
        return out.str();
      }
      for (int64_t d = x.dim() - 1; d >= 0; --d) {
        if (++index[d] < x.size(d)) break;
        index[d] = 0;
      }
    }
  }
  return "";
}

bool gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
               const GradcheckOptions& options) {
  return gradcheck_report(fn, inputs, options).empty();
}

}  // namespace ember::autograd
