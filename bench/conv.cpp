// `ember bench conv`: ResNet-style Conv2d, BatchNorm2d (training) and MaxPool2d, forward +
// backward at batch 8, against PyTorch's eager CPU ops on the same shapes when a Python with
// torch is found (bench/peers/conv_torch.py, run right after ember's rows).
#include "bench.h"
#include "ember/ember.h"

namespace ember::bench {
namespace {

constexpr int64_t kBatch = 8;

// One row: the layer, channels in/out, kernel, spatial size. kind is conv, bn or maxpool.
struct Case {
  std::string kind;
  int64_t in, out, kernel, size;

  std::string name() const {
    if (kind == "conv")
      return "conv" + std::to_string(kernel) + "x" + std::to_string(kernel) + "_c" + std::to_string(in) + "to" +
             std::to_string(out) + "_s" + std::to_string(size);
    return kind + "_c" + std::to_string(in) + "_s" + std::to_string(size);
  }
  // The peer's argument: kind,in,out,kernel,size.
  std::string spec() const {
    return kind + "," + std::to_string(in) + "," + std::to_string(out) + "," + std::to_string(kernel) + "," +
           std::to_string(size);
  }
};

// Median wall and CPU ms of forward + backward of `module` on x [8, in, size, size]
// (gradients reset each time).
StepTimes measure(const Case& c, int reps) {
  manual_seed(0);
  Tensor x = randn({kBatch, c.in, c.size, c.size}).requires_grad_();
  std::function<Tensor(const Tensor&)> forward;
  std::shared_ptr<nn::Module> module;
  if (c.kind == "conv") {
    nn::Conv2d conv(nn::Conv2dOptions(c.in, c.out, c.kernel).padding(c.kernel / 2).bias(false));
    forward = [conv](const Tensor& t) mutable { return conv(t); };
    module = conv.ptr();
  } else if (c.kind == "bn") {
    nn::BatchNorm2d bn(nn::BatchNormOptions(c.in));
    forward = [bn](const Tensor& t) mutable { return bn(t); };
    module = bn.ptr();
  } else {
    nn::MaxPool2d pool(nn::MaxPool2dOptions(3).stride(2).padding(1));
    forward = [pool](const Tensor& t) mutable { return pool(t); };
    module = pool.ptr();
  }
  return time_step(
      [&] {
        x.set_grad(Tensor());
        module->zero_grad();
        forward(x).sum().backward();
      },
      reps);
}

nlohmann::json run(const Options& options) {
  std::vector<Case> cases = {{"conv", 64, 64, 3, 56},    {"conv", 64, 256, 1, 56},  {"conv", 256, 64, 1, 56},
                             {"conv", 128, 128, 3, 28},  {"conv", 256, 256, 3, 14}, {"conv", 256, 256, 1, 14},
                             {"bn", 64, 64, 0, 56},      {"bn", 256, 256, 0, 14},   {"maxpool", 64, 64, 3, 112}};
  if (options.quick) cases = {{"conv", 64, 64, 3, 56}, {"conv", 256, 256, 1, 14}, {"bn", 64, 64, 0, 56},
                              {"maxpool", 64, 64, 3, 112}};
  const int reps = options.quick ? 2 : 5;
  nlohmann::json results = nlohmann::json::array();
  for (const Case& c : cases) {
    const StepTimes times = measure(c, reps);
    results.push_back({{"name", c.name()}, {"batch", kBatch}, {"ember_ms", times.wall_ms}, {"ember_cpu_ms", times.cpu_ms}});
    note(results.back().dump());
  }
  const std::string python = torch_python();
  if (python.empty()) {
    note("no Python with PyTorch found (EMBER_TORCH_PYTHON, python3): no torch columns");
    return results;
  }
  std::string arguments = "--reps " + std::to_string(reps) + " --batch " + std::to_string(kBatch);
  for (const Case& c : cases) arguments += " --case " + c.spec();
  const std::vector<nlohmann::json> rows = run_peer(python, "conv_torch.py", arguments);
  for (size_t i = 0; i < rows.size() && i < cases.size(); ++i) {
    const double torch_ms = rows[i].at("ms").get<double>();
    results[i]["torch_ms"] = torch_ms;
    // Above 1: ember is faster. The CPU-time ratio holds up on a loaded machine at one thread
    // (EMBER_NUM_THREADS=1; the peer runs as many threads as ember).
    results[i]["speedup_vs_torch"] = torch_ms / results[i]["ember_ms"].get<double>();
    if (rows[i].contains("cpu_ms")) {
      results[i]["torch_cpu_ms"] = rows[i].at("cpu_ms").get<double>();
      results[i]["cpu_speedup_vs_torch"] =
          rows[i].at("cpu_ms").get<double>() / results[i]["ember_cpu_ms"].get<double>();
    }
  }
  return results;
}

Register reg("conv", run);

}  // namespace
}  // namespace ember::bench
