// Collectives and point-to-point operations (torch.distributed), in place on contiguous
// tensors. Every call returns a Work: with async_op the operation is queued on the
// group's worker thread and the Work completes later; otherwise the call waits and the
// Work is already complete. Bad arguments throw Error at the call; communication
// failures and timeouts throw CommError (from the call, or from Work::wait).
//
// Dtypes: every dtype moves (gather, scatter, broadcast, all-to-all, send/recv); the
// reductions take float32, float64, bfloat16, float16, int32, int64, int8 and uint8.
// bfloat16 and float16 reduce in float32: the tensor is widened, reduced and rounded once
// (twice the bytes on the wire, one rounding instead of one per step of the ring).
// ReduceOp::AVG needs a floating dtype.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "ember/distributed/process_group.h"
#include "ember/tensor.h"

namespace ember::distributed {

struct CommOptions {
  std::shared_ptr<ProcessGroup> group{};  // null: the default group
  bool async_op = false;
  std::optional<std::chrono::milliseconds> timeout{};  // overrides the group's timeout
};

// tensor <- op over the tensors of all ranks.
Work all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::SUM, const CommOptions& options = {});

// output <- the inputs of all ranks concatenated in rank order (flattened):
// output.numel() == group size * input.numel(). `input` may be output's own slice for this
// rank (an in-place gather); other overlaps are errors.
Work all_gather_into_tensor(const Tensor& output, const Tensor& input, const CommOptions& options = {});

// output <- slice `rank` of (op over the inputs of all ranks), where input.numel() ==
// group size * output.numel().
Work reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::SUM,
                           const CommOptions& options = {});

// tensor <- the tensor of global rank `src`.
Work broadcast(const Tensor& tensor, int src, const CommOptions& options = {});

// Rank i sends rows [input_offsets[j], +input_split_sizes[j]) of input (along dim 0) to
// rank j, which stores them at its output_offsets[i]. Empty split sizes mean equal splits.
Work all_to_all_single(const Tensor& output, const Tensor& input, const std::vector<int64_t>& output_split_sizes = {},
                       const std::vector<int64_t>& input_split_sizes = {}, const CommOptions& options = {});

Work barrier(const CommOptions& options = {});

// Point-to-point with global ranks `dst` / `src`; the receiver's tensor has the sender's
// byte size and a matching `tag` (0 <= tag < 2^32). Posted at once, so an async send and
// an async recv on the same group do not wait for each other.
Work send(const Tensor& tensor, int dst, int64_t tag = 0, const CommOptions& options = {});
Work recv(const Tensor& tensor, int src, int64_t tag = 0, const CommOptions& options = {});

}  // namespace ember::distributed
