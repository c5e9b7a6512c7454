// transpose_floats (cpu/transpose.h) on every instruction set the CPU has, against the
// definition dst[c * rows + r] = src[r * cols + c], at sizes with and without ragged edges.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/transpose.h"

namespace ember::cpu {
namespace {

TEST(TransposeFloats, MatchesTheDefinitionOnEveryInstructionSet) {
  const Capability original = cpu_capability();
  for (Capability wanted : {Capability::Baseline, Capability::AVX2, Capability::AVX512}) {
    if (set_cpu_capability(wanted) != wanted) continue;
    SCOPED_TRACE(capability_name(wanted));
    for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 1}, {1, 13}, {13, 1}, {7, 9}, {8, 8}, {16, 24}, {33, 70}, {128, 63}, {40, 41}}) {
      SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
      std::vector<float> src(static_cast<size_t>(rows * cols)), dst(src.size(), -1.0f);
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.5f - 7.0f;
      EMBER_KERNEL(transpose_floats)(src.data(), rows, cols, dst.data());
      int64_t wrong = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) wrong += dst[static_cast<size_t>(c * rows + r)] != src[static_cast<size_t>(r * cols + c)];
      EXPECT_EQ(wrong, 0);
    }
  }
  set_cpu_capability(original);
}

}  // namespace
}  // namespace ember::cpu
