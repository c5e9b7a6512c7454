// `ember bench gemm`: ember::matmul against the raw BLAS sgemm on the same shapes, side by
// side. bf16/f16 rows compare with the float32 BLAS figure.
#include "bench.h"
#include "ember/ember.h"

namespace ember::bench {
namespace {

struct Shape {
  int64_t m, k, n;
};

std::string shape_name(const char* dtype, const Shape& s) {
  return std::string("matmul_") + dtype + "_" + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" +
         std::to_string(s.n);
}

nlohmann::json run(const Options& options) {
  manual_seed(0);
  nlohmann::json results = nlohmann::json::array();
  auto reps_for = [&](const Shape& s) {
    double flops = 2.0 * s.m * s.k * s.n;
    int reps = flops > 1e10 ? 3 : flops > 1e9 ? 5 : 10;
    return options.quick ? std::max(1, reps / 3) : reps;
  };
  auto row = [&](const char* dtype_tag, ScalarType dtype, const Shape& s) {
    const int reps = reps_for(s);
    const double gflop = 2.0 * s.m * s.k * s.n / 1e9;
    Tensor a = randn({s.m, s.k}).to(dtype), b = randn({s.k, s.n}).to(dtype);
    double ember_ms = time_ms([&] { Tensor c = matmul(a, b); }, reps);
    double blas_ms = blas_sgemm_ms(s.m, s.k, s.n, reps);
    nlohmann::json r = {{"name", shape_name(dtype_tag, s)},
                        {"ember_ms", ember_ms},
                        {"blas_ms", blas_ms},
                        {"ember_gflops", gflop / ember_ms * 1e3},
                        {"blas_gflops", gflop / blas_ms * 1e3}};
    r["ratio"] = r["ember_gflops"].get<double>() / r["blas_gflops"].get<double>();
    note(r.dump());
    results.push_back(r);
  };
  for (Shape s : {Shape{512, 512, 512}, Shape{1024, 1024, 1024}, Shape{2048, 2048, 2048}, Shape{4096, 1024, 4096},
                  Shape{4096, 4096, 1024}})
    row("f32", kFloat32, s);
  for (Shape s : {Shape{1024, 1024, 1024}, Shape{2048, 2048, 2048}}) {
    row("bf16", kBFloat16, s);
    row("f16", kFloat16, s);
  }
  return results;
}

Register reg("gemm", run);

}  // namespace
}  // namespace ember::bench
