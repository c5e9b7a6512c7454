#include "bench.h"

#include <algorithm>
#include <iostream>
#include <vector>

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

void note(const std::string& line) { std::cerr << line << std::endl; }

}  // namespace ember::bench
