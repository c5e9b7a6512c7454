// Note [Static memory plan]
// Every Arena value (a call result that is not a method output) lives from the first
// instruction that touches it to the last one that reads it or a view of it (views share
// their base's memory; a loop counts as one instruction touching all its body's values).
// Values are placed largest first; each takes the smallest gap, between the values already
// placed whose lifetimes overlap its own, that holds it (greedy best-fit), else goes above
// them. Sizes are those at the symbols' bounds, so one arena serves every run inside them.
#include "export/memory_plan.h"

#include <algorithm>
#include <limits>

namespace ember::export_detail {

namespace {

constexpr uint64_t kAlignment = 64;

uint64_t align_up(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

// The value whose memory `v` uses: itself, or the base of its view chain.
uint32_t memory_root(const export_ir::Method& m, uint32_t v) {
  while (m.values[v].location == export_ir::Location::View) v = m.values[v].base;
  return v;
}

}  // namespace

std::vector<Lifetime> arena_lifetimes(const export_ir::Method& method) {
  constexpr size_t kNever = std::numeric_limits<size_t>::max();
  std::vector<size_t> first(method.values.size(), kNever), last(method.values.size(), 0);
  // A loop is one step of the plan: every value it touches is live throughout it.
  for (size_t i = 0; i < method.instructions.size(); ++i)
    export_ir::for_each_value(method.instructions[i], [&](uint32_t v) {
      const uint32_t r = memory_root(method, v);
      first[r] = std::min(first[r], i);
      last[r] = std::max(last[r], i);
    });
  std::vector<Lifetime> out;
  for (uint32_t v = 0; v < method.values.size(); ++v) {
    const export_ir::Value& value = method.values[v];
    if (value.location != export_ir::Location::Arena || first[v] == kNever) continue;
    out.push_back({v, first[v], last[v], align_up(value.max_bytes)});
  }
  return out;
}

void plan_memory(export_ir::Method& method) {
  std::vector<Lifetime> lifetimes = arena_lifetimes(method);
  std::stable_sort(lifetimes.begin(), lifetimes.end(),
                   [](const Lifetime& a, const Lifetime& b) { return a.bytes > b.bytes; });
  struct Placed {
    uint64_t offset, bytes;
    size_t first, last;
  };
  std::vector<Placed> placed;
  uint64_t arena = 0, total = 0;
  for (const Lifetime& l : lifetimes) {
    std::vector<Placed> live;
    for (const Placed& p : placed)
      if (p.first <= l.last && l.first <= p.last) live.push_back(p);
    std::sort(live.begin(), live.end(), [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    uint64_t best = std::numeric_limits<uint64_t>::max(), best_gap = std::numeric_limits<uint64_t>::max();
    uint64_t cursor = 0;
    for (const Placed& p : live) {
      if (p.offset > cursor && p.offset - cursor >= l.bytes && p.offset - cursor < best_gap) {
        best = cursor;
        best_gap = p.offset - cursor;
      }
      cursor = std::max(cursor, p.offset + p.bytes);
    }
    if (best == std::numeric_limits<uint64_t>::max()) best = cursor;
    placed.push_back({best, l.bytes, l.first, l.last});
    method.values[l.value].arena_offset = best;
    arena = std::max(arena, best + l.bytes);
    total += method.values[l.value].max_bytes;
  }
  method.arena_bytes = arena;
  method.intermediate_bytes = total;
}

}  // namespace ember::export_detail
