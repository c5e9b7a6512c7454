// F::pad: constant, reflect, replicate and circular padding as index_selects.
#include "ember/functions.h"
#include "ember/nn/functional.h"

namespace ember::nn::functional {
namespace {

// Where output position j of a dim of `size` reads for `mode`, after `before` padding:
// an index in [0, size), or size (the constant slice appended for kConstant).
int64_t source_index(int64_t j, int64_t before, int64_t size, const PadMode& mode) {
  const int64_t i = j - before;
  if (i >= 0 && i < size) return i;
  if (std::holds_alternative<enumtype::kReflect>(mode)) return i < 0 ? -i : 2 * (size - 1) - i;
  if (std::holds_alternative<enumtype::kReplicate>(mode)) return i < 0 ? 0 : size - 1;
  if (std::holds_alternative<enumtype::kCircular>(mode)) return ((i % size) + size) % size;
  return size;
}

const char* mode_name(const PadMode& mode) {
  static const char* const names[] = {"constant", "reflect", "replicate", "circular"};
  return names[mode.index()];
}

}  // namespace

// Each padded dim is one index_select over the input (with a constant slice appended for
// kConstant), so the backward is index_select's.
Tensor pad(const Tensor& input, const PadFuncOptions& options) {
  const auto& list = options.pad();
  const auto& mode = options.mode();
  EMBER_CHECK(input.defined(), "pad", "called on an undefined tensor");
  EMBER_CHECK(list.size() % 2 == 0 && static_cast<int64_t>(list.size()) / 2 <= input.dim(), "pad",
              "expected an even number of pad values, at most 2 per dim of the ", input.dim(), "-d input, got ",
              IntArrayRef(list));
  EMBER_CHECK(std::holds_alternative<enumtype::kConstant>(mode) || options.value() == 0, "pad",
              "a padding value is only allowed in constant mode, got mode ", mode_name(mode));
  Tensor out = input;
  for (size_t p = 0; p < list.size() / 2; ++p) {
    const int64_t dim = input.dim() - 1 - static_cast<int64_t>(p), size = out.size(dim);
    const int64_t before = list[2 * p], after = list[2 * p + 1], padded = size + before + after;
    EMBER_CHECK(padded >= 0, "pad", "padding ", IntArrayRef(list), " gives a negative size ", padded, " in dim ",
                dim, " of input ", input.sizes());
    if (before == 0 && after == 0) continue;
    const bool constant = std::holds_alternative<enumtype::kConstant>(mode);
    if (std::holds_alternative<enumtype::kReflect>(mode))
      EMBER_CHECK(before < size && after < size, "pad", "reflect padding (", before, ", ", after,
                  ") must be less than the size ", size, " of dim ", dim, " of input ", input.sizes());
    if (std::holds_alternative<enumtype::kCircular>(mode))
      EMBER_CHECK(before <= size && after <= size, "pad", "circular padding (", before, ", ", after,
                  ") must be at most the size ", size, " of dim ", dim, " of input ", input.sizes());
    if (std::holds_alternative<enumtype::kReplicate>(mode))
      EMBER_CHECK(size > 0, "pad", "replicate padding needs a non-empty dim ", dim, " of input ", input.sizes());
    std::vector<int64_t> index(static_cast<size_t>(padded));
    for (int64_t j = 0; j < padded; ++j) index[static_cast<size_t>(j)] = source_index(j, before, size, mode);
    Tensor source = out;
    if (constant) {
      std::vector<int64_t> slice = out.sizes();
      slice[static_cast<size_t>(dim)] = 1;
      source = ember::cat({out, ember::full(slice, options.value(), out.scalar_type())}, dim);
    }
    out = ember::index_select(source, dim, ember::tensor(index));
  }
  return out;
}

}  // namespace ember::nn::functional
