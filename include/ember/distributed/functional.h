// Differentiable collectives (torch.distributed._functional_collectives / nn.functional):
// each returns a new tensor and records a backward that runs the adjoint collective, so
// every rank of the group must run backward through the same collectives in the same order.
//
//   all_gather_tensor      backward: reduce_scatter (sum) of the gradient
//   reduce_scatter_tensor  backward: all_gather of the gradient (/ size for AVG)
//   all_reduce             backward: all_reduce of the gradient (SUM or AVG)
//   all_to_all_single      backward: all_to_all_single of the gradient with the splits swapped
//   broadcast              backward: the gradients of all ranks summed on `src` (zero elsewhere)
#pragma once
#include <memory>
#include <vector>

#include "ember/distributed/process_group.h"
#include "ember/tensor.h"

namespace ember::distributed::functional {

// The inputs of all ranks concatenated along `gather_dim` (same shapes on every rank).
Tensor all_gather_tensor(const Tensor& input, int64_t gather_dim = 0,
                         const std::shared_ptr<ProcessGroup>& group = nullptr);

// `op` over the inputs of all ranks, split into group-size chunks along `scatter_dim`
// (divisible by the group size); returns this rank's chunk. SUM and AVG are differentiable.
Tensor reduce_scatter_tensor(const Tensor& input, ReduceOp op = ReduceOp::SUM, int64_t scatter_dim = 0,
                             const std::shared_ptr<ProcessGroup>& group = nullptr);

// `op` over the inputs of all ranks. SUM and AVG are differentiable.
Tensor all_reduce(const Tensor& input, ReduceOp op = ReduceOp::SUM,
                  const std::shared_ptr<ProcessGroup>& group = nullptr);

// As distributed::all_to_all_single along dim 0, returning the output. Every rank passes
// its own splits; empty splits mean equal ones.
Tensor all_to_all_single(const Tensor& input, const std::vector<int64_t>& output_split_sizes = {},
                         const std::vector<int64_t>& input_split_sizes = {},
                         const std::shared_ptr<ProcessGroup>& group = nullptr);

// The input of global rank `src` (every rank passes a tensor of the same shape and dtype).
Tensor broadcast(const Tensor& input, int src, const std::shared_ptr<ProcessGroup>& group = nullptr);

}  // namespace ember::distributed::functional
