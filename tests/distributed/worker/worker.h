// The program every rank of a multi-process test runs: GoogleTest cases (chosen with
// --gtest_filter by tests/distributed) that join the process group set up by the
// environment (RANK, WORLD_SIZE, EMBER_RDZV, ...) and check results against hand-computed
// values. A failed EXPECT makes the rank exit non-zero; ASSERTs are avoided so that every
// rank keeps issuing the same collectives.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/testing.h"
#include "ember/distributed.h"
#include "ember/ember.h"

namespace ember::distributed::worker {

inline std::chrono::milliseconds env_timeout() {
  const char* text = std::getenv("EMBER_TEST_TIMEOUT_MS");
  return std::chrono::milliseconds(text ? std::atoll(text) : 30000);
}

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* text = std::getenv(name);
  return text && *text ? text : fallback;
}

class DistributedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    InitOptions options;
    options.timeout = env_timeout();
    init_process_group(options);
  }
  void TearDown() override { destroy_process_group(); }

  static int rank() { return get_rank(); }
  static int size() { return get_world_size(); }
};

// values[i] = f(i) for i < n.
inline std::vector<double> generate(int64_t n, const std::function<double(int64_t)>& f) {
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = f(i);
  return values;
}

// A contiguous tensor of `dtype` with element i = f(i).
inline Tensor make_tensor(IntArrayRef sizes, ScalarType dtype, const std::function<double(int64_t)>& f) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return testutil::make(generate(n, f), sizes, dtype);
}

// `values` each rounded to `dtype`, the reference for a result computed exactly and
// stored once.
inline std::vector<double> rounded(ScalarType dtype, std::vector<double> values) {
  for (double& v : values) v = testutil::round_to(dtype, v);
  return values;
}

// Uneven all-to-all splits: rank r sends r + j + 1 rows to rank j, so it receives k + r + 1
// rows from rank k; the one list serves as input and output split sizes.
inline std::vector<int64_t> uneven_splits(int rank, int world) {
  std::vector<int64_t> splits;
  for (int j = 0; j < world; ++j) splits.push_back(rank + j + 1);
  return splits;
}

}  // namespace ember::distributed::worker
