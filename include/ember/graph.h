// Graph capture and replay: record the kernels of a piece of eager code once, then run them
// again without per-op dispatch (libtorch's at::cuda::CUDAGraph, on the CPU).
//
//   ember::Graph graph;
//   graph.capture([&] { static_out = model->forward(static_in); });
//   static_in.copy_(next_batch);  // same tensor, same address: the graph reads it
//   graph.replay();               // static_out now holds the result for next_batch
//
// Semantics are CUDA graphs': capture runs the ops' host code (checks, shapes, autograd) but
// launches no kernel, so the captured tensors hold no results until the first replay. Replay
// runs the recorded kernels, in order, on the addresses the capture used: inputs and outputs
// are static tensors; copy new data into the inputs, read the outputs after replay. Memory
// allocated during the capture belongs to the graph and lives until reset() or destruction.
//
// Where ember differs from at::cuda::CUDAGraph:
// - capture_begin() takes no memory pool or capture mode; every allocation of a capture stays
//   the graph's own (no pool shared between graphs, no reuse of memory freed inside the
//   capture), so a graph holds the sum of its temporaries.
// - Violations are ember::Error, never silent: nested capture, replay of an empty graph, a
//   host read of tensor values during capture (item(), nonzero, an op whose result depends on
//   values), an op whose kernel does not go through the recorder, and at replay a captured
//   tensor whose storage, sizes or strides changed (set_data, Storage::reallocate, a view
//   re-pointed) or a parameter whose .grad was replaced or set to None since capture.
// - Random ops draw from the default generator at replay: each replay reserves fresh Philox
//   offsets exactly as the same ops run eagerly would, so replay equals eager from the same
//   generator state (CUDA graphs advance the philox offset per replay the same way).
// - Not capturable yet (they throw at capture, naming themselves): flex_attention and
//   create_block_mask, the fused linear_cross_entropy, as_strided's backward, nn::init. For a
//   decode step, GPT::decode_step and CausalLM::decode_step (a tensor position over a
//   fixed-size cache; nn::attention::decode_attention reads it when its kernel runs) replace
//   forward_cached, whose shapes grow with the cache; models::CapturedDecoder captures and
//   replays a pretrained model's step.
// - An index out of range at replay (embedding, index_select, gather) throws from replay()
//   before writing that op's output; kernels that ran before it keep their results.
//
// Whole training step (PyTorch's whole-network capture recipe):
//   1. Warm up: run a few eager steps (zero_grad, forward, backward, step) on the static input,
//      so that optimizer state exists and GEMM shapes are tuned before the capture.
//   2. optimizer.zero_grad(/*set_to_none=*/true); then capture forward, backward and
//      optimizer.step(): backward allocates the .grad tensors inside the capture, so each
//      replay overwrites them rather than adding to them.
//   3. Per step: static_input.copy_(batch); static_target.copy_(target); graph.replay();
//      read static_loss. Do not call zero_grad between replays (the grads are static: a
//      replaced .grad makes replay() throw). Adam/AdamW need capturable(true), which keeps
//      the step count in a tensor that the replayed kernels advance; SGD needs nothing.
//      Hyperparameters (lr, betas, weight decay) are read at capture and fixed in the graph:
//      after a scheduler changes the lr, reset() and capture again.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>

namespace ember {

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Starts recording the kernels this thread launches. Throws when a capture is already
  // recording on this thread (nested capture) or this graph already holds one (reset() first).
  void capture_begin();
  // Stops recording. Throws when this graph is not the one recording on this thread.
  void capture_end();
  // capture_begin(), body(), capture_end(); if body throws, the capture is dropped (the graph
  // is left empty) and the exception propagates.
  void capture(const std::function<void()>& body);
  // Runs the recorded kernels. Throws when nothing was captured, when called during a
  // capture, or when a captured tensor changed since capture (see above).
  void replay();
  // Drops the recording and the memory it owns; the graph can capture again.
  void reset();

  // Kernels recorded (ember addition, for tests and benchmarks).
  size_t num_kernels() const;

 private:
  std::unique_ptr<struct GraphState> state_;
};

// Whether a graph capture is recording on this thread (torch.cuda.is_current_stream_capturing).
bool is_current_stream_capturing();

}  // namespace ember
