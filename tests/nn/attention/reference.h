// Dense float64 attention built from the same mods, forward and backward, written out
// loop by loop: the reference the fused kernels are checked against.
#pragma once
#include <cmath>
#include <limits>
#include <vector>

#include "core/testing.h"
#include "ember/nn/attention.h"

namespace ember::testutil {

struct AttentionShape {
  int64_t B, Hq, Hkv, L, S, E, Ev;
  int64_t Bk = 0;  // key/value batch (0: B)
  int64_t kv_batch() const { return Bk ? Bk : B; }
};

struct DenseAttention {
  std::vector<double> out, lse, dq, dk, dv;
  std::vector<std::vector<double>> dparams;  // by captured slot
};

// q, k, v hold row-major values of [B, Hq, L, E], [Bk, Hkv, S, E], [Bk, Hkv, S, Ev];
// grad_out (may be empty: no backward) is [B, Hq, L, Ev]. mask(b, h, q, kv) -> bool.
template <typename ScoreMod, typename Mask>
DenseAttention dense_attention(const AttentionShape& s, const std::vector<double>& q, const std::vector<double>& k,
                               const std::vector<double>& v, const std::vector<double>& grad_out, double scale,
                               ScoreMod score_mod, Mask mask, const std::vector<int64_t>& param_sizes = {}) {
  using nn::attention::Dual;
  DenseAttention r;
  r.out.assign(static_cast<size_t>(s.B * s.Hq * s.L * s.Ev), 0.0);
  r.lse.assign(static_cast<size_t>(s.B * s.Hq * s.L), 0.0);
  r.dq.assign(static_cast<size_t>(s.B * s.Hq * s.L * s.E), 0.0);
  r.dk.assign(static_cast<size_t>(s.kv_batch() * s.Hkv * s.S * s.E), 0.0);
  r.dv.assign(static_cast<size_t>(s.kv_batch() * s.Hkv * s.S * s.Ev), 0.0);
  for (int64_t n : param_sizes) r.dparams.emplace_back(static_cast<size_t>(n), 0.0);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> p(static_cast<size_t>(s.S)), dmod(static_cast<size_t>(s.S));
  std::vector<Dual> duals(static_cast<size_t>(s.S));
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.Hq; ++h) {
      const int64_t kb = s.kv_batch() == 1 ? 0 : b, hk = h / (s.Hq / s.Hkv);
      auto Q = [&](int64_t i, int64_t e) { return q[static_cast<size_t>(((b * s.Hq + h) * s.L + i) * s.E + e)]; };
      auto kidx = [&](int64_t j, int64_t e) { return static_cast<size_t>(((kb * s.Hkv + hk) * s.S + j) * s.E + e); };
      auto vidx = [&](int64_t j, int64_t e) { return static_cast<size_t>(((kb * s.Hkv + hk) * s.S + j) * s.Ev + e); };
      for (int64_t i = 0; i < s.L; ++i) {
        double max = -inf;
        for (int64_t j = 0; j < s.S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < s.E; ++e) dot += Q(i, e) * k[kidx(j, e)];
          const auto ib = static_cast<int32_t>(b), ih = static_cast<int32_t>(h), ii = static_cast<int32_t>(i),
                     ij = static_cast<int32_t>(j);
          duals[j] = Dual(score_mod(Dual(scale * dot, 1.0), ib, ih, ii, ij));
          const bool visible = mask(ib, ih, ii, ij);
          p[j] = visible ? duals[j].value : -inf;
          dmod[j] = visible ? duals[j].dscore : 0;
          max = std::max(max, p[j]);
        }
        const size_t row = static_cast<size_t>((b * s.Hq + h) * s.L + i);
        if (max == -inf) {  // fully masked: output 0, lse -inf, no gradient
          r.lse[row] = -inf;
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < s.S; ++j) sum += (p[j] = std::exp(p[j] - max));
        r.lse[row] = max + std::log(sum);
        for (int64_t j = 0; j < s.S; ++j) p[j] /= sum;
        for (int64_t j = 0; j < s.S; ++j)
          for (int64_t e = 0; e < s.Ev; ++e) r.out[row * s.Ev + e] += p[j] * v[vidx(j, e)];
        if (grad_out.empty()) continue;
        auto dO = [&](int64_t e) { return grad_out[row * s.Ev + e]; };
        std::vector<double> dp(static_cast<size_t>(s.S));
        double delta = 0;
        for (int64_t j = 0; j < s.S; ++j) {
          for (int64_t e = 0; e < s.Ev; ++e) dp[j] += dO(e) * v[vidx(j, e)];
          delta += p[j] * dp[j];
        }
        for (int64_t j = 0; j < s.S; ++j) {
          const double ds_mod = p[j] * (dp[j] - delta), ds = ds_mod * dmod[j];
          for (int64_t e = 0; e < s.E; ++e) {
            r.dq[row * s.E + e] += scale * ds * k[kidx(j, e)];
            r.dk[kidx(j, e)] += scale * ds * Q(i, e);
          }
          for (int64_t e = 0; e < s.Ev; ++e) r.dv[vidx(j, e)] += p[j] * dO(e);
          for (int c = 0; c < duals[j].count; ++c)
            if (duals[j].slot[c] >= 0) r.dparams[duals[j].slot[c]][duals[j].index[c]] += ds_mod * duals[j].partial[c];
        }
      }
    }
  return r;
}

}  // namespace ember::testutil
