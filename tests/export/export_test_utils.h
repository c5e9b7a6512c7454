// Helpers of the export tests: bitwise comparison, error messages, an independent check of the
// memory plan (every pair of Arena values, lifetimes recomputed here) and IR equality.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "../test_support.h"
#include "ember/ember.h"
#include "ember/export.h"

namespace ember::test {

inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

using testutil::expect_error;

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ember_export_" + std::to_string(::getpid()) + "_" + name)).string();
}

// For every pair of Arena values whose lifetimes (first use .. last use, uses of views
// counted for their base) overlap, their byte ranges at the symbols' upper bounds are
// disjoint; every range is 64-byte aligned and inside the arena.
inline void expect_plan_disjoint(const export_ir::Method& m) {
  std::vector<int64_t> min, max;
  for (const auto& s : m.symbols) {
    min.push_back(s.min);
    max.push_back(s.max);
  }
  const size_t n = m.values.size();
  std::vector<int64_t> first(n, -1), last(n, -1);
  auto root = [&](uint32_t v) {
    while (m.values[v].location == export_ir::Location::View) v = m.values[v].base;
    return v;
  };
  // A loop holds every value of its body for its whole run.
  for (size_t i = 0; i < m.instructions.size(); ++i)
    export_ir::for_each_value(m.instructions[i], [&](uint32_t v) {
      if (first[root(v)] < 0) first[root(v)] = static_cast<int64_t>(i);
      last[root(v)] = static_cast<int64_t>(i);
    });
  struct Range {
    size_t value;
    uint64_t begin, end;
    int64_t first, last;
  };
  std::vector<Range> ranges;
  for (size_t v = 0; v < n; ++v) {
    const auto& value = m.values[v];
    if (value.location != export_ir::Location::Arena) continue;
    uint64_t bytes = element_size(value.dtype);
    for (const auto& e : value.shape) {
      int64_t hi = e.constant;
      for (const auto& t : e.terms) hi += t.coefficient * (t.coefficient > 0 ? max[t.symbol] : min[t.symbol]);
      bytes *= static_cast<uint64_t>(std::max<int64_t>(hi, 0));
    }
    EXPECT_EQ(value.arena_offset % 64, 0u) << value.name;
    EXPECT_LE(value.arena_offset + bytes, m.arena_bytes) << value.name;
    ranges.push_back({v, value.arena_offset, value.arena_offset + bytes, first[v], std::max(last[v], first[v])});
  }
  size_t checked = 0;
  for (size_t i = 0; i < ranges.size(); ++i)
    for (size_t j = i + 1; j < ranges.size(); ++j) {
      const Range &a = ranges[i], &b = ranges[j];
      if (a.first > b.last || b.first > a.last || a.begin == a.end || b.begin == b.end) continue;
      ++checked;
      EXPECT_TRUE(a.end <= b.begin || b.end <= a.begin)
          << m.values[a.value].name << " [" << a.begin << ", " << a.end << ") and " << m.values[b.value].name << " ["
          << b.begin << ", " << b.end << ") are live together";
    }
  EXPECT_GT(checked, 0u) << "no two arena values are live together: the check checked nothing";
}

inline void expect_same_program(const export_ir::Program& a, const export_ir::Program& b) {
  ASSERT_EQ(a.constants.size(), b.constants.size());
  for (size_t i = 0; i < a.constants.size(); ++i) {
    EXPECT_EQ(a.constants[i].name, b.constants[i].name);
    EXPECT_TRUE(bitwise_equal(a.constants[i].data, b.constants[i].data)) << a.constants[i].name;
  }
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.methods.size(), b.methods.size());
  for (size_t i = 0; i < a.methods.size(); ++i) {
    const auto &x = a.methods[i], &y = b.methods[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.symbols, y.symbols);
    ASSERT_EQ(x.values.size(), y.values.size());
    for (size_t v = 0; v < x.values.size(); ++v) EXPECT_EQ(x.values[v], y.values[v]) << "value " << v;
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    ASSERT_EQ(x.instructions.size(), y.instructions.size());
    for (size_t c = 0; c < x.instructions.size(); ++c) EXPECT_EQ(x.instructions[c], y.instructions[c]) << "call " << c;
    EXPECT_EQ(x.arena_bytes, y.arena_bytes);
  }
}

}  // namespace ember::test
