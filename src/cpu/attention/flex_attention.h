// The fused block-sparse attention kernels on raw pointers: forward (online softmax over
// the visited key blocks) and backward (probabilities recomputed per block from the lse).
#pragma once
#include <cstdint>

#include "ember/detail/score_tile.h"
#include "ember/dtype.h"

namespace ember::cpu::attention {

using ember::detail::TileFunction;

// A [B, H, rows, cols] operand; strides in elements (0 on a broadcast batch).
struct Operand {
  const void* data = nullptr;
  int64_t stride_b = 0, stride_h = 0, stride_row = 0, stride_col = 0;
};

// Where a [B, H, rows, cols] result goes: element (b, h, row, col) at data + b * stride_b +
// h * stride_h + row * stride_row + col, strides in elements (columns contiguous).
struct Target {
  void* data = nullptr;
  int64_t stride_b = 0, stride_h = 0, stride_row = 0;
};

// A contiguous [B, heads, rows, cols] result at data.
inline Target contiguous_target(void* data, int64_t heads, int64_t rows, int64_t cols) {
  return {data, heads * rows * cols, rows * cols, cols};
}

// Per (b, h, block) lists of visited blocks: num[(b * heads + h) * blocks + i] entries at
// indices[((b * heads + h) * blocks + i) * max_entries + j]. b and h of a mask with one
// batch or head broadcast.
struct BlockLists {
  const int32_t* num = nullptr;
  const int32_t* indices = nullptr;
  const int32_t* full_num = nullptr;  // may be null: no full blocks
  const int32_t* full_indices = nullptr;
  int64_t batch = 1, heads = 1, blocks = 0, max_entries = 0;
};

struct FlexProblem {
  ScalarType dtype = kFloat32;  // of q, k, v and the outputs
  Operand q, k, v;
  int64_t batch = 0, heads_q = 0, heads_kv = 0, q_len = 0, kv_len = 0, head_dim = 0, value_dim = 0;
  double scale = 1;
  int64_t q_block = 128, kv_block = 128;
  bool has_block_mask = false;  // without: every block is full
  BlockLists kv_lists;          // per query block (forward, dQ)
  BlockLists q_lists;           // per key block (dK, dV)
  TileFunction score_mod, mask_mod;
  // flex_forward's memory when set (Note [Flex workspace]): flex_forward_workspace_bytes(
  // problem, workspace_slots) bytes, 64-byte aligned; the forward then allocates nothing.
  void* workspace = nullptr;
  int64_t workspace_slots = 0;
};

// Bytes of a workspace with `slots` task slots, enough for flex_forward on every problem
// equal to this one but for q_len and kv_len at most its own.
int64_t flex_forward_workspace_bytes(const FlexProblem& problem, int64_t slots);

// out: [B, Hq, L, Ev] of dtype; lse: contiguous [B, Hq, L] (double for float64, else float).
void flex_forward(const FlexProblem& problem, const Target& out, void* lse);

// The gradients of flex_forward's inputs. grad_out and out: [B, Hq, L, Ev] with contiguous
// columns; lse as from flex_forward. dq [B, Hq, L, E], dk [Bkv, Hkv, S, E], dv [Bkv, Hkv, S, Ev]
// are dtype outputs (Bkv: k's batch). param_grads: num_params float64 buffers of
// param_sizes[i] values, accumulated by the score_mod's ParamGrad pass. The result is bitwise
// the same for any thread count and layout.
struct BackwardTargets {
  Target dq, dk, dv;
};
void flex_backward(const FlexProblem& problem, const Operand& out, const void* lse, const Operand& grad_out,
                   const BackwardTargets& grads, int num_params, const int64_t* param_sizes, double* const* param_grads);

// The most bytes of score-gradient tiles flex_backward keeps from its key pass for its query
// pass (Note [Kept score gradients] in flex_attention.cpp); with less it computes them again.
// Tests set 0 to compare the two ways.
int64_t kept_score_grads_limit();
void set_kept_score_grads_limit(int64_t bytes);

}  // namespace ember::cpu::attention
