// Philox 4x32-10 counter-based generation: value i depends only on (seed, offset + i).
#pragma once
#include <cstdint>

#include "ember/dtype.h"

namespace ember::cpu {

enum class Distribution { Uniform, Normal, Bernoulli };

// Fills `n` contiguous elements of `dtype` at `out`. Uniform in [a, b); Normal with mean a,
// std b; Bernoulli with probability a.
void fill_random(ScalarType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, Distribution dist, double a,
                 double b);
// Integers uniform in [low, high).
void fill_randint(ScalarType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, int64_t low, int64_t high);
// Per-element Bernoulli with probabilities p (contiguous float64), writing 0/1 as `dtype`.
void fill_bernoulli(ScalarType dtype, void* out, const double* p, int64_t n, uint64_t seed, uint64_t offset);
// Uniform 64-bit value for counter `index` (used by randperm's shuffle).
uint64_t random_bits(uint64_t seed, uint64_t index);

}  // namespace ember::cpu
