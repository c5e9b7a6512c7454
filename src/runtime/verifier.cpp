// The loader's checks after the FlatBuffers verifier: every index, offset, size, dtype, shape
// expression and arena range against its bounds, so that no run can read or write outside
// the file's segments, the arena or the caller's buffers (Note [Program file layout]).
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/program.h"
#include "runtime/schema/file_header.h"

namespace ember::rt {

using program::Location;

namespace {

constexpr int kMaxLoopDepth = 16;
constexpr size_t kMaxOperands = 64;

bool valid_dtype(program::ScalarType dtype) {
  return static_cast<int>(dtype) >= 0 && dtype <= program::ScalarType::Float64;
}

template <typename T>
uint32_t length(const flatbuffers::Vector<T>* vector) {
  return vector == nullptr ? 0 : vector->size();
}

bool verify_segments(const Program& program, Error& error) {
  const auto* segments = program.root->segments();
  const uint64_t program_end =
      program::kHeaderBytes + program::detail::read_le(program.file + 16, 8);  // header checked by the loader
  for (uint32_t s = 0; s < length(segments); ++s) {
    const program::Segment* segment = segments->Get(s);
    uint64_t end = 0;
    if (segment->offset() % program::kSegmentAlignment != 0)
      return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[load] segment %u at offset %llu is not 64-byte aligned", s,
                        static_cast<unsigned long long>(segment->offset()));
    if (segment->offset() < program_end)
      return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                        "[load] segment %u at offset %llu overlaps the header and program (bytes 0..%llu)", s,
                        static_cast<unsigned long long>(segment->offset()), static_cast<unsigned long long>(program_end));
    if (__builtin_add_overflow(segment->offset(), segment->size(), &end) || end > program.file_bytes)
      return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM,
                        "[load] segment %u (offset %llu, %llu bytes) ends past the end of the file (%zu bytes)", s,
                        static_cast<unsigned long long>(segment->offset()),
                        static_cast<unsigned long long>(segment->size()), program.file_bytes);
  }
  return true;
}

bool find_kernels(Program& program, Error& error) {
  const auto* operators = program.root->operators();
  const auto kernels = registered_kernels();
  for (uint32_t i = 0; i < length(operators); ++i) {
    const char* name = operators->Get(i)->name()->c_str();
    const Kernel* found = nullptr;
    for (const Kernel* kernel : kernels)
      if (std::strcmp(kernel->name, name) == 0) found = kernel;
    if (found == nullptr)
      return error.fail(EMBER_RT_ERROR_MISSING_KERNEL,
                        "[load] operator %u '%s' has no kernel in this build (%zu kernels linked; add the op to the "
                        "program's op list)", i, name, kernels.size());
    program.kernels.push_back(found);
  }
  return true;
}

class MethodVerifier {
 public:
  MethodVerifier(Program& program, Method& method, Error& error)
      : program_(program), m_(method), fm_(*method.method), error_(error), name_(fm_.name()->c_str()),
        num_values_(length(fm_.values())), num_symbols_(length(fm_.symbols())) {}

  bool verify() {
    trip_counts_.assign(num_symbols_, nullptr);
    if (!verify_inputs_outputs() || !verify_symbols()) return false;
    find_trip_counts(fm_.instructions(), 0);
    if (!verify_values() || !allocate_arena()) return false;
    defined_.assign(num_values_, 0);
    loop_symbols_.assign(num_symbols_, 0);
    for (uint32_t v = 0; v < num_values_; ++v)
      if (m_.values[v].location == Location::Input || m_.values[v].location == Location::Constant) defined_[v] = 1;
    if (!verify_instructions(fm_.instructions(), 0)) return false;
    for (uint32_t o = 0; o < length(fm_.outputs()); ++o)
      if (!is_defined(fm_.outputs()->Get(o)))
        return fail("output %u (value %u) is never written", o, fm_.outputs()->Get(o));
    m_.symbols.assign(num_symbols_, 0);
    m_.input_data.assign(length(fm_.inputs()), nullptr);
    m_.output_data.assign(length(fm_.outputs()), nullptr);
    m_.input_numel.assign(length(fm_.inputs()), 0);
    m_.output_numel.assign(length(fm_.outputs()), 0);
    m_.scratch_bytes = max_scratch_;
    if (max_scratch_ > 0) {
      m_.scratch.reset(static_cast<unsigned char*>(std::aligned_alloc(64, (static_cast<uint64_t>(max_scratch_) + 63) / 64 * 64)));
      if (!m_.scratch)
        return error_.fail(EMBER_RT_ERROR_OUT_OF_MEMORY, "[load] method '%s': cannot allocate %lld bytes of scratch",
                           name_, static_cast<long long>(max_scratch_));
    }
    m_.operand_views.resize(max_operands_);
    m_.operand_types.resize(max_operands_);
    return true;
  }

 private:
  bool fail(const char* format, ...) __attribute__((format(printf, 2, 3))) {
    char message[400];
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, sizeof(message), format, args);
    va_end(args);
    return error_.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[load] method '%s': %s", name_, message);
  }

  const program::Value& value(uint32_t index) const { return *fm_.values()->Get(index); }

  bool verify_inputs_outputs() {
    for (int is_output = 0; is_output < 2; ++is_output) {
      const auto* list = is_output ? fm_.outputs() : fm_.inputs();
      const Location expected = is_output ? Location::Output : Location::Input;
      const char* what = is_output ? "output" : "input";
      for (uint32_t slot = 0; slot < length(list); ++slot) {
        const uint32_t index = list->Get(slot);
        if (index >= num_values_) return fail("%s %u names value %u of %u", what, slot, index, num_values_);
        const program::Value& v = value(index);
        if (v.location() != expected || v.slot() != slot)
          return fail("%s %u names value %u, whose location is not %s slot %u", what, slot, index, what, slot);
        if (v.strides() != nullptr) return fail("%s %u (value %u) must be contiguous (no strides)", what, slot, index);
      }
    }
    return true;
  }

  bool verify_symbols() {
    const uint32_t num_inputs = length(fm_.inputs());
    m_.symbol_bounds.resize(num_symbols_);
    for (uint32_t s = 0; s < num_symbols_; ++s) {
      const program::Symbol& symbol = *fm_.symbols()->Get(s);
      const char* name = symbol.name()->c_str();
      if (symbol.min() > symbol.max())
        return fail("symbol %u '%s' has bounds [%lld, %lld]", s, name, static_cast<long long>(symbol.min()),
                    static_cast<long long>(symbol.max()));
      switch (symbol.source()) {
        case program::SymbolSource::InputDim: {
          if (symbol.input() >= num_inputs)
            return fail("symbol %u '%s' is a dim of input %u of %u", s, name, symbol.input(), num_inputs);
          const program::Value& input = value(fm_.inputs()->Get(symbol.input()));
          if (symbol.dim() >= length(input.shape()))
            return fail("symbol %u '%s' is dim %u of input %u, which has %u dims", s, name, symbol.dim(),
                        symbol.input(), length(input.shape()));
          if (symbol.min() < 0) return fail("symbol %u '%s' is a size with a negative minimum", s, name);
          break;
        }
        case program::SymbolSource::InputValue: {
          if (symbol.input() >= num_inputs)
            return fail("symbol %u '%s' is the value of input %u of %u", s, name, symbol.input(), num_inputs);
          const program::Value& input = value(fm_.inputs()->Get(symbol.input()));
          if (input.dtype() != program::ScalarType::Int64 || length(input.shape()) != 0)
            return fail("symbol %u '%s' is the value of input %u, which is not an int64 scalar", s, name,
                        symbol.input());
          break;
        }
        case program::SymbolSource::LoopIndex:
          if (symbol.min() != 0) return fail("loop index symbol %u '%s' must have minimum 0", s, name);
          break;
        default:
          return fail("symbol %u '%s' has an unknown source %d", s, name, static_cast<int>(symbol.source()));
      }
      m_.symbol_bounds[s] = Interval{symbol.min(), symbol.max()};
    }
    return true;
  }

  bool verify_values() {
    m_.values.resize(num_values_);
    const auto* segments = program_.root->segments();
    for (uint32_t i = 0; i < num_values_; ++i) {
      const program::Value& v = value(i);
      ValueInfo& info = m_.values[i];
      info.location = v.location();
      info.root = i;
      if (!valid_dtype(v.dtype())) return fail("value %u has an unknown dtype %d", i, static_cast<int>(v.dtype()));
      if (length(v.shape()) > kMaxDims)
        return fail("value %u has %u dims (at most %d)", i, length(v.shape()), kMaxDims);
      if (v.strides() != nullptr && length(v.strides()) != length(v.shape()))
        return fail("value %u has %u dims and %u strides", i, length(v.shape()), length(v.strides()));
      Extent extent;
      int bad_dim = 0;
      if (const char* problem = value_extent(v, m_.symbol_bounds.data(), num_symbols_, &extent, &bad_dim))
        return fail("value %u '%s': %s at dim %d (over the symbols' bounds)", i, v.name() ? v.name()->c_str() : "",
                    problem, bad_dim);
      const int64_t element = element_size(v.dtype());
      if (__builtin_mul_overflow(extent.elements, element, &info.max_bytes))
        return fail("value %u spans more than 2^63 bytes", i);
      const uint64_t max_bytes = static_cast<uint64_t>(info.max_bytes);
      uint64_t end = 0;
      switch (v.location()) {
        case Location::Arena:
          if (v.arena_offset() % program::kSegmentAlignment != 0)
            return fail("value %u: arena offset %llu is not 64-byte aligned", i,
                        static_cast<unsigned long long>(v.arena_offset()));
          if (max_bytes > v.max_bytes())
            return fail("value %u needs %llu bytes at the symbols' bounds, the plan reserves %llu", i,
                        static_cast<unsigned long long>(max_bytes), static_cast<unsigned long long>(v.max_bytes()));
          if (__builtin_add_overflow(v.arena_offset(), v.max_bytes(), &end) || end > fm_.arena_bytes())
            return fail("value %u occupies arena bytes [%llu, %llu + %llu), past the arena of %llu bytes", i,
                        static_cast<unsigned long long>(v.arena_offset()), static_cast<unsigned long long>(v.arena_offset()),
                        static_cast<unsigned long long>(v.max_bytes()), static_cast<unsigned long long>(fm_.arena_bytes()));
          if (end > arena_needed_) arena_needed_ = end;
          break;
        case Location::Constant: {
          if (v.segment() >= length(segments))
            return fail("constant value %u is in segment %u of %u", i, v.segment(), length(segments));
          const program::Segment* segment = segments->Get(v.segment());
          if (max_bytes > v.max_bytes())
            return fail("constant value %u needs %llu bytes, it reserves %llu", i,
                        static_cast<unsigned long long>(max_bytes), static_cast<unsigned long long>(v.max_bytes()));
          if (v.offset() % static_cast<uint64_t>(element) != 0)
            return fail("constant value %u at offset %llu is not aligned to its %lld-byte elements", i,
                        static_cast<unsigned long long>(v.offset()), static_cast<long long>(element));
          if (__builtin_add_overflow(v.offset(), v.max_bytes(), &end) || end > segment->size())
            return fail("constant value %u at offset %llu (+%llu bytes) runs past segment %u (%llu bytes)", i,
                        static_cast<unsigned long long>(v.offset()), static_cast<unsigned long long>(v.max_bytes()),
                        v.segment(), static_cast<unsigned long long>(segment->size()));
          break;
        }
        case Location::Input:
        case Location::Output: {
          const bool output = v.location() == Location::Output;
          const auto* list = output ? fm_.outputs() : fm_.inputs();
          if (v.slot() >= length(list) || list->Get(v.slot()) != i)
            return fail("value %u is %s slot %u, which the method's %s list does not name", i,
                        output ? "output" : "input", v.slot(), output ? "outputs" : "inputs");
          break;
        }
        case Location::View: {
          if (v.base() >= i) return fail("view value %u has base %u (a base comes before its views)", i, v.base());
          const program::Value& base = value(v.base());
          if (base.dtype() != v.dtype())
            return fail("view value %u is %s, its base %u is %s", i, dtype_name(v.dtype()), v.base(),
                        dtype_name(base.dtype()));
          info.root = m_.values[v.base()].root;
          const ValueInfo& root = m_.values[info.root];
          Interval offset;
          if (!view_offset_range(fm_, i, m_.symbol_bounds.data(), num_symbols_, &offset))
            return fail("view value %u: its offset overflows at the symbols' bounds or is malformed", i);
          if (offset.lo < 0 && !lowest_offset_in_loops(i, &offset.lo))
            return fail("view value %u: its offset overflows at the symbols' bounds or is malformed", i);
          if (offset.lo < 0) return fail("view value %u starts %lld elements before its base", i,
                                         static_cast<long long>(offset.lo));
          int64_t last = 0, last_byte = 0;
          if (__builtin_add_overflow(offset.hi, extent.elements, &last) ||
              __builtin_mul_overflow(last, element, &last_byte))
            return fail("view value %u reaches past byte 2^63 of its base (offset up to %lld elements)", i,
                        static_cast<long long>(offset.hi));
          if (root.location == Location::Input || root.location == Location::Output)
            break;  // checked against the caller's sizes when a run uses it (executor.cpp)
          const uint64_t reserved = value(info.root).max_bytes();
          const int64_t capacity = reserved > INT64_MAX ? INT64_MAX : static_cast<int64_t>(reserved);
          if (extent.elements > 0 && last > capacity / element)
            return fail("view value %u spans elements [%lld, %lld) of value %u, which holds %lld", i,
                        static_cast<long long>(offset.hi), static_cast<long long>(last), info.root,
                        static_cast<long long>(capacity / element));
          break;
        }
        default:
          return fail("value %u has an unknown location %d", i, static_cast<int>(v.location()));
      }
    }
    return true;
  }

  bool allocate_arena() {
    const uint64_t bytes = fm_.arena_bytes();
    // The arena is what its values occupy: a larger one is not a plan, only memory to reserve.
    if (bytes > (arena_needed_ + 63) / 64 * 64)
      return fail("an arena of %llu bytes, its values occupy %llu", static_cast<unsigned long long>(bytes),
                  static_cast<unsigned long long>(arena_needed_));
    if (bytes == 0) return true;
    if (bytes > (uint64_t{1} << 48))
      return error_.fail(EMBER_RT_ERROR_OUT_OF_MEMORY, "[load] method '%s': an arena of %llu bytes", name_,
                         static_cast<unsigned long long>(bytes));
    const uint64_t rounded = (bytes + 63) / 64 * 64;
    m_.arena.reset(static_cast<unsigned char*>(std::aligned_alloc(64, rounded)));
    if (!m_.arena)
      return error_.fail(EMBER_RT_ERROR_OUT_OF_MEMORY, "[load] method '%s': cannot allocate its arena of %llu bytes",
                         name_, static_cast<unsigned long long>(bytes));
    return true;
  }

  bool writable(uint32_t index) const {
    const Location root = m_.values[m_.values[index].root].location;
    return root == Location::Arena || root == Location::Output;
  }

  bool verify_call(const program::Call& call) {
    const uint32_t num_operators = length(program_.root->operators());
    if (call.op() >= num_operators) return fail("a call names operator %u of %u", call.op(), num_operators);
    const char* op = program_.root->operators()->Get(call.op())->name()->c_str();
    const uint32_t num_inputs = length(call.inputs()), num_outputs = length(call.outputs());
    if (num_inputs + num_outputs > kMaxOperands)
      return fail("call of %s has %u operands (at most %zu)", op, num_inputs + num_outputs, kMaxOperands);
    if (num_inputs + num_outputs > max_operands_) max_operands_ = num_inputs + num_outputs;
    OperandType types[kMaxOperands];
    for (uint32_t k = 0; k < num_inputs + num_outputs; ++k) {
      const bool is_input = k < num_inputs;
      const uint32_t index = is_input ? call.inputs()->Get(k) : call.outputs()->Get(k - num_inputs);
      if (index >= num_values_)
        return fail("call of %s: %s %u is value %u of %u", op, is_input ? "input" : "output",
                    is_input ? k : k - num_inputs, index, num_values_);
      const program::Value& v = value(index);
      types[k] = OperandType{v.dtype(), static_cast<int32_t>(length(v.shape())), m_.values[index].max_bytes, {}};
      for (int32_t d = 0; d < types[k].dim; ++d) {
        Interval size;
        expr_range(v.shape()->Get(d), m_.symbol_bounds.data(), num_symbols_, &size);  // checked with the value
        types[k].max_sizes[d] = size.hi;
      }
    }
    // A kernel that writes an input in place (copy_ into a view) writes it, not reads it: the
    // LSTM/GRU loops fill their output buffers row by row that way.
    const int in_place = program_.kernels[call.op()]->writes_input;
    for (uint32_t k = 0; k < num_inputs; ++k) {
      const uint32_t index = call.inputs()->Get(k);
      for (uint32_t o = 0; o < num_outputs; ++o)
        if (call.outputs()->Get(o) == index)
          return fail("call of %s reads value %u, which it writes itself (a cycle)", op, index);
      if (static_cast<int>(k) != in_place && !is_defined(index))
        return fail("call of %s reads value %u before any instruction writes it", op, index);
    }
    for (uint32_t o = 0; o < num_outputs; ++o) {
      const uint32_t index = call.outputs()->Get(o);
      if (!writable(index))
        return fail("call of %s writes value %u, which is a constant or an input", op, index);
    }
    // A kernel that writes an input in place may write the caller's buffers, never a constant
    // (read-only memory of the mapped file).
    if (in_place >= 0 && (static_cast<uint32_t>(in_place) >= num_inputs ||
                          m_.values[m_.values[call.inputs()->Get(in_place)].root].location == Location::Constant))
      return fail("call of %s writes its input %d in place, which is missing or a constant", op, in_place);
    if (in_place >= 0) define(call.inputs()->Get(in_place));
    for (uint32_t o = 0; o < num_outputs; ++o) define(call.outputs()->Get(o));
    // Expressions in attributes (a cache position) are evaluated by the kernel on every run.
    if (const auto* attributes = call.attributes())
      for (const program::Attribute* attribute : *attributes)
        for (uint32_t e = 0; e < length(attribute->exprs()); ++e) {
          Interval range;
          if (!expr_range(attribute->exprs()->Get(e), m_.symbol_bounds.data(), num_symbols_, &range))
            return fail("call of %s: attribute '%s' has an expression that overflows or is malformed", op,
                        attribute->name()->c_str());
        }
    int64_t scratch_bytes = 0;
    KernelSignature signature{op, std::span<const OperandType>(types, num_inputs),
                              std::span<const OperandType>(types + num_inputs, num_outputs), &call, &scratch_bytes};
    Error kernel_error;
    if (!program_.kernels[call.op()]->check(signature, kernel_error))
      return fail("call of %s: %s", op, kernel_error.message());
    if (scratch_bytes > max_scratch_) max_scratch_ = scratch_bytes;
    return true;
  }

  // Note [Views in reverse loops]
  // A loop that walks a buffer backwards (an LSTM/GRU's reverse direction) reads row
  // L - 1 - step: over the box of the symbols' bounds that offset goes below 0 (step at its
  // maximum, L at its minimum), yet step never passes trip_count - 1. A loop index is 0 until
  // its loop runs (every run resets it) and in [0, trip_count - 1] from then on, so an affine
  // offset is lowest at step = 0 or at step = trip_count - 1, whatever the other symbols are:
  // the loader takes the lower of those two minima, for one loop index whose loop's trip count
  // depends on no loop index.
  void find_trip_counts(const flatbuffers::Vector<flatbuffers::Offset<program::Instruction>>* instructions,
                        int depth) {
    if (depth > kMaxLoopDepth) return;  // refused when the instructions are verified
    for (uint32_t i = 0; i < length(instructions); ++i)
      if (const program::Loop* loop = instructions->Get(i)->instruction_as_Loop()) {
        if (loop->index_symbol() < num_symbols_) trip_counts_[loop->index_symbol()] = loop->trip_count();
        find_trip_counts(loop->body(), depth + 1);
      }
  }

  // The lowest offset of view `index` as Note [Views in reverse loops] bounds it (unchanged
  // when the note does not apply); false on an overflow.
  bool lowest_offset_in_loops(uint32_t index, int64_t* lowest) {
    int64_t constant = 0;
    std::vector<int64_t> coefficients(num_symbols_, 0);
    auto add_expr = [&](const program::Expr* e, int64_t scale) {
      if (e == nullptr) return true;
      int64_t scaled = 0;
      if (__builtin_mul_overflow(e->constant(), scale, &scaled) || __builtin_add_overflow(constant, scaled, &constant))
        return false;
      for (uint32_t t = 0; t < length(e->terms()); ++t) {
        const program::Term* term = e->terms()->Get(t);
        if (term->symbol() >= num_symbols_ || __builtin_mul_overflow(term->coefficient(), scale, &scaled) ||
            __builtin_add_overflow(coefficients[term->symbol()], scaled, &coefficients[term->symbol()]))
          return false;
      }
      return true;
    };
    for (const program::Value* v = &value(index); v->location() == Location::View; v = &value(v->base()))
      if (!add_expr(v->view_offset(), 1)) return false;
    uint32_t step = num_symbols_;
    for (uint32_t sym = 0; sym < num_symbols_; ++sym) {
      if (coefficients[sym] >= 0 || value_source(sym) != program::SymbolSource::LoopIndex) continue;
      if (step != num_symbols_ || trip_counts_[sym] == nullptr) return true;
      step = sym;
    }
    if (step == num_symbols_) return true;
    for (uint32_t t = 0; t < length(trip_counts_[step]->terms()); ++t) {
      const uint32_t sym = trip_counts_[step]->terms()->Get(t)->symbol();
      if (sym >= num_symbols_ || value_source(sym) == program::SymbolSource::LoopIndex) return true;
    }
    // The form's minimum over the box with step = 0, and with step = trip_count - 1.
    auto form_minimum = [&](int64_t* minimum) {
      Interval range{constant, constant};
      for (uint32_t sym = 0; sym < num_symbols_; ++sym) {
        Interval product;
        if (!multiply_ranges(Interval{coefficients[sym], coefficients[sym]}, m_.symbol_bounds[sym], &product) ||
            !add_ranges(range, product, &range))
          return false;
      }
      *minimum = range.lo;
      return true;
    };
    const int64_t step_coefficient = coefficients[step];
    int64_t at_first = 0, at_last = 0;
    coefficients[step] = 0;
    if (!form_minimum(&at_first) || !add_expr(trip_counts_[step], step_coefficient) ||
        __builtin_sub_overflow(constant, step_coefficient, &constant) || !form_minimum(&at_last))
      return false;
    *lowest = std::min(at_first, at_last);
    return true;
  }

  program::SymbolSource value_source(uint32_t symbol) const { return fm_.symbols()->Get(symbol)->source(); }

  // Writing a value defines its root's memory and with it every view of that root.
  void define(uint32_t index) { defined_[m_.values[index].root] = 1; }
  bool is_defined(uint32_t index) const { return defined_[m_.values[index].root] != 0; }

  bool verify_loop(const program::Loop& loop, int depth) {
    Interval trips;
    if (!expr_range(loop.trip_count(), m_.symbol_bounds.data(), num_symbols_, &trips))
      return fail("a loop's trip count overflows at the symbols' bounds or is malformed");
    if (trips.lo < 0) return fail("a loop's trip count can be negative (%lld)", static_cast<long long>(trips.lo));
    const uint32_t index = loop.index_symbol();
    if (index >= num_symbols_) return fail("a loop's index is symbol %u of %u", index, num_symbols_);
    const program::Symbol& symbol = *fm_.symbols()->Get(index);
    if (symbol.source() != program::SymbolSource::LoopIndex)
      return fail("a loop's index symbol %u '%s' is not a LoopIndex symbol", index, symbol.name()->c_str());
    if (loop_symbols_[index]) return fail("loop index symbol %u is the index of two loops", index);
    loop_symbols_[index] = 1;
    if (trips.hi > 0 && symbol.max() < trips.hi - 1)
      return fail("loop index symbol %u '%s' has maximum %lld, the loop runs up to %lld times", index,
                  symbol.name()->c_str(), static_cast<long long>(symbol.max()), static_cast<long long>(trips.hi));
    const uint32_t carried = length(loop.carried_inputs());
    if (carried != length(loop.carried_outputs()))
      return fail("a loop carries %u inputs and %u outputs", carried, length(loop.carried_outputs()));
    for (uint32_t c = 0; c < carried; ++c) {
      const uint32_t in = loop.carried_inputs()->Get(c), out = loop.carried_outputs()->Get(c);
      if (in >= num_values_ || out >= num_values_)
        return fail("loop carried state %u names values %u and %u of %u", c, in, out, num_values_);
      if (value(in).dtype() != value(out).dtype() || length(value(in).shape()) != length(value(out).shape()))
        return fail("loop carried state %u: value %u and value %u differ in dtype or rank", c, in, out);
      if (!writable(in)) return fail("loop carried state %u: value %u is a constant or an input", c, in);
      if (!is_defined(in)) return fail("loop carried state %u: value %u is read before any instruction writes it", c, in);
    }
    std::vector<uint8_t> before = defined_;
    if (!verify_instructions(loop.body(), depth + 1)) return false;
    for (uint32_t c = 0; c < carried; ++c)
      if (!is_defined(loop.carried_outputs()->Get(c)))
        return fail("loop carried state %u: value %u is never written by the body", c, loop.carried_outputs()->Get(c));
    if (trips.lo == 0) defined_ = before;  // a loop that may not run defines nothing after it
    return true;
  }

  bool verify_instructions(const flatbuffers::Vector<flatbuffers::Offset<program::Instruction>>* instructions,
                           int depth) {
    if (depth > kMaxLoopDepth) return fail("loops nest deeper than %d", kMaxLoopDepth);
    for (uint32_t i = 0; i < length(instructions); ++i) {
      const program::Instruction& instruction = *instructions->Get(i);
      if (const program::Call* call = instruction.instruction_as_Call()) {
        if (!verify_call(*call)) return false;
      } else if (const program::Loop* loop = instruction.instruction_as_Loop()) {
        if (!verify_loop(*loop, depth)) return false;
      } else {
        return fail("instruction %u is neither a Call nor a Loop", i);
      }
    }
    return true;
  }

  Program& program_;
  Method& m_;
  const program::Method& fm_;
  Error& error_;
  const char* name_;
  uint32_t num_values_, num_symbols_;
  std::vector<uint8_t> defined_;
  std::vector<uint8_t> loop_symbols_;
  std::vector<const program::Expr*> trip_counts_;  // per loop index symbol: its loop's trip count
  size_t max_operands_ = 0;
  int64_t max_scratch_ = 0;
  uint64_t arena_needed_ = 0;  // the end of the arena's last value
};

}  // namespace

const char* value_extent(const program::Value& value, const Interval* ranges, uint32_t num_symbols, Extent* extent,
                         int* bad_dim) {
  const uint32_t dims = length(value.shape());
  Interval sizes[kMaxDims], strides[kMaxDims];
  for (uint32_t d = 0; d < dims; ++d) {
    *bad_dim = static_cast<int>(d);
    if (!expr_range(value.shape()->Get(d), ranges, num_symbols, &sizes[d])) return "an overflowing or malformed dim";
    if (sizes[d].lo < 0) return "a negative dim";
    if (value.strides() != nullptr) {
      if (!expr_range(value.strides()->Get(d), ranges, num_symbols, &strides[d]))
        return "an overflowing or malformed stride";
      if (strides[d].lo < 0) return "a negative stride";
    }
  }
  *bad_dim = -1;
  int64_t numel = 1;
  for (uint32_t d = 0; d < dims; ++d)
    if (__builtin_mul_overflow(numel, sizes[d].hi, &numel)) return "an element count past 2^63";
  extent->numel = numel;
  if (value.strides() == nullptr || numel == 0) {
    extent->elements = numel;
    return nullptr;
  }
  int64_t last = 0;  // the largest offset of an element: sum (size - 1) * stride
  for (uint32_t d = 0; d < dims; ++d) {
    int64_t span = 0;
    if (__builtin_mul_overflow(sizes[d].hi - 1, strides[d].hi, &span) || __builtin_add_overflow(last, span, &last))
      return "an extent past 2^63";
  }
  if (__builtin_add_overflow(last, 1, &extent->elements)) return "an extent past 2^63";
  return nullptr;
}

bool view_offset_range(const program::Method& method, uint32_t index, const Interval* ranges, uint32_t num_symbols,
                       Interval* offset) {
  *offset = Interval{};
  for (const program::Value* v = method.values()->Get(index); v->location() == Location::View;
       v = method.values()->Get(v->base())) {
    Interval step;
    if (!expr_range(v->view_offset(), ranges, num_symbols, &step) || !add_ranges(*offset, step, offset)) return false;
  }
  return true;
}

bool verify_program(Program& program, Error& error) {
  if (!verify_segments(program, error) || !find_kernels(program, error)) return false;
  const auto* methods = program.root->methods();
  program.methods.resize(length(methods));
  for (uint32_t i = 0; i < length(methods); ++i) {
    Method& method = program.methods[i];
    method.method = methods->Get(i);
    method.program = &program;
    MethodVerifier verifier(program, method, error);
    if (!verifier.verify()) return false;
  }
  return true;
}

}  // namespace ember::rt
