// Differentiable collectives: each forward runs a collective on a copy, each backward runs
// the adjoint collective through these same functions (so double backward works too).
#include "ember/distributed/functional.h"

#include "autograd/function.h"
#include "core/tensor_impl.h"
#include "distributed/group_impl.h"
#include "ember/autograd.h"
#include "ember/distributed/collectives.h"
#include "ember/functions.h"

namespace ember::distributed::functional {
namespace {

void check_input(const Tensor& input, const char* op) { EMBER_CHECK(input.defined(), op, "input is undefined"); }

void check_differentiable(const Tensor& input, ReduceOp reduce_op, const char* op) {
  EMBER_CHECK(!autograd::should_record({input}) || reduce_op == ReduceOp::SUM || reduce_op == ReduceOp::AVG, op,
              "only ReduceOp::SUM and ReduceOp::AVG are differentiable, got ", reduce_op_name(reduce_op),
              " for an input that requires grad");
}

// `t` with its `dim` split into `parts` chunks stacked on a new leading dim, contiguous:
// the layout the flat collectives exchange.
Tensor chunks_first(const Tensor& t, int64_t parts, int64_t dim) {
  return dim == 0 ? t.contiguous() : stack(t.chunk(parts, dim), 0).contiguous();
}

// The inverse: `flat` holds `parts` chunks of shape `chunk_sizes`; concatenated along `dim`.
Tensor chunks_along(const Tensor& flat, int64_t parts, std::vector<int64_t> chunk_sizes, int64_t dim) {
  std::vector<int64_t> stacked = chunk_sizes;
  stacked.insert(stacked.begin(), parts);
  Tensor chunks = flat.view(stacked);
  if (dim == 0) {
    chunk_sizes[0] *= parts;
    return chunks.reshape(chunk_sizes);
  }
  return cat(chunks.unbind(0), dim);
}

CommOptions on(const std::shared_ptr<ProcessGroup>& group) { return CommOptions{group, false, std::nullopt}; }

// Runs an in-place collective on a contiguous copy of `input`, outside the graph.
Tensor in_place_on_copy(const Tensor& input, const std::function<void(const Tensor&)>& collective) {
  NoGradGuard no_grad;
  Tensor copy = input.contiguous().clone();
  collective(copy);
  return copy;
}

}  // namespace

Tensor all_gather_tensor(const Tensor& input, int64_t gather_dim, const std::shared_ptr<ProcessGroup>& group) {
  const char* op = "all_gather_tensor";
  check_input(input, op);
  auto g = resolve_group(group, op);
  EMBER_CHECK(input.dim() >= 1, op, "input needs at least one dimension, got a scalar");
  const int64_t dim = core::wrap_dim(gather_dim, input.dim(), op);
  const int64_t size = g->size();
  Tensor output;
  {
    NoGradGuard no_grad;
    Tensor source = input.contiguous();
    Tensor flat = empty({size * input.numel()}, input.options());
    all_gather_into_tensor(flat, source, on(g));
    output = chunks_along(flat, size, input.sizes(), dim);
  }
  autograd::record("AllGatherBackward", {input}, {output},
                   [g, dim](std::vector<Tensor>& grads, const std::vector<bool>&) {
                     return std::vector<Tensor>{reduce_scatter_tensor(grads[0], ReduceOp::SUM, dim, g)};
                   });
  return output;
}

Tensor reduce_scatter_tensor(const Tensor& input, ReduceOp reduce_op, int64_t scatter_dim,
                             const std::shared_ptr<ProcessGroup>& group) {
  const char* op = "reduce_scatter_tensor";
  check_input(input, op);
  check_differentiable(input, reduce_op, op);
  auto g = resolve_group(group, op);
  EMBER_CHECK(input.dim() >= 1, op, "input needs at least one dimension, got a scalar");
  const int64_t dim = core::wrap_dim(scatter_dim, input.dim(), op);
  const int64_t size = g->size();
  EMBER_CHECK(input.size(dim) % size == 0, op, "dim ", dim, " of input shape ", input.sizes(),
              " must divide by the group size ", size);
  std::vector<int64_t> output_sizes = input.sizes();
  output_sizes[static_cast<size_t>(dim)] /= size;
  Tensor output = empty(output_sizes, input.options());
  {
    NoGradGuard no_grad;
    distributed::reduce_scatter_tensor(output, chunks_first(input, size, dim), reduce_op, on(g));
  }
  autograd::record("ReduceScatterBackward", {input}, {output},
                   [g, dim, reduce_op, size](std::vector<Tensor>& grads, const std::vector<bool>&) {
                     Tensor gathered = all_gather_tensor(grads[0], dim, g);
                     return std::vector<Tensor>{reduce_op == ReduceOp::AVG ? gathered / static_cast<double>(size)
                                                                           : gathered};
                   });
  return output;
}

Tensor all_reduce(const Tensor& input, ReduceOp reduce_op, const std::shared_ptr<ProcessGroup>& group) {
  const char* op = "all_reduce";
  check_input(input, op);
  check_differentiable(input, reduce_op, op);
  auto g = resolve_group(group, op);
  Tensor output = in_place_on_copy(input, [&](const Tensor& copy) { distributed::all_reduce(copy, reduce_op, on(g)); });
  autograd::record("AllReduceBackward", {input}, {output},
                   [g, reduce_op](std::vector<Tensor>& grads, const std::vector<bool>&) {
                     return std::vector<Tensor>{all_reduce(grads[0], reduce_op, g)};
                   });
  return output;
}

Tensor all_to_all_single(const Tensor& input, const std::vector<int64_t>& output_split_sizes,
                         const std::vector<int64_t>& input_split_sizes, const std::shared_ptr<ProcessGroup>& group) {
  const char* op = "all_to_all_single";
  check_input(input, op);
  auto g = resolve_group(group, op);
  EMBER_CHECK(input.dim() >= 1, op, "input needs at least one dimension, got a scalar");
  std::vector<int64_t> output_sizes = input.sizes();
  if (!output_split_sizes.empty()) {
    output_sizes[0] = 0;
    for (int64_t s : output_split_sizes) output_sizes[0] += s;
  }
  Tensor output = empty(output_sizes, input.options());
  {
    NoGradGuard no_grad;
    distributed::all_to_all_single(output, input.contiguous(), output_split_sizes, input_split_sizes, on(g));
  }
  autograd::record("AllToAllBackward", {input}, {output},
                   [g, output_split_sizes, input_split_sizes](std::vector<Tensor>& grads, const std::vector<bool>&) {
                     return std::vector<Tensor>{all_to_all_single(grads[0], input_split_sizes, output_split_sizes, g)};
                   });
  return output;
}

Tensor broadcast(const Tensor& input, int src, const std::shared_ptr<ProcessGroup>& group) {
  const char* op = "broadcast";
  check_input(input, op);
  auto g = resolve_group(group, op);
  Tensor output = in_place_on_copy(input, [&](const Tensor& copy) { distributed::broadcast(copy, src, on(g)); });
  const bool is_source = g->rank() >= 0 && g->global_rank(g->rank()) == src;
  autograd::record("BroadcastBackward", {input}, {output},
                   [g, is_source](std::vector<Tensor>& grads, const std::vector<bool>&) {
                     // Only the source's input reaches the outputs: it gets every rank's gradient.
                     Tensor total = all_reduce(grads[0], ReduceOp::SUM, g);
                     return std::vector<Tensor>{is_source ? total : zeros_like(total)};
                   });
  return output;
}

}  // namespace ember::distributed::functional
