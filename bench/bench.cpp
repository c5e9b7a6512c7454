#include "bench.h"

#include <cblas.h>

#include <algorithm>
#include <iostream>
#include <vector>

#include "ember/ember.h"

namespace ember::bench {

std::map<std::string, Suite>& registry() {
  static std::map<std::string, Suite> suites;
  return suites;
}

double time_ms(const std::function<void()>& fn, int reps) {
  fn();
  std::vector<double> times;
  for (int i = 0; i < std::max(reps, 1); ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double blas_sgemm_ms(int64_t m, int64_t k, int64_t n, int reps) {
  Tensor a = randn({m, k}), b = randn({k, n}), c = empty({m, n});
  // ember keeps OpenBLAS single-threaded (its pool runs the tiles); the reference gets them all.
  openblas_set_num_threads(get_num_threads());
  const double ms = time_ms(
      [&] {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                    static_cast<int>(k), 1.0f, a.data_ptr<float>(), static_cast<int>(k), b.data_ptr<float>(),
                    static_cast<int>(n), 0.0f, c.data_ptr<float>(), static_cast<int>(n));
      },
      reps);
  openblas_set_num_threads(1);
  return ms;
}

void note(const std::string& line) { std::cerr << line << std::endl; }

}  // namespace ember::bench
