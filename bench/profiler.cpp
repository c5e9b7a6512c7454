// `ember bench profiler`: the profiler's cost on the training step of `ember train`'s default
// GPT (float32): steps with the profiler off and on (shapes and memory recorded, as `ember
// train --profile` does), alternated step by step so that both see the same machine; and the
// cost of one instrumented site while the profiler is off, times the sites a step passes.
#include <algorithm>
#include <chrono>

#include "bench.h"
#include "ember/ember.h"
#include "gpt_step.h"

namespace ember::bench {
namespace {

// Nanoseconds one RecordFunction costs with the profiler off, less the loop's own cost.
double off_site_ns() {
  constexpr int64_t kSites = 20'000'000;
  volatile int64_t sink = 0;
  auto per_iteration_ns = [&](bool instrumented) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < kSites; ++i) {
      if (instrumented) {
        profiler::RecordFunction record("op", profiler::Category::Op);
        sink = sink + (record.active() ? 2 : 1);
      } else {
        sink = sink + 1;
      }
    }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / kSites;
  };
  std::vector<double> differences;
  for (int round = 0; round < 5; ++round) differences.push_back(per_iteration_ns(true) - per_iteration_ns(false));
  return std::max(0.0, median(differences));
}

nlohmann::json run(const Options& options) {
  const int warmup_steps = 3, rounds = options.quick ? 6 : 20;
  GptStep gpt(kFloat32);
  auto step = [&] { return gpt.run(); };
  for (int i = 0; i < warmup_steps; ++i) step();
  std::vector<double> off_ms, on_ms, collect_ms, events;
  for (int round = 0; round < rounds; ++round) {
    off_ms.push_back(step());
    profiler::Profile profile({.record_shapes = true, .profile_memory = true});
    on_ms.push_back(step());
    // Gathering the threads' buffers happens after the step, as at the end of a profiled window.
    const auto start = std::chrono::steady_clock::now();
    events.push_back(static_cast<double>(profile.trace().events.size() + profile.trace().memory.size()));
    collect_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  const double off = median(off_ms), on = median(on_ms), site_ns = off_site_ns();
  nlohmann::json row = {{"name", "gpt_default_f32_step"},
                        {"off_step_ms", off},
                        {"on_step_ms", on},
                        {"on_vs_off", on / off},
                        {"events_per_step", median(events)},
                        {"collect_ms", median(collect_ms)},
                        {"off_site_ns", site_ns},
                        // Every event recorded when on is a site passed when off.
                        {"off_overhead_fraction", median(events) * site_ns * 1e-6 / off},
                        {"threads", get_num_threads()}};
  note(row.dump());
  return nlohmann::json::array({row});
}

Register reg("profiler", run);

}  // namespace
}  // namespace ember::bench
