// CTC loss kernels: one task per sequence (the sequences are independent, so results do not
// depend on the thread count). Arithmetic in the input's type, as PyTorch's kernels.
#include "cpu/ctc_loss.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/parallel.h"

namespace ember::cpu {
namespace {

template <typename T>
struct Sequence {
  const CTCProblem& p;
  int64_t b;
  const T* log_probs;
  int64_t length, label_count, states;

  Sequence(const CTCProblem& problem, int64_t index)
      : p(problem),
        b(index),
        log_probs(static_cast<const T*>(problem.log_probs)),
        length(problem.input_lengths[index]),
        label_count(problem.target_lengths[index]),
        states(2 * problem.target_lengths[index] + 1) {}

  // l'_s: blank at even s, the (s / 2)-th label at odd s.
  int64_t label(int64_t s) const { return s % 2 == 0 ? p.blank : p.targets[p.target_offsets[b] + s / 2]; }
  T lp(int64_t t, int64_t c) const { return log_probs[(t * p.batch + b) * p.classes + c]; }
};

template <typename T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// log(exp(a) + exp(b) + exp(c)) with PyTorch's guard: an all -inf max counts as 0.
template <typename T>
T log_sum3(T a, T b, T c) {
  T m = std::max(a, std::max(b, c));
  if (m == kNegInf<T>) m = 0;
  return std::log(std::exp(a - m) + std::exp(b - m) + std::exp(c - m)) + m;
}

template <typename T>
T log_add(T a, T b) {
  T m = std::max(a, b);
  if (m == kNegInf<T>) m = 0;
  return std::log(std::exp(a - m) + std::exp(b - m)) + m;
}

template <typename T>
void forward_sequence(const Sequence<T>& q, T* nll, T* log_alpha) {
  const int64_t width = 2 * q.p.max_target_length + 1;
  T* alpha = log_alpha + q.b * q.p.max_time * width;
  std::fill(alpha, alpha + q.p.max_time * width, kNegInf<T>);
  if (q.length == 0) {  // an empty input aligns only with an empty target
    nll[q.b] = q.label_count == 0 ? T(0) : std::numeric_limits<T>::infinity();
    return;
  }
  alpha[0] = q.lp(0, q.p.blank);
  if (q.label_count > 0) alpha[1] = q.lp(0, q.label(1));
  for (int64_t t = 1; t < q.length; ++t) {
    const T* prev = alpha + (t - 1) * width;
    T* cur = alpha + t * width;
    for (int64_t s = 0; s < q.states; ++s) {
      const int64_t c = q.label(s);
      const T stay = prev[s];
      const T step = s > 0 ? prev[s - 1] : kNegInf<T>;
      const T skip = s > 1 && q.label(s - 2) != c ? prev[s - 2] : kNegInf<T>;
      cur[s] = log_sum3(stay, step, skip) + q.lp(t, c);
    }
  }
  const T* last = alpha + (q.length - 1) * width;
  const T end_blank = last[q.states - 1];
  const T end_label = q.label_count > 0 ? last[q.states - 2] : kNegInf<T>;
  nll[q.b] = -log_add(end_blank, end_label);
}

template <typename T>
void backward_sequence(const Sequence<T>& q, T grad_nll, T nll, const T* log_alpha, bool zero_infinity, T* grad) {
  const int64_t width = 2 * q.p.max_target_length + 1;
  const int64_t C = q.p.classes, N = q.p.batch;
  auto grad_at = [&](int64_t t, int64_t c) -> T& { return grad[(t * N + q.b) * C + c]; };
  for (int64_t t = 0; t < q.p.max_time; ++t)
    for (int64_t c = 0; c < C; ++c) grad_at(t, c) = 0;
  if (q.length == 0 || (zero_infinity && nll == std::numeric_limits<T>::infinity())) return;

  const T* alpha = log_alpha + q.b * q.p.max_time * width;
  std::vector<T> beta(static_cast<size_t>(q.length * q.states), kNegInf<T>);
  auto beta_at = [&](int64_t t, int64_t s) -> T& { return beta[static_cast<size_t>(t * q.states + s)]; };
  const int64_t last = q.length - 1;
  beta_at(last, q.states - 1) = q.lp(last, q.p.blank);
  if (q.label_count > 0) beta_at(last, q.states - 2) = q.lp(last, q.label(q.states - 2));
  for (int64_t t = last - 1; t >= 0; --t) {
    for (int64_t s = 0; s < q.states; ++s) {
      const int64_t c = q.label(s);
      const T stay = beta_at(t + 1, s);
      const T step = s < q.states - 1 ? beta_at(t + 1, s + 1) : kNegInf<T>;
      const T skip = s < q.states - 2 && q.label(s + 2) != c ? beta_at(t + 1, s + 2) : kNegInf<T>;
      beta_at(t, s) = log_sum3(stay, step, skip) + q.lp(t, c);
    }
  }

  // Per step: log of sum over states s with l'_s = c of alpha * beta (kept in log space).
  std::vector<T> log_occupancy(static_cast<size_t>(C));
  for (int64_t t = 0; t < q.length; ++t) {
    std::fill(log_occupancy.begin(), log_occupancy.end(), kNegInf<T>);
    for (int64_t s = 0; s < q.states; ++s) {
      T& slot = log_occupancy[static_cast<size_t>(q.label(s))];
      slot = log_add(slot, alpha[t * width + s] + beta_at(t, s));
    }
    for (int64_t c = 0; c < C; ++c) {
      const T lp = q.lp(t, c);
      grad_at(t, c) = (std::exp(lp) - std::exp(log_occupancy[static_cast<size_t>(c)] + nll - lp)) * grad_nll;
    }
  }
}

template <typename T>
void forward_all(const CTCProblem& p, void* nll, void* log_alpha) {
  parallel_for(0, p.batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      forward_sequence(Sequence<T>(p, b), static_cast<T*>(nll), static_cast<T*>(log_alpha));
  });
}

template <typename T>
void backward_all(const CTCProblem& p, const void* grad_nll, const void* nll, const void* log_alpha, bool zero_infinity,
                  void* grad) {
  parallel_for(0, p.batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      backward_sequence(Sequence<T>(p, b), static_cast<const T*>(grad_nll)[b], static_cast<const T*>(nll)[b],
                        static_cast<const T*>(log_alpha), zero_infinity, static_cast<T*>(grad));
  });
}

}  // namespace

void ctc_loss_forward(const CTCProblem& problem, void* nll, void* log_alpha) {
  if (problem.dtype == kFloat64)
    forward_all<double>(problem, nll, log_alpha);
  else
    forward_all<float>(problem, nll, log_alpha);
}

void ctc_loss_backward(const CTCProblem& problem, const void* grad_nll, const void* nll, const void* log_alpha,
                       bool zero_infinity, void* grad_log_probs) {
  if (problem.dtype == kFloat64)
    backward_all<double>(problem, grad_nll, nll, log_alpha, zero_infinity, grad_log_probs);
  else
    backward_all<float>(problem, grad_nll, nll, log_alpha, zero_infinity, grad_log_probs);
}

}  // namespace ember::cpu
