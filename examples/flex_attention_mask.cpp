// Example 3: flex attention with a mask of your own. The mask_mod is a plain lambda over
// (batch, head, query, key) indices; create_block_mask turns it into a block-sparse mask so
// that the kernel skips the blocks it hides. Here: each query sees the keys of its own
// 64-token "chunk" and of the chunk before it. The program checks the result against
// attention written out densely with the same mask.
#include <ember/ember.h>

#include <cmath>
#include <iostream>

int main() {
  namespace attention = ember::nn::attention;
  ember::manual_seed(0);
  const int64_t batch = 1, heads = 2, length = 512, head_dim = 32;

  auto chunk_mask = [](auto /*b*/, auto /*h*/, auto q, auto kv) {
    return kv <= q && q / 64 - kv / 64 <= 1;  // causal, this chunk and the one before
  };
  const attention::BlockMask block_mask = attention::create_block_mask(chunk_mask, batch, heads, length, length);
  std::cout << "block mask: " << block_mask.sparsity() << "% of the blocks skipped\n"
            << block_mask.to_string(8) << "\n";

  const ember::Tensor q = ember::randn({batch, heads, length, head_dim});
  const ember::Tensor k = ember::randn({batch, heads, length, head_dim});
  const ember::Tensor v = ember::randn({batch, heads, length, head_dim});
  const ember::Tensor out = attention::flex_attention(q, k, v, block_mask);

  // The same attention written out densely: softmax(q k^T / sqrt(E), hidden scores at -inf) v.
  const ember::Tensor visible = attention::create_mask(chunk_mask, batch, heads, length, length);
  const ember::Tensor scores = q.matmul(k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
  const ember::Tensor reference =
      ember::softmax(scores.masked_fill(visible.logical_not(), -INFINITY), -1).matmul(v);
  const double error = (out - reference).abs().max().item<double>();
  std::cout << "largest difference from dense attention: " << error << "\n";
  return error < 1e-4 ? 0 : 1;
}
