// Affine size expressions (Note [Symbolic sizes] in schema/program.fbs): their range over
// boxes of symbol values, with every partial sum checked for overflow, and their value once
// the symbols are bound. The loader proves each expression's range at the symbols' bounds,
// so evaluating it at run time with symbols inside those bounds cannot overflow.
#pragma once
#include <cstdint>

#include "runtime/schema/program_generated.h"

namespace ember::rt {

struct Interval {
  int64_t lo = 0;
  int64_t hi = 0;
};

// The range of `expr` (null: 0) when symbol s ranges over symbols[s]. False on an overflow,
// a symbol index >= num_symbols or terms not aligned for their 8-byte fields (the FlatBuffers
// verifier checks a vector's length field, not its structs' alignment; an empty one may sit
// anywhere).
bool expr_range(const program::Expr* expr, const Interval* symbols, uint32_t num_symbols, Interval* range);

// The value of `expr` (null: 0) for symbol values `symbols` (indices checked at load).
inline int64_t evaluate(const program::Expr* expr, const int64_t* symbols) {
  if (expr == nullptr) return 0;
  int64_t value = expr->constant();
  if (const auto* terms = expr->terms())
    for (const program::Term* term : *terms) value += term->coefficient() * symbols[term->symbol()];
  return value;
}

// Overflow-checked interval arithmetic.
bool add_ranges(Interval a, Interval b, Interval* sum);
bool multiply_ranges(Interval a, Interval b, Interval* product);

}  // namespace ember::rt
