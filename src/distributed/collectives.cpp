// The collectives: validate on the caller's thread, then run Gloo on the group's worker.
#include "ember/distributed/collectives.h"

#include <cstring>
#include <numeric>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/transport/unbound_buffer.h>

#include "core/tensor_impl.h"
#include "distributed/group_impl.h"
#include "distributed/reduction.h"

namespace ember::distributed {
namespace {

// Slot prefixes of the operations Gloo has no algorithm for, above Gloo's own (0x01-0x08).
constexpr uint64_t kReduceScatterSlotPrefix = 0x40;
constexpr uint64_t kPointToPointSlotPrefix = 0x41;

uint64_t slot(uint64_t prefix, uint32_t tag, uint32_t step) {
  return (prefix << 56) | (static_cast<uint64_t>(tag) << 24) | step;
}

// Gloo wants a valid pointer even for zero bytes.
char* bytes_of(const Tensor& t) {
  static char empty;
  return t.numel() > 0 ? static_cast<char*>(t.data_ptr()) : &empty;
}

void check_tensor(const Tensor& t, const char* op, const char* what) {
  EMBER_CHECK(t.defined(), op, what, " is undefined");
  EMBER_CHECK(t.is_contiguous(), op, what, " must be contiguous, got shape ", t.sizes(), " with strides ",
              t.strides());
}

void check_output(const Tensor& t, const char* op, const char* what) {
  check_tensor(t, op, what);
  core::check_writable(t, op);
}

// An output written from an input of the same dtype.
void check_output_and_input(const Tensor& output, const Tensor& input, const char* op) {
  check_output(output, op, "output");
  check_tensor(input, op, "input");
  EMBER_CHECK(output.scalar_type() == input.scalar_type(), op, "output and input dtypes differ: ",
              dtype_name(output.scalar_type()), " and ", dtype_name(input.scalar_type()));
}

bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const char* a0 = static_cast<const char*>(a.data_ptr());
  const char* b0 = static_cast<const char*>(b.data_ptr());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

// Issues on `group` and waits unless async.
Work submit(ProcessGroup& group, const OpDescription& description, std::vector<Tensor> tensors,
            const CommOptions& options, std::function<void(const Execution&)> body) {
  Work work(group.impl().issue(description, std::move(tensors), options.timeout, std::move(body)));
  if (!options.async_op) work.wait();
  return work;
}

int checked_group_rank(const ProcessGroup& group, int global_rank, const char* op, const char* what) {
  const int group_rank = group.group_rank(global_rank);
  EMBER_CHECK(group_rank >= 0, op, what, " rank ", global_rank, " is not a member of group \"", group.name(),
              "\" (ranks ", group.ranks(), ")");
  return group_rank;
}

// Reduces `data` (n elements of `dtype`) over the group in place.
void gloo_all_reduce(const Execution& exec, void* data, size_t n, ScalarType dtype, ReduceOp reduce_op) {
  if (n == 0 || exec.context->size == 1) return;
  gloo::AllreduceOptions opts(exec.context);
  const size_t element = element_size(dtype);
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> outputs;
  outputs.push_back(exec.context->createUnboundBuffer(data, n * element));
  switch (element) {
    case 1: opts.setOutputs<uint8_t>(std::move(outputs)); break;
    case 4: opts.setOutputs<uint32_t>(std::move(outputs)); break;
    default: opts.setOutputs<uint64_t>(std::move(outputs)); break;
  }
  opts.setReduceFunction(reduce_function(dtype, reduce_op));
  opts.setTag(exec.tag);
  opts.setTimeout(exec.timeout);
  gloo::allreduce(opts);
}

// Ring reduce-scatter on Gloo's unbound buffers (Gloo has none with per-operation
// timeouts). `input` holds size chunks of `chunk` elements; after size - 1 steps this
// rank's chunk, reduced over all ranks, is in `output`. At step s a rank sends its
// partial sum of chunk (rank - s - 1) to the right and adds its own input to the partial
// sum of chunk (rank - s - 2) coming from the left.
void ring_reduce_scatter(const Execution& exec, const char* input, char* output, size_t chunk, ScalarType dtype,
                         ReduceOp reduce_op) {
  const int size = exec.context->size;
  const int rank = exec.context->rank;
  const size_t chunk_bytes = chunk * element_size(dtype);
  if (size == 1) {
    std::memcpy(output, input, chunk_bytes);
    return;
  }
  if (chunk == 0) return;
  const auto reduce = reduce_function(dtype, reduce_op);
  const int right = (rank + 1) % size;
  const int left = (rank + size - 1) % size;
  auto chunk_of = [&](int block) { return input + static_cast<size_t>((block % size + size) % size) * chunk_bytes; };
  std::vector<char> send_buffer(chunk_of(rank - 1), chunk_of(rank - 1) + chunk_bytes);
  std::vector<char> recv_buffer(chunk_bytes);
  auto send = exec.context->createUnboundBuffer(send_buffer.data(), chunk_bytes);
  auto recv = exec.context->createUnboundBuffer(recv_buffer.data(), chunk_bytes);
  for (int step = 0; step < size - 1; ++step) {
    const uint64_t step_slot = slot(kReduceScatterSlotPrefix, exec.tag, static_cast<uint32_t>(step));
    recv->recv(left, step_slot);
    send->send(right, step_slot);
    if (!recv->waitRecv(exec.timeout) || !send->waitSend(exec.timeout))
      throw std::runtime_error("reduce-scatter step aborted");
    char* destination = step == size - 2 ? output : send_buffer.data();
    reduce(destination, recv_buffer.data(), chunk_of(rank - step - 2), chunk);
  }
}

// Runs `reduce` on float32 copies of 16-bit float data, the data itself otherwise.
template <typename F>
void in_reduction_dtype(ScalarType dtype, const void* input, size_t input_n, void* output, size_t output_n,
                        F&& reduce) {
  if (reduction_dtype(dtype) == dtype) {
    reduce(input, output);
    return;
  }
  std::vector<float> wide_input(input_n);
  widen(input, dtype, wide_input.data(), input_n);
  std::vector<float> wide_output(output_n);
  reduce(static_cast<const void*>(wide_input.data()), static_cast<void*>(wide_output.data()));
  narrow(wide_output.data(), output, dtype, output_n);
}

}  // namespace

Work all_reduce(const Tensor& tensor, ReduceOp reduce_op, const CommOptions& options) {
  const char* op = "all_reduce";
  auto group = resolve_group(options.group, op);
  check_output(tensor, op, "tensor");
  check_reducible(tensor.scalar_type(), reduce_op, op);
  tensor.storage().bump_version();
  const ScalarType dtype = tensor.scalar_type();
  const size_t n = static_cast<size_t>(tensor.numel());
  char* data = bytes_of(tensor);
  return submit(*group, {op, tensor.sizes(), tensor.sizes(), dtype}, {tensor}, options,
                [=](const Execution& exec) {
                  in_reduction_dtype(dtype, data, n, data, n, [&](const void* in, void* out) {
                    const ScalarType wide = reduction_dtype(dtype);
                    if (in != out) std::memcpy(out, in, n * element_size(wide));
                    gloo_all_reduce(exec, out, n, wide, reduce_op);
                    if (reduce_op == ReduceOp::AVG) divide_by_size(out, wide, n, exec.context->size);
                  });
                });
}

Work all_gather_into_tensor(const Tensor& output, const Tensor& input, const CommOptions& options) {
  const char* op = "all_gather_into_tensor";
  auto group = resolve_group(options.group, op);
  check_output_and_input(output, input, op);
  const int size = group->size();
  EMBER_CHECK(output.numel() == size * input.numel(), op, "output must hold ", size, " x ", input.numel(),
              " elements (the group size times the input's), got shape ", output.sizes(), " for input shape ",
              input.sizes());
  const size_t input_bytes = input.nbytes();
  const bool in_place = input.numel() > 0 && group->rank() >= 0 &&
                        input.data_ptr() == bytes_of(output) + static_cast<size_t>(group->rank()) * input_bytes;
  EMBER_CHECK(in_place || !overlaps(output, input), op,
              "input overlaps output other than as this rank's slice of it");
  output.storage().bump_version();
  char* out = bytes_of(output);
  const char* in = bytes_of(input);
  return submit(*group, {op, input.sizes(), output.sizes(), input.scalar_type()}, {output, input}, options,
                [=](const Execution& exec) {
                  if (input_bytes == 0) return;
                  if (exec.context->size == 1) {
                    if (!in_place) std::memcpy(out, in, input_bytes);
                    return;
                  }
                  gloo::AllgatherOptions opts(exec.context);
                  if (!in_place) opts.setInput<char>(const_cast<char*>(in), input_bytes);
                  opts.setOutput<char>(out, input_bytes * static_cast<size_t>(exec.context->size));
                  opts.setTag(exec.tag);
                  opts.setTimeout(exec.timeout);
                  gloo::allgather(opts);
                });
}

Work reduce_scatter_tensor(const Tensor& output, const Tensor& input, ReduceOp reduce_op,
                           const CommOptions& options) {
  const char* op = "reduce_scatter_tensor";
  auto group = resolve_group(options.group, op);
  check_output_and_input(output, input, op);
  check_reducible(input.scalar_type(), reduce_op, op);
  const int size = group->size();
  EMBER_CHECK(input.numel() == size * output.numel(), op, "input must hold ", size, " x ", output.numel(),
              " elements (the group size times the output's), got shape ", input.sizes(), " for output shape ",
              output.sizes());
  EMBER_CHECK(!overlaps(output, input), op, "output overlaps input");
  output.storage().bump_version();
  const ScalarType dtype = input.scalar_type();
  const size_t chunk = static_cast<size_t>(output.numel());
  char* out = bytes_of(output);
  const char* in = bytes_of(input);
  return submit(*group, {op, input.sizes(), output.sizes(), dtype}, {output, input}, options,
                [=](const Execution& exec) {
                  const size_t total = chunk * static_cast<size_t>(exec.context->size);
                  in_reduction_dtype(dtype, in, total, out, chunk, [&](const void* wide_in, void* wide_out) {
                    const ScalarType wide = reduction_dtype(dtype);
                    ring_reduce_scatter(exec, static_cast<const char*>(wide_in), static_cast<char*>(wide_out), chunk,
                                        wide, reduce_op);
                    if (reduce_op == ReduceOp::AVG) divide_by_size(wide_out, wide, chunk, exec.context->size);
                  });
                });
}

Work broadcast(const Tensor& tensor, int src, const CommOptions& options) {
  const char* op = "broadcast";
  auto group = resolve_group(options.group, op);
  check_output(tensor, op, "tensor");
  const int root = checked_group_rank(*group, src, op, "source");
  tensor.storage().bump_version();
  char* data = bytes_of(tensor);
  const size_t bytes = tensor.nbytes();
  return submit(*group, {op, tensor.sizes(), tensor.sizes(), tensor.scalar_type()}, {tensor}, options,
                [=](const Execution& exec) {
                  if (bytes == 0 || exec.context->size == 1) return;
                  gloo::BroadcastOptions opts(exec.context);
                  opts.setOutput<char>(data, bytes);
                  opts.setRoot(root);
                  opts.setTag(exec.tag);
                  opts.setTimeout(exec.timeout);
                  gloo::broadcast(opts);
                });
}

Work all_to_all_single(const Tensor& output, const Tensor& input, const std::vector<int64_t>& output_split_sizes,
                       const std::vector<int64_t>& input_split_sizes, const CommOptions& options) {
  const char* op = "all_to_all_single";
  auto group = resolve_group(options.group, op);
  check_output_and_input(output, input, op);
  EMBER_CHECK(output.dim() >= 1 && input.dim() >= 1, op, "input and output need at least one dimension, got shapes ",
              input.sizes(), " and ", output.sizes());
  EMBER_CHECK(!overlaps(output, input), op, "output overlaps input");
  const int64_t size = group->size();
  const int64_t row = input.size(0) > 0 ? input.numel() / input.size(0) : 0;
  const int64_t output_row = output.size(0) > 0 ? output.numel() / output.size(0) : 0;
  EMBER_CHECK(input.size(0) == 0 || output.size(0) == 0 || row == output_row, op,
              "input and output rows differ in size: shapes ", input.sizes(), " and ", output.sizes());
  // Splits in rows along dim 0, then in bytes for Gloo.
  auto splits_of = [&](const std::vector<int64_t>& given, const Tensor& t, const char* what) {
    std::vector<int64_t> splits = given;
    if (splits.empty()) {
      EMBER_CHECK(t.size(0) % size == 0, op, what, " dim 0 (", t.size(0), ") must divide by the group size ", size,
                  " when no split sizes are given");
      splits.assign(static_cast<size_t>(size), t.size(0) / size);
    }
    EMBER_CHECK(static_cast<int64_t>(splits.size()) == size, op, what, " split sizes ", splits, " must have ", size,
                " entries (the group size)");
    for (int64_t s : splits) EMBER_CHECK(s >= 0, op, what, " split sizes ", splits, " must not be negative");
    EMBER_CHECK(std::accumulate(splits.begin(), splits.end(), int64_t{0}) == t.size(0), op, what, " split sizes ",
                splits, " must add up to dim 0 of the ", what, " (", t.size(0), ")");
    const int64_t row_bytes = (row > 0 ? row : output_row) * static_cast<int64_t>(t.element_size());
    for (auto& s : splits) s *= row_bytes;
    return splits;
  };
  std::vector<int64_t> input_bytes = splits_of(input_split_sizes, input, "input");
  std::vector<int64_t> output_bytes = splits_of(output_split_sizes, output, "output");
  output.storage().bump_version();
  char* out = bytes_of(output);
  char* in = bytes_of(input);
  return submit(*group, {op, input.sizes(), output.sizes(), input.scalar_type()}, {output, input}, options,
                [=](const Execution& exec) {
                  if (exec.context->size == 1) {
                    std::memcpy(out, in, static_cast<size_t>(input_bytes[0]));
                    return;
                  }
                  gloo::AlltoallvOptions opts(exec.context);
                  opts.setInput<char>(in, input_bytes);
                  opts.setOutput<char>(out, output_bytes);
                  opts.setTag(exec.tag);
                  opts.setTimeout(exec.timeout);
                  gloo::alltoallv(opts);
                });
}

Work barrier(const CommOptions& options) {
  const char* op = "barrier";
  auto group = resolve_group(options.group, op);
  return submit(*group, {op, {}, {}, kUInt8}, {}, options, [](const Execution& exec) {
    if (exec.context->size == 1) return;
    gloo::BarrierOptions opts(exec.context);
    opts.setTag(exec.tag);
    opts.setTimeout(exec.timeout);
    gloo::barrier(opts);
  });
}

namespace {

Work point_to_point(const Tensor& tensor, int peer, int64_t tag, const CommOptions& options, bool is_send) {
  const char* op = is_send ? "send" : "recv";
  auto group = resolve_group(options.group, op);
  if (is_send) {
    check_tensor(tensor, op, "tensor");
  } else {
    check_output(tensor, op, "tensor");
    tensor.storage().bump_version();
  }
  const int peer_rank = checked_group_rank(*group, peer, op, is_send ? "destination" : "source");
  EMBER_CHECK(peer_rank != group->rank(), op, "rank ", peer, " cannot ", op, is_send ? " to" : " from", " itself");
  EMBER_CHECK(tag >= 0 && tag <= 0xffffffffLL, op, "tag must be in [0, 2^32), got ", tag);
  char* data = bytes_of(tensor);
  const size_t bytes = tensor.nbytes();
  const uint64_t p2p_slot = (kPointToPointSlotPrefix << 56) | static_cast<uint64_t>(tag);
  Work work(group->impl().issue_point_to_point(
      {op, tensor.sizes(), tensor.sizes(), tensor.scalar_type()}, tensor, peer, options.timeout,
      [=](const std::shared_ptr<gloo::Context>& context) -> std::function<void(std::chrono::milliseconds)> {
        std::shared_ptr<gloo::transport::UnboundBuffer> buffer = context->createUnboundBuffer(data, bytes);
        if (is_send) {
          buffer->send(peer_rank, p2p_slot);
        } else {
          buffer->recv(peer_rank, p2p_slot);
        }
        return [buffer, is_send](std::chrono::milliseconds timeout) {
          if (!(is_send ? buffer->waitSend(timeout) : buffer->waitRecv(timeout)))
            throw std::runtime_error("point-to-point operation aborted");
        };
      }));
  if (!options.async_op) work.wait();
  return work;
}

}  // namespace

Work send(const Tensor& tensor, int dst, int64_t tag, const CommOptions& options) {
  return point_to_point(tensor, dst, tag, options, true);
}

Work recv(const Tensor& tensor, int src, int64_t tag, const CommOptions& options) {
  return point_to_point(tensor, src, tag, options, false);
}

}  // namespace ember::distributed
