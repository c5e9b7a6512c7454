#include "runtime/expr.h"

#include <algorithm>
#include <cstdint>

namespace ember::rt {

bool add_ranges(Interval a, Interval b, Interval* sum) {
  return !__builtin_add_overflow(a.lo, b.lo, &sum->lo) && !__builtin_add_overflow(a.hi, b.hi, &sum->hi);
}

bool multiply_ranges(Interval a, Interval b, Interval* product) {
  int64_t corners[4];
  if (__builtin_mul_overflow(a.lo, b.lo, &corners[0]) || __builtin_mul_overflow(a.lo, b.hi, &corners[1]) ||
      __builtin_mul_overflow(a.hi, b.lo, &corners[2]) || __builtin_mul_overflow(a.hi, b.hi, &corners[3]))
    return false;
  product->lo = *std::min_element(corners, corners + 4);
  product->hi = *std::max_element(corners, corners + 4);
  return true;
}

bool expr_range(const program::Expr* expr, const Interval* symbols, uint32_t num_symbols, Interval* range) {
  *range = Interval{};
  if (expr == nullptr) return true;
  *range = Interval{expr->constant(), expr->constant()};
  const auto* terms = expr->terms();
  if (terms == nullptr) return true;
  if (terms->size() > 0 && reinterpret_cast<uintptr_t>(terms->Data()) % alignof(program::Term) != 0) return false;
  for (const program::Term* term : *terms) {
    if (term->symbol() >= num_symbols) return false;
    Interval product;
    if (!multiply_ranges(Interval{term->coefficient(), term->coefficient()}, symbols[term->symbol()], &product) ||
        !add_ranges(*range, product, range))
      return false;
  }
  return true;
}

}  // namespace ember::rt
