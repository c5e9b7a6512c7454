// `ember bench conv`: ResNet-style Conv2d, BatchNorm2d (training) and pooling, forward +
// backward at batch 8, against PyTorch's eager CPU ops on the same shapes when a Python with
// torch is found (bench/peers/conv_torch.py, run right after ember's rows, in rounds).
#include <algorithm>
#include <string>
#include <vector>

#include "bench.h"
#include "ember/backends.h"
#include "ember/ember.h"

namespace ember::bench {
namespace {

constexpr int64_t kBatch = 8;

// The convolution algorithm a row asks for, while it lives (then the one before).
struct ConvAlgorithm {
  std::string before = backends::conv_algorithm();
  explicit ConvAlgorithm(bool winograd) { backends::set_conv_algorithm(winograd ? "winograd" : "direct"); }
  ~ConvAlgorithm() { backends::set_conv_algorithm(before); }
};

// One row: the layer, channels in/out, kernel, spatial size. kind is conv, bn, maxpool,
// avgpool (3x3, stride 2, padding 1, as the max pooling) or adaptiveavgpool (to 1x1, a
// classifier's head).
struct Case {
  std::string kind;
  int64_t in, out, kernel, size;
  bool winograd = false;  // ember on backends::set_conv_algorithm("winograd"); the peer as always
  bool bf16 = false;      // module and input in bfloat16, on both sides

  std::string name() const {
    if (kind == "conv")
      return "conv" + std::to_string(kernel) + "x" + std::to_string(kernel) + "_c" + std::to_string(in) + "to" +
             std::to_string(out) + "_s" + std::to_string(size) + (winograd ? "_winograd" : "") + (bf16 ? "_bf16" : "");
    return kind + "_c" + std::to_string(in) + "_s" + std::to_string(size);
  }
  // What ember's convolution runs for this row (backends::conv_kernels_for).
  std::string kernels() const {
    const ConvAlgorithm algorithm(winograd);
    return backends::conv_kernels_for({kBatch, in, size, size}, {out, in, kernel, kernel}, {1}, {kernel / 2}, {1}, 1,
                                      bf16 ? kBFloat16 : kFloat32);
  }
  // The peer's argument: kind,in,out,kernel,size[,bf16].
  std::string spec() const {
    return kind + "," + std::to_string(in) + "," + std::to_string(out) + "," + std::to_string(kernel) + "," +
           std::to_string(size) + (bf16 ? ",bf16" : "");
  }
};

// Median wall and CPU ms of forward + backward of `module` on x [8, in, size, size]
// (gradients reset each time).
StepTimes measure(const Case& c, int reps) {
  const ConvAlgorithm algorithm(c.winograd);
  manual_seed(0);
  Tensor x = randn({kBatch, c.in, c.size, c.size}).to(c.bf16 ? kBFloat16 : kFloat32).requires_grad_();
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
  } else if (c.kind == "avgpool") {
    nn::AvgPool2d pool(nn::AvgPool2dOptions(3).stride(2).padding(1));
    forward = [pool](const Tensor& t) mutable { return pool(t); };
    module = pool.ptr();
  } else if (c.kind == "adaptiveavgpool") {
    nn::AdaptiveAvgPool2d pool(nn::AdaptiveAvgPool2dOptions(1));
    forward = [pool](const Tensor& t) mutable { return pool(t); };
    module = pool.ptr();
  } else {
    nn::MaxPool2d pool(nn::MaxPool2dOptions(3).stride(2).padding(1));
    forward = [pool](const Tensor& t) mutable { return pool(t); };
    module = pool.ptr();
  }
  if (c.bf16) module->to(kBFloat16);
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
                             {"bn", 64, 64, 0, 56},      {"bn", 256, 256, 0, 14},   {"maxpool", 64, 64, 3, 112},
                             {"avgpool", 64, 64, 3, 112}, {"adaptiveavgpool", 512, 512, 0, 7},
                             // The 3x3 rows again on oneDNN's Winograd kernels (opt-in: Note [Winograd convolution]).
                             {"conv", 64, 64, 3, 56, true}, {"conv", 128, 128, 3, 28, true},
                             {"conv", 256, 256, 3, 14, true},
                             // bfloat16 module and input on both sides (Note [bfloat16 convolution]).
                             {"conv", 64, 64, 3, 56, false, true}, {"conv", 128, 128, 3, 28, false, true},
                             {"conv", 256, 256, 3, 14, false, true}};
  if (options.quick) cases = {{"conv", 64, 64, 3, 56}, {"conv", 256, 256, 1, 14}, {"bn", 64, 64, 0, 56},
                              {"maxpool", 64, 64, 3, 112}};
  const int reps = options.quick ? 2 : 5;
  // Rounds of [ember's rows, then the peer's rows]; each side's row reports its fastest round.
  // On these shared machines another tenant slows whole stretches of seconds (one side's rows
  // ran 1.5x slower in one run than in the next); the fastest round is the least disturbed.
  const int rounds = options.quick ? 1 : 5;
  const std::string python = torch_python();
  if (python.empty()) note("no Python with PyTorch found (EMBER_TORCH_PYTHON, python3): no torch columns");
  std::string arguments = "--reps " + std::to_string(reps) + " --batch " + std::to_string(kBatch);
  for (const Case& c : cases) arguments += " --case " + c.spec();
  std::vector<std::vector<StepTimes>> ember_rounds(cases.size());
  std::vector<std::vector<nlohmann::json>> torch_rounds(cases.size());
  for (int round = 0; round < rounds; ++round) {
    for (size_t i = 0; i < cases.size(); ++i) ember_rounds[i].push_back(measure(cases[i], reps));
    if (python.empty()) continue;
    const std::vector<nlohmann::json> rows = run_peer(python, "conv_torch.py", arguments);
    for (size_t i = 0; i < rows.size() && i < cases.size(); ++i) torch_rounds[i].push_back(rows[i]);
  }
  auto fastest = [](std::vector<double> values) { return *std::min_element(values.begin(), values.end()); };
  nlohmann::json results = nlohmann::json::array();
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<double> ember_ms, ember_cpu_ms, torch_ms, torch_cpu_ms;
    for (const StepTimes& t : ember_rounds[i]) {
      ember_ms.push_back(t.wall_ms);
      ember_cpu_ms.push_back(t.cpu_ms);
    }
    nlohmann::json row = {{"name", cases[i].name()}, {"batch", kBatch},         {"rounds", rounds},
                          {"ember_ms", fastest(ember_ms)}, {"ember_cpu_ms", fastest(ember_cpu_ms)},
                          {"ember_ms_rounds", ember_ms}};
    for (const nlohmann::json& peer : torch_rounds[i]) {
      torch_ms.push_back(peer.at("ms").get<double>());
      if (peer.contains("cpu_ms")) torch_cpu_ms.push_back(peer.at("cpu_ms").get<double>());
    }
    if (!torch_ms.empty()) {
      row["torch_ms"] = fastest(torch_ms);
      row["torch_ms_rounds"] = torch_ms;
      // Above 1: ember is faster. The CPU-time ratio holds up on a loaded machine at one thread
      // (EMBER_NUM_THREADS=1; the peer runs as many threads as ember).
      row["speedup_vs_torch"] = fastest(torch_ms) / fastest(ember_ms);
    }
    if (!torch_cpu_ms.empty()) {
      row["torch_cpu_ms"] = fastest(torch_cpu_ms);
      row["cpu_speedup_vs_torch"] = fastest(torch_cpu_ms) / fastest(ember_cpu_ms);
    }
    if (cases[i].kind == "conv") row["ember_kernels"] = cases[i].kernels();
    note(row.dump());
    results.push_back(std::move(row));
  }
  return results;
}

Register reg("conv", run);

}  // namespace
}  // namespace ember::bench
