// `ember bench gemm`: ember::matmul on every GEMM backend that can run each product, and on
// the autotuned choice ("auto"), side by side in one run. Rows cover square products, the
// default GPT's products (forward and both backward forms) and a decoding product; bf16/f16
// rows also carry their speed-up over the float32 product of the same shape, timed in the same
// turns. The interleaved rows run a product and an elementwise op in turn, as a training step
// does, to show whether a backend's threads get in the way of the pool's (Note [oneDNN
// threads]). Where a Python with PyTorch is found, each float32 and bfloat16 row runs in three
// turns of ember's repetitions and torch.matmul's (bench/peers/gemm_torch.py): torch_gflops,
// auto_back_to_back_gflops and auto_vs_torch.
#include <algorithm>
#include <chrono>
#include <map>
#include <vector>

#include "bench.h"
#include "ember/backends.h"
#include "ember/ember.h"

namespace ember::bench {
namespace {

struct Shape {
  int64_t m, k, n;
  bool trans_a = false, trans_b = false;
};

const char* dtype_tag(ScalarType dtype) {
  return dtype == kFloat32 ? "f32" : dtype == kBFloat16 ? "bf16" : "f16";
}

std::string shape_name(ScalarType dtype, const Shape& s) {
  return std::string("matmul_") + dtype_tag(dtype) + "_" + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
         std::to_string(s.n) + (s.trans_a ? "_ta" : "") + (s.trans_b ? "_tb" : "");
}

// op(A) [m, k] and op(B) [k, n] as views of their stored (possibly transposed) matrices.
std::pair<Tensor, Tensor> operands(ScalarType dtype, const Shape& s) {
  Tensor a = s.trans_a ? randn({s.k, s.m}).to(dtype).mT() : randn({s.m, s.k}).to(dtype);
  Tensor b = s.trans_b ? randn({s.n, s.k}).to(dtype).mT() : randn({s.k, s.n}).to(dtype);
  return {a, b};
}

// Every backend's name, then "auto".
std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const backends::GemmBackendInfo& info : backends::gemm_backends()) names.push_back(info.name);
  return names;
}

// Each side's products run back to back for this long before the timed ones.
constexpr double kWarmUpMs = 20.0;

// torch.matmul's rate on one product (`reps` runs, their median), in a process of its own
// (its start-up untimed); 0 where the peer gives none.
double torch_matmul_gflops(const std::string& python, const std::string& name, const std::string& product, int reps) {
  const std::string arguments = "--reps " + std::to_string(reps) + " --warm-up-ms " + std::to_string(kWarmUpMs) +
                                " --product " + product;
  for (const nlohmann::json& peer : run_peer(python, "gemm_torch.py", arguments))
    if (peer.contains("name") && peer["name"] == name) return peer.at("gflops").get<double>();
  return 0.0;
}

nlohmann::json run(const Options& options) {
  manual_seed(0);
  nlohmann::json results = nlohmann::json::array();
  const std::string starting_backend = backends::gemm_backend();
  auto reps_for = [&](const Shape& s) {
    const double flops = 2.0 * s.m * s.k * s.n;
    const int reps = flops > 1e10 ? 5 : flops > 1e9 ? 9 : flops > 1e7 ? 21 : 51;
    return options.quick ? std::max(1, reps / 3) : reps;
  };
  const std::string python = torch_python();
  if (python.empty()) note("no Python with PyTorch found (EMBER_TORCH_PYTHON, python3): no torch columns");
  auto row = [&](ScalarType dtype, const Shape& s) {
    if (shape_name(dtype, s).find(options.only) == std::string::npos) return;
    const int reps = reps_for(s);
    const double gflop = 2.0 * s.m * s.k * s.n / 1e9;
    auto [a, b] = operands(dtype, s);
    nlohmann::json r = {{"name", shape_name(dtype, s)}};
    std::vector<std::string> timed;
    for (const std::string& backend : backend_names())
      if (backends::gemm_backend_can_run(backend, dtype, s.m, s.k, s.n, s.trans_a, s.trans_b)) timed.push_back(backend);
    timed.push_back("auto");
    backends::set_gemm_backend("auto");
    r["auto_backend"] = backends::gemm_backend_for(dtype, s.m, s.k, s.n, s.trans_a, s.trans_b);  // tuned here
    // One run of each in turn per repetition, so that load on a shared machine hits all
    // alike; each backend's median. A bf16/f16 row also times the float32 product of the same
    // shape (auto) in the same turns, for speedup_vs_f32.
    std::map<std::string, std::vector<double>> ms;
    const std::string kFloat32Turn = "float32 auto";
    const bool low_precision = dtype != kFloat32;
    auto [a32, b32] = low_precision ? operands(kFloat32, s) : std::pair<Tensor, Tensor>{};
    auto timed_ms = [](const Tensor& x, const Tensor& y) {
      const auto start = std::chrono::steady_clock::now();
      Tensor c = matmul(x, y);
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };
    // With PyTorch (not float16: its CPU float16 matmul took minutes for 1024^3 on CPUs without
    // AVX512-FP16), three turns of ember's repetitions each followed by torch.matmul's. The
    // peer runs its product back to back, operands and threads warm, while the rotation above
    // leaves ember's caches to the other backends' products (0.7-0.9x the rate of the same
    // products back to back at the GPT's shapes): so each turn also times auto's product back
    // to back (auto_back_to_back_gflops), and auto_vs_torch is the median of the turns' ratios
    // of those two, torch_gflops of torch's turns.
    const bool with_torch = !python.empty() && dtype != kFloat16;
    const int turns = with_torch ? 3 : 1, turn_reps = (reps + turns - 1) / turns;
    const std::string product = r["name"].get<std::string>() + "," + dtype_name(dtype) + "," + std::to_string(s.m) +
                                "," + std::to_string(s.k) + "," + std::to_string(s.n) + "," +
                                (s.trans_a ? "1" : "0") + "," + (s.trans_b ? "1" : "0");
    std::vector<double> torch_turns, turn_ratios, back_to_back_ms;
    for (int turn = 0; turn < turns; ++turn) {
      std::vector<double> auto_ms;
      for (int rep = turn == 0 ? -1 : 0; rep < turn_reps; ++rep) {  // rep -1 warms up
        for (const std::string& backend : timed) {
          backends::set_gemm_backend(backend);
          const double elapsed = timed_ms(a, b);
          if (rep < 0) continue;
          ms[backend].push_back(elapsed);
          if (backend == "auto") auto_ms.push_back(elapsed);
        }
        if (low_precision) {
          backends::set_gemm_backend("auto");
          const double elapsed = timed_ms(a32, b32);
          if (rep >= 0) ms[kFloat32Turn].push_back(elapsed);
        }
      }
      const double torch_gflops = with_torch ? torch_matmul_gflops(python, r["name"], product, turn_reps) : 0.0;
      if (torch_gflops > 0) {
        backends::set_gemm_backend("auto");
        // Warmed up for kWarmUpMs first, as the peer is: the first AMX products after the
        // peer's process ran at a third to half the rate for about a millisecond.
        for (double warm = 0; warm < kWarmUpMs;) warm += timed_ms(a, b);
        std::vector<double> turn_ms;
        for (int rep = 0; rep < turn_reps; ++rep) turn_ms.push_back(timed_ms(a, b));
        back_to_back_ms.insert(back_to_back_ms.end(), turn_ms.begin(), turn_ms.end());
        torch_turns.push_back(torch_gflops);
        turn_ratios.push_back(gflop / median(turn_ms) * 1e3 / torch_gflops);
      }
    }
    double best = 0, float32_gflops = 0;
    for (auto& [backend, times] : ms) {
      std::sort(times.begin(), times.end());
      const double gflops = gflop / times[times.size() / 2] * 1e3;
      if (backend == kFloat32Turn) {
        float32_gflops = gflops;
        continue;
      }
      r[backend + "_gflops"] = gflops;
      if (backend != "auto") best = std::max(best, gflops);
    }
    const double auto_gflops = r["auto_gflops"].get<double>();
    r["auto_vs_best"] = auto_gflops / best;
    if (low_precision) {
      r["f32_auto_gflops"] = float32_gflops;
      r["speedup_vs_f32"] = auto_gflops / float32_gflops;
    }
    if (!torch_turns.empty()) {
      r["auto_back_to_back_gflops"] = gflop / median(back_to_back_ms) * 1e3;
      r["torch_gflops"] = median(torch_turns);
      r["auto_vs_torch"] = median(turn_ratios);
    }
    note(r.dump());
    results.push_back(r);
  };
  // The default GPT's products at 16 x 128 tokens: wq/wk/wv/wo (192 -> 576 / 192), w1/w3 and
  // w2 of SwiGLU (192 <-> 512); forward x @ W^T, then grad_x = dy @ W and grad_W = dy^T @ x.
  std::vector<Shape> gpt_shapes;
  for (auto [in, out] : {std::pair<int64_t, int64_t>{192, 576}, {192, 512}, {512, 192}}) {
    gpt_shapes.push_back({2048, in, out, false, true});
    gpt_shapes.push_back({2048, out, in});
    gpt_shapes.push_back({out, 2048, in, true, false});
  }
  const std::vector<Shape> square = {{512, 512, 512}, {1024, 1024, 1024}, {2048, 2048, 2048}};
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    for (const Shape& s : square) row(dtype, s);
    for (const Shape& s : gpt_shapes) row(dtype, s);
    row(dtype, {1, 2048, 2048, false, true});  // decoding one token through a linear layer
  }
  for (const Shape& s : {Shape{4096, 1024, 4096}, Shape{4096, 4096, 1024}}) row(kFloat32, s);
  for (const Shape& s : {Shape{1024, 1024, 1024}, Shape{2048, 2048, 2048}}) row(kFloat16, s);

  // A product and an elementwise op in turn (as in a training step), against each alone.
  nlohmann::json r = {{"name", "interleaved_f32_2048x192x576_tb_with_mul"}};
  if (r["name"].get<std::string>().find(options.only) == std::string::npos) {
    backends::set_gemm_backend(starting_backend);
    return results;
  }
  const Shape s{2048, 192, 576, false, true};
  auto [a, b] = operands(kFloat32, s);
  Tensor x = randn({2048, 576});
  const int reps = options.quick ? 10 : 40;
  for (const std::string& backend : backend_names()) {
    if (!backends::gemm_backend_can_run(backend, kFloat32, s.m, s.k, s.n, s.trans_a, s.trans_b)) continue;
    backends::set_gemm_backend(backend);
    const double product_ms = time_ms([&] { Tensor c = matmul(a, b); }, reps);
    const double elementwise_ms = time_ms([&] { Tensor y = x.mul(1.5).add(x); }, reps);
    const double interleaved_ms = time_ms([&] { Tensor y = matmul(a, b).mul(1.5).add(x); }, reps);
    r[backend + "_interleaved_ms"] = interleaved_ms;
    r[backend + "_separate_ms"] = product_ms + elementwise_ms;
    r[backend + "_interleaved_vs_separate"] = interleaved_ms / (product_ms + elementwise_ms);
  }
  note(r.dump());
  results.push_back(r);
  backends::set_gemm_backend(starting_backend);
  return results;
}

Register reg("gemm", run);

}  // namespace
}  // namespace ember::bench
