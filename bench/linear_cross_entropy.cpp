// `ember bench linear_cross_entropy` (alias `lce`): the fused linear_cross_entropy against ember's Linear then
// CrossEntropy on the same data, forward + backward, side by side: time and the allocator's
// peak. extra_peak_ratio compares the peaks after subtracting the inputs, the weight and
// their gradients, i.e. the memory each path needs for the loss itself. With PyTorch, the
// fused step and PyTorch's alternate for three turns (one with --quick).
#include <algorithm>
#include <vector>

#include "bench.h"
#include "ember/ember.h"
#include "ember/nn/loss/linear_cross_entropy.h"

namespace ember::bench {
namespace {

namespace F = nn::functional;

struct Shape {
  int64_t tokens, hidden, classes;
};

std::string row_name(const Shape& s, ScalarType dtype) {
  return "n" + std::to_string(s.tokens) + "_h" + std::to_string(s.hidden) + "_v" + std::to_string(s.classes) +
         (dtype == kBFloat16 ? "_bf16" : "");
}

struct Measured {
  double ms = 0;
  int64_t peak_bytes = 0;
};

// Time of `step` and the allocator's peak while it runs, gradients starting unset.
Measured measure(const std::function<Tensor()>& loss_of, Tensor& x, Tensor& weight, int reps) {
  auto step = [&] {
    x.set_grad(Tensor());
    weight.set_grad(Tensor());
    loss_of().backward();
  };
  x.set_grad(Tensor());
  weight.set_grad(Tensor());
  reset_peak_memory_stats();
  Measured m;
  m.ms = time_ms(step, reps);
  m.peak_bytes = memory_stats().peak_allocated_bytes;
  return m;
}

// The row's figures; with PyTorch, `turns` turns of ember's fused step then PyTorch's (a
// separate process: it runs alone), the fused time and the ratio being the turns' medians.
nlohmann::json run_row(const Shape& s, ScalarType dtype, int turns, const std::string& python) {
  manual_seed(0);
  Tensor x = randn({s.tokens, s.hidden}).to(dtype).requires_grad_();
  Tensor weight = (randn({s.classes, s.hidden}) * 0.02).to(dtype).requires_grad_();
  Tensor target = randint(s.classes, {s.tokens});
  const int64_t resident = memory_stats().allocated_bytes;  // inputs and weight
  const int64_t gradients = static_cast<int64_t>(x.nbytes() + weight.nbytes());

  const Measured unfused = measure([&] { return F::cross_entropy(F::linear(x, weight), target); }, x, weight, 1);
  empty_cache();
  auto fused_step = [&] { return F::linear_cross_entropy(x, weight, target); };
  Measured fused = measure(fused_step, x, weight, 1);
  std::vector<double> fused_ms, torch_ms, ratios;
  const std::string arguments = std::string("--reps 1 --dtype ") + (dtype == kBFloat16 ? "bfloat16" : "float32") +
                                " --shape " + std::to_string(s.tokens) + "," + std::to_string(s.hidden) + "," +
                                std::to_string(s.classes);
  for (int turn = 0; !python.empty() && turn < turns; ++turn) {
    if (turn > 0) fused.ms = measure(fused_step, x, weight, 1).ms;
    const std::vector<nlohmann::json> rows = run_peer(python, "linear_cross_entropy_torch.py", arguments);
    if (rows.empty()) break;
    fused_ms.push_back(fused.ms);
    torch_ms.push_back(rows.front().at("ms").get<double>());
    ratios.push_back(fused.ms / torch_ms.back());
  }
  if (!fused_ms.empty()) fused.ms = median(fused_ms);

  const double base = static_cast<double>(resident + gradients);
  nlohmann::json r = {{"name", row_name(s, dtype)},
                      {"fused_ms", fused.ms},
                      {"unfused_ms", unfused.ms},
                      {"fused_peak_bytes", fused.peak_bytes},
                      {"unfused_peak_bytes", unfused.peak_bytes},
                      {"peak_ratio", static_cast<double>(unfused.peak_bytes) / static_cast<double>(fused.peak_bytes)},
                      {"extra_peak_ratio", (unfused.peak_bytes - base) / (fused.peak_bytes - base)},
                      {"time_ratio", fused.ms / unfused.ms}};
  if (!ratios.empty()) {
    r["torch_ms"] = median(torch_ms);
    r["fused_vs_torch"] = median(ratios);
    r["turns"] = static_cast<int64_t>(ratios.size());
  }
  note(r.dump());
  return r;
}

nlohmann::json run(const Options& options) {
  // --quick: the same comparison on a small shape.
  const std::vector<Shape> shapes = options.quick ? std::vector<Shape>{{1024, 256, 32000}}
                                                  : std::vector<Shape>{{4096, 1024, 128256}, {8192, 512, 32000}};
  nlohmann::json results = nlohmann::json::array();
  const std::string python = torch_python();
  if (python.empty()) note("no Python with PyTorch found (EMBER_TORCH_PYTHON, python3): no torch columns");
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    for (const Shape& s : shapes) {
      results.push_back(run_row(s, dtype, options.quick ? 1 : 3, python));
      empty_cache();
    }
  }
  return results;
}

Register reg("linear_cross_entropy", run, {"lce"});

}  // namespace
}  // namespace ember::bench
