// The fused linear + cross-entropy kernel on raw pointers (Note [Fused linear
// cross-entropy] in src/ops/linear_cross_entropy.cpp). "Acc" below is float64 for
// float64 inputs and float32 otherwise.
#pragma once
#include <cstdint>

#include "ember/dtype.h"

namespace ember::cpu {

// Note [Fixed product tiles]
// A backend may round a row of a product differently depending on how many rows the call
// has and on its thread count, so the kernel never lets either vary: every product is cut into
// tiles whose shapes depend only on the problem (token_block rows, at most kLceClassTile classes,
// kLceHiddenTile hidden columns, the last tile of each shorter), each tile is one BLAS call
// made from the ember pool (where gemm keeps BLAS single-threaded), and sums over tiles run
// in a fixed order. bf16 on CPUs with AMX-BF16 goes to the tiles directly instead, each B
// packed once and shared by the products that use it (Note [Products sharing B on AMX]: a
// chunk's x by every class tile, for the logits with the weight tile as A read by rows and the
// logits stored transposed, and for the weight gradient; a weight tile by the chunk's token
// blocks for grad_x), where each element's sum is one chain in k order, so values do not
// depend on tiles, chunks or threads.
constexpr int64_t kLceClassTile = 512;
constexpr int64_t kLceHiddenTile = 256;

struct LceProblem {
  ScalarType dtype;  // of x and weight
  int64_t tokens = 0, hidden = 0, classes = 0;
  const void* x = nullptr;  // [tokens, hidden], unit column stride, row stride ld_x
  int64_t ld_x = 0;
  const void* weight = nullptr;  // [classes, hidden], unit column stride, row stride ld_weight
  int64_t ld_weight = 0;
  const void* bias = nullptr;          // [classes] in Acc, or nullptr
  const void* class_weight = nullptr;  // [classes] in Acc, or nullptr
  const int64_t* target = nullptr;     // [tokens], each in [0, classes) or == ignore_index
  int64_t ignore_index = -100;
  double label_smoothing = 0, z_loss = 0, softcap = 0;
  int64_t chunk_tokens = 0;  // a multiple of token_block
  int64_t token_block = 0;   // rows of every product tile
};

// d loss / d (cross-entropy terms) and d loss / d (z-loss term) of each token: `ce` and `z`
// for every token, or per_token[i] for both when per_token is set (reduction 'none').
struct LceGradScale {
  double ce = 0, z = 0;
  const double* per_token = nullptr;
};

// row_ce, row_lse [tokens] float64: each token's weighted, smoothed cross-entropy and its
// log-sum-exp (zero on ignored tokens). Gradients are nullptr when not wanted; grad_x
// [tokens, hidden] (dtype, contiguous) is overwritten, grad_weight [classes, hidden] and
// grad_bias [classes] (Acc, contiguous) are added to.
struct LceOutputs {
  double* row_ce = nullptr;
  double* row_lse = nullptr;
  void* grad_x = nullptr;
  void* grad_weight = nullptr;
  void* grad_bias = nullptr;
};

// Whether the products widen their float16/bf16 operands to float32 first: float16 always
// (its products would underflow the logits gradient), bf16 where ember's kernels have no bf16
// instructions at this CPU level (below AVX512-BF16), whose products widen every bf16 operand
// anyway, call by call: widened here, x is widened once a chunk and the logits gradient stays
// in float32.
bool lce_widens_operands(ScalarType dtype);

// Scratch: logits [chunk_tokens, classes] in Acc; for float16/bfloat16 inputs also float32
// grad_x_wide [chunk_tokens, hidden], and where lce_widens_operands x_wide [chunk_tokens,
// hidden]. Otherwise bf16 products run on the stored operands into float32 (the logits
// gradient rounded to bf16 in the logits buffer); widened weight tiles go into per-thread
// buffers of at most kLceClassTile * max(hidden, kLceHiddenTile) floats.
struct LceWorkspace {
  void* logits = nullptr;
  float* x_wide = nullptr;
  float* grad_x_wide = nullptr;
  // bf16 logits gradients of deferred_tokens tokens (0: none kept), lce_deferred_gradient_tokens;
  // grad_x_wide then holds that many rows.
  uint16_t* deferred_grad = nullptr;
  int64_t deferred_tokens = 0;
};

// Note [Deferred gradients]
// Where bf16 products run on AMX tiles, the weight gradient's float32 [classes, hidden]
// accumulator is read and written by every pass that adds to it: at v128256 h1024 that is
// 1 GB a 128-token chunk (the default budget's), more time than the chunk's products take;
// and grad_x packs every weight tile into panels once a chunk. So the chunks' bf16 logits
// gradients wait in a buffer of as many whole chunks as fit in twice memory_budget (2 bytes a
// class a token: as many tokens as the budget holds in float32; two chunks at least, else
// none: the loss then takes up to three times the budget), and a full group goes to grad_x
// and grad_W as one chunk of all its tokens: each element's sum is the same chain of float32
// additions (over classes for grad_x, over tokens in order for grad_W, Note [Products sharing
// B on AMX]), so the same bits, with the accumulator passed and the weight packed once a
// group. At the default budget v128256 (128-token chunks) and v32000 (512-token chunks) keep
// four chunks. Groups of two ran 0.79-0.86x of one at v128256, groups of four 0.69-0.75x
// (whole step, alternated in one process, Xeon with AMX, 2026-12-06).
int64_t lce_deferred_gradient_tokens(ScalarType dtype, int64_t chunk_tokens, int64_t classes, int64_t memory_budget);

void linear_cross_entropy(const LceProblem& problem, const LceGradScale& scale, const LceOutputs& out,
                          const LceWorkspace& workspace);

}  // namespace ember::cpu
