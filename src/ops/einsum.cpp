// einsum: parses the equation, lines every operand up on one list of dims (output dims in
// output order, then the summed ones), and contracts the operands pairwise with bmm, as
// ATen's einsum does (aten/src/ATen/native/Linear.cpp). Autograd comes from the composing
// view, sum, reshape and bmm ops.
#include <algorithm>
#include <array>
#include <numeric>
#include <string>

#include "ops/op_utils.h"

namespace ember {
namespace {

constexpr const char* kOp = "einsum";
constexpr int kLabels = 52;  // 'A'-'Z' then 'a'-'z': PyTorch's order for the implicit output
constexpr int kEllipsis = -1;

bool is_label(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
int label_index(char c) { return c <= 'Z' ? c - 'A' : c - 'a' + 26; }
char label_char(int index) { return static_cast<char>(index < 26 ? 'A' + index : 'a' + index - 26); }

// The subscripts of one term as label indices, kEllipsis for "...". `offset` is the term's
// position in the equation, for errors.
std::vector<int> parse_term(const std::string& term, size_t offset, const std::string& what) {
  std::vector<int> labels;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == '.') {
      EMBER_CHECK(term.compare(i, 3, "...") == 0, kOp, "found '.' for ", what,
                  " that is not part of any ellipsis (\"...\") at index ", offset + i);
      EMBER_CHECK(!ellipsis, kOp, what, " has more than one ellipsis (\"...\")");
      ellipsis = true;
      labels.push_back(kEllipsis);
      i += 2;
      continue;
    }
    EMBER_CHECK(is_label(c), kOp, "invalid subscript '", std::string(1, c), "' given at index ", offset + i,
                " in the equation string, subscripts must be in [a-zA-Z]");
    labels.push_back(label_index(c));
  }
  return labels;
}

// The subscript at layout dim `d`, for errors ("j", or "...[1]" for the ellipsis' second dim).
std::string subscript_name(const std::array<int64_t, kLabels>& layout_of, int64_t d, int64_t ellipsis_at) {
  for (int label = 0; label < kLabels; ++label)
    if (layout_of[label] == d) return std::string(1, label_char(label));
  return "...[" + std::to_string(d - ellipsis_at) + "]";
}

std::string remove_spaces(std::string_view equation) {
  std::string out;
  for (char c : equation)
    if (c != ' ') out.push_back(c);
  return out;
}

// One operand during contraction: a tensor with every dim of the layout (size 1 where the
// operand has none) and which dims it really carries.
struct Operand {
  Tensor tensor;
  std::vector<bool> has_dim;
};

// Sums the dims of `a` in `dims`, keeping them as size 1.
Tensor sum_keep(const Tensor& a, const std::vector<int64_t>& dims) {
  return dims.empty() ? a : a.sum(dims, /*keepdim=*/true);
}

// a * b summed over `sum_dims`, both of rank n with equal or size-1 dims, through one bmm:
// a as [batch, left, summed], b as [batch, summed, right]. Summed and size-1 dims stay as
// size 1 in the result.
Tensor sum_product_pair(Tensor a, Tensor b, const std::vector<bool>& sum_dim) {
  const int64_t n = a.dim();
  std::vector<int64_t> a_only_sums, b_only_sums;
  for (int64_t d = 0; d < n; ++d) {
    if (!sum_dim[d]) continue;
    if (a.size(d) != 1 && b.size(d) == 1) a_only_sums.push_back(d);
    if (b.size(d) != 1 && a.size(d) == 1) b_only_sums.push_back(d);
  }
  a = sum_keep(a, a_only_sums);
  b = sum_keep(b, b_only_sums);
  std::vector<int64_t> batch, left, right, summed, trivial;
  for (int64_t d = 0; d < n; ++d) {
    const bool in_a = a.size(d) != 1, in_b = b.size(d) != 1;
    if (sum_dim[d] && in_a && in_b) summed.push_back(d);
    else if (!sum_dim[d] && in_a && in_b) batch.push_back(d);
    else if (!sum_dim[d] && in_a) left.push_back(d);
    else if (!sum_dim[d] && in_b) right.push_back(d);
    else trivial.push_back(d);
  }
  auto extent = [](const Tensor& t, const std::vector<int64_t>& dims) {
    int64_t size = 1;
    for (int64_t d : dims) size *= t.size(d);
    return size;
  };
  auto concat = [](std::initializer_list<const std::vector<int64_t>*> parts) {
    std::vector<int64_t> out;
    for (const auto* part : parts) out.insert(out.end(), part->begin(), part->end());
    return out;
  };
  const int64_t batch_size = extent(a, batch), left_size = extent(a, left), right_size = extent(b, right),
                summed_size = extent(a, summed);
  const Tensor a3 = a.permute(concat({&batch, &left, &summed, &right, &trivial}))
                        .reshape({batch_size, left_size, summed_size});
  const Tensor b3 = b.permute(concat({&batch, &summed, &right, &left, &trivial}))
                        .reshape({batch_size, summed_size, right_size});
  const std::vector<int64_t> order = concat({&batch, &left, &right, &summed, &trivial});
  std::vector<int64_t> sizes;
  for (int64_t d : order) {
    const bool kept = std::find(summed.begin(), summed.end(), d) == summed.end();
    sizes.push_back(kept ? std::max(a.size(d), b.size(d)) : 1);
  }
  std::vector<int64_t> inverse(n);
  for (int64_t i = 0; i < n; ++i) inverse[order[i]] = i;
  return a3.bmm(b3).reshape(sizes).permute(inverse);
}

}  // namespace

Tensor einsum(std::string_view equation_view, const std::vector<Tensor>& tensors, std::optional<IntArrayRef> path) {
  EMBER_CHECK(!tensors.empty(), kOp, "must provide at least one operand");
  const std::string equation = remove_spaces(equation_view);
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);

  // ---- parse the inputs ----
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    const std::string term = lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::string what = "operand " + std::to_string(terms.size());
    EMBER_CHECK(terms.size() < tensors.size(), kOp, "fewer operands were provided (", tensors.size(),
                ") than specified in the equation \"", equation, "\"");
    terms.push_back(parse_term(term, start, what));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  EMBER_CHECK(terms.size() == tensors.size(), kOp, "more operands were provided (", tensors.size(),
              ") than specified in the equation \"", equation, "\" (", terms.size(), ")");

  std::array<int64_t, kLabels> label_count{};
  int64_t ellipsis_dims = 0;
  bool any_ellipsis = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Tensor& t = tensors[i];
    EMBER_CHECK(t.defined(), kOp, "operand ", i, " is an undefined tensor");
    const auto& term = terms[i];
    const bool has_ellipsis = std::count(term.begin(), term.end(), kEllipsis) > 0;
    const int64_t labels = static_cast<int64_t>(term.size()) - (has_ellipsis ? 1 : 0);
    EMBER_CHECK(has_ellipsis ? labels <= t.dim() : labels == t.dim(), kOp, "the number of subscripts in the equation (",
                labels, ") does not match the number of dimensions (", t.dim(), ") for operand ", i,
                has_ellipsis ? "" : " and no ellipsis was given");
    if (has_ellipsis) {
      any_ellipsis = true;
      ellipsis_dims = std::max(ellipsis_dims, t.dim() - labels);
    }
    for (int label : term)
      if (label != kEllipsis) ++label_count[label];
  }

  // ---- the output: dims in output order (the ellipsis block where it stands), then the summed labels ----
  // layout_of[label] is the label's dim in the common layout; the ellipsis takes ellipsis_dims dims from ellipsis_at.
  std::array<int64_t, kLabels> layout_of;
  layout_of.fill(-1);
  int64_t next = 0, ellipsis_at = -1;
  if (arrow == std::string::npos) {
    if (any_ellipsis) {
      ellipsis_at = 0;
      next = ellipsis_dims;
    }
    for (int label = 0; label < kLabels; ++label)
      if (label_count[label] == 1) layout_of[label] = next++;
  } else {
    const std::string rhs = equation.substr(arrow + 2);
    for (int label : parse_term(rhs, arrow + 2, "the output")) {
      if (label == kEllipsis) {
        ellipsis_at = next;
        next += ellipsis_dims;
        continue;
      }
      EMBER_CHECK(label_count[label] > 0 && layout_of[label] == -1, kOp, "output subscript ",
                  std::string(1, label_char(label)),
                  layout_of[label] != -1 ? " appears more than once in the output"
                                         : " does not appear in the equation for any input operand");
      layout_of[label] = next++;
    }
  }
  const int64_t output_dims = next;
  if (ellipsis_at == -1) {  // an ellipsis missing from the output is summed, as in PyTorch
    ellipsis_at = next;
    next += ellipsis_dims;
  }
  for (int label = 0; label < kLabels; ++label)
    if (label_count[label] > 0 && layout_of[label] == -1) layout_of[label] = next++;
  const int64_t layout_dims = next;

  // ---- each operand on the common layout: diagonals for repeated labels, size 1 where absent ----
  std::vector<Operand> operands;
  for (size_t i = 0; i < terms.size(); ++i) {
    Tensor t = tensors[i];
    const auto& term = terms[i];
    // dims_of[d]: the layout dim of t's dim d.
    std::vector<int64_t> dims_of;
    for (int label : term) {
      if (label != kEllipsis) {
        dims_of.push_back(layout_of[label]);
        continue;
      }
      const int64_t covered = t.dim() - (static_cast<int64_t>(term.size()) - 1);
      for (int64_t j = 0; j < covered; ++j) dims_of.push_back(ellipsis_at + ellipsis_dims - covered + j);
    }
    for (int64_t d = 0; d < t.dim(); ++d) {
      for (int64_t e = d + 1; e < t.dim();) {
        if (dims_of[e] != dims_of[d]) {
          ++e;
          continue;
        }
        EMBER_CHECK(t.size(d) == t.size(e), kOp, "subscript ", subscript_name(layout_of, dims_of[d], ellipsis_at),
                    " is repeated for operand ", i, " but the sizes don't match, ", t.size(d), " != ", t.size(e));
        // The diagonal lands last; move it back to d's place.
        t = t.diagonal(0, d, e).movedim(-1, d);
        dims_of.erase(dims_of.begin() + e);
      }
    }
    std::vector<int64_t> sizes(layout_dims, 1), order;
    std::vector<bool> has_dim(layout_dims, false);
    for (int64_t d = 0; d < t.dim(); ++d) has_dim[dims_of[d]] = true;
    // t's dims sorted by layout position, then reshaped with the absent dims as size 1.
    std::vector<int64_t> by_layout(t.dim());
    std::iota(by_layout.begin(), by_layout.end(), 0);
    std::sort(by_layout.begin(), by_layout.end(), [&](int64_t x, int64_t y) { return dims_of[x] < dims_of[y]; });
    for (int64_t d : by_layout) sizes[dims_of[d]] = t.size(d);
    operands.push_back({t.permute(by_layout).reshape(sizes), has_dim});
  }

  // ---- sizes must agree or be 1 across operands ----
  for (int64_t d = 0; d < layout_dims; ++d) {
    int64_t size = 1, first = -1;
    for (size_t i = 0; i < operands.size(); ++i) {
      const int64_t s = operands[i].tensor.size(d);
      if (s == 1) continue;
      if (first == -1) {
        size = s;
        first = static_cast<int64_t>(i);
        continue;
      }
      EMBER_CHECK(s == size, kOp, "operands do not broadcast: subscript ", subscript_name(layout_of, d, ellipsis_at),
                  " has size ", size, " for operand ", first, " but size ", s, " for operand ", i);
    }
  }

  // ---- contract: pairs from `path` (PyTorch's: each pair leaves, its product is appended), else left to right ----
  std::vector<int64_t> pairs;
  if (path.has_value()) {
    pairs = path->vec();
    EMBER_CHECK(pairs.size() == 2 * (operands.size() - 1), kOp, "path must hold ", operands.size() - 1,
                " pairs of operand positions for ", operands.size(), " operands, got ", pairs.size(), " values");
  } else {
    for (size_t i = 1; i < operands.size(); ++i) pairs.insert(pairs.end(), {0, 1});
  }
  auto summable = [&](int64_t d, const std::vector<size_t>& users) {
    if (d < output_dims) return false;
    for (size_t i = 0; i < operands.size(); ++i)
      if (operands[i].has_dim[d] && std::find(users.begin(), users.end(), i) == users.end()) return false;
    return true;
  };
  // Dims only one operand carries are summed before any product.
  for (size_t i = 0; i < operands.size(); ++i) {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < layout_dims; ++d)
      if (operands[i].has_dim[d] && summable(d, {i})) dims.push_back(d);
    operands[i].tensor = sum_keep(operands[i].tensor, dims);
    for (int64_t d : dims) operands[i].has_dim[d] = false;
  }
  for (size_t p = 0; p < pairs.size(); p += 2) {
    const int64_t count = static_cast<int64_t>(operands.size());
    int64_t x = pairs[p], y = pairs[p + 1];
    EMBER_CHECK(x >= 0 && x < count && y >= 0 && y < count && x != y, kOp, "path pair ", p / 2, " (", x, ", ", y,
                ") must name two different operands among the ", count, " left");
    if (x > y) std::swap(x, y);
    std::vector<bool> sum_dim(layout_dims), has_dim(layout_dims);
    for (int64_t d = 0; d < layout_dims; ++d) {
      has_dim[d] = operands[x].has_dim[d] || operands[y].has_dim[d];
      sum_dim[d] = has_dim[d] && summable(d, {static_cast<size_t>(x), static_cast<size_t>(y)});
      if (sum_dim[d]) has_dim[d] = false;
    }
    Operand product{sum_product_pair(operands[x].tensor, operands[y].tensor, sum_dim), has_dim};
    operands.erase(operands.begin() + y);
    operands.erase(operands.begin() + x);
    operands.push_back(std::move(product));
  }

  // Only the output dims are left with sizes above 1; the summed ones are size 1.
  const Tensor& result = operands.front().tensor;
  std::vector<int64_t> out_sizes(result.sizes().begin(), result.sizes().begin() + output_dims);
  return result.reshape(out_sizes);
}

}  // namespace ember
