// `ember bench elementwise`: memory-bound ops over 2^24 float32 elements against memcpy of
// the same bytes, measured side by side. GB/s counts bytes read plus bytes written.
#include <cstring>
#include <vector>

#include "bench.h"
#include "ember/ember.h"

namespace ember::bench {
namespace {

nlohmann::json run(const Options& options) {
  const int64_t n = int64_t{1} << 24;
  const int reps = options.quick ? 5 : 20;
  manual_seed(0);
  Tensor a = randn({n}), b = randn({n});
  Tensor rows = randn({n / 1024, 1024});
  const double bytes = static_cast<double>(n) * 4;
  std::vector<char> src(static_cast<size_t>(bytes) * 2), dst(static_cast<size_t>(bytes) * 2);
  std::memset(src.data(), 1, src.size());
  std::memset(dst.data(), 0, dst.size());

  // memcpy moving `moved` bytes in total (half read, half written).
  auto memcpy_gbps = [&](double moved) {
    const size_t count = static_cast<size_t>(moved / 2);
    double ms = time_ms([&] { std::memcpy(dst.data(), src.data(), count); }, reps);
    return moved / ms / 1e6;
  };
  struct Case {
    const char* name;
    double moved;
    std::function<void()> fn;
  };
  std::vector<Case> cases = {
      {"add_f32", 3 * bytes, [&] { Tensor c = a + b; }},
      {"mul_f32", 3 * bytes, [&] { Tensor c = a * b; }},
      {"exp_f32", 2 * bytes, [&] { Tensor c = a.exp(); }},
      {"softmax_f32", 2 * bytes, [&] { Tensor c = rows.softmax(1); }},
  };
  nlohmann::json results = nlohmann::json::array();
  for (const auto& c : cases) {
    double ms = time_ms(c.fn, reps);
    double ember_gbps = c.moved / ms / 1e6;
    double copy_gbps = memcpy_gbps(c.moved);
    note(std::string(c.name) + ": " + std::to_string(ember_gbps) + " GB/s vs memcpy " + std::to_string(copy_gbps));
    results.push_back({{"name", c.name},
                       {"elements", n},
                       {"ember_ms", ms},
                       {"ember_gbps", ember_gbps},
                       {"memcpy_gbps", copy_gbps},
                       {"ratio", ember_gbps / copy_gbps}});
  }
  return results;
}

Register reg("elementwise", run);

}  // namespace
}  // namespace ember::bench
