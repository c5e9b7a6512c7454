// Drawing the next token from logits with temperature, top-k and top-p: shared by `ember
// generate` (src/cli/generate.cpp) and ember-rt's text generation (src/runtime/main.cpp), so
// that both print the same text for the same logits and seed. Header-only: ember-rt does not
// link the library.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace ember::detail {

// The token for the uniform `u` in [0, 1): the `top_k` most likely (0 = all), then the
// smallest prefix whose probability reaches `top_p`, drawn in proportion to
// exp((logit - max) / temperature); temperature <= 0 is greedy.
inline int64_t sample_token(const double* logits, int64_t vocab, double temperature, int64_t top_k, double top_p,
                            double u) {
  std::vector<int64_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  // Most likely first, ties by token id; a NaN logit ranks last. A total order, so std::sort
  // (smaller than a stable sort in ember-rt) gives exactly one answer.
  auto rank = [&](int64_t i) { return std::isnan(logits[i]) ? -HUGE_VAL : logits[i]; };
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const double x = rank(a), y = rank(b);
    return x > y || (x == y && a < b);
  });
  if (temperature <= 0) return order[0];
  const int64_t keep = top_k > 0 ? std::min(top_k, vocab) : vocab;
  std::vector<double> probs(static_cast<size_t>(keep));
  for (int64_t i = 0; i < keep; ++i) probs[i] = std::exp((logits[order[i]] - logits[order[0]]) / temperature);
  double total = std::accumulate(probs.begin(), probs.end(), 0.0), mass = 0;
  int64_t nucleus = keep;
  for (int64_t i = 0; i < keep; ++i) {
    mass += probs[i] / total;
    if (mass >= top_p) {
      nucleus = i + 1;
      break;
    }
  }
  total = std::accumulate(probs.begin(), probs.begin() + nucleus, 0.0);
  double target = u * total;
  for (int64_t i = 0; i < nucleus; ++i) {
    target -= probs[i];
    if (target <= 0) return order[i];
  }
  return order[nucleus - 1];
}

// The uniform in [0, 1) of draw `index`: the top 53 bits of random_bits(seed, index).
inline double uniform_from_bits(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace ember::detail
