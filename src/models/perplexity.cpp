// Perplexity of a pretrained model over a token sequence, as llama-perplexity measures it.
#include <cmath>

#include "ember/autograd.h"
#include "ember/functions.h"
#include "ember/models/pretrained.h"

namespace ember::models {
namespace F = ember::nn::functional;

PerplexityResult perplexity(CausalLMImpl& model, const std::vector<int64_t>& ids, int64_t ctx) {
  EMBER_CHECK(ctx >= 2 && ctx <= model.max_seq_len(), "perplexity", "ctx ", ctx,
              " must be in [2, max_seq_len = ", model.max_seq_len(), "]");
  const int64_t windows = static_cast<int64_t>(ids.size()) / ctx;
  EMBER_CHECK(windows > 0, "perplexity", "the text has ", ids.size(), " tokens, fewer than one window of ", ctx);
  NoGradGuard no_grad;
  // The head in float32 once for all windows; each window's sum of -log p through the fused
  // loss (no [ctx, vocab] logits), summed in float64 across windows.
  const Tensor head = model.lm_head_weight().to(kFloat32);
  double total = 0;
  for (int64_t w = 0; w < windows; ++w) {
    std::vector<int64_t> window(ids.begin() + w * ctx, ids.begin() + (w + 1) * ctx);
    const Tensor tokens = tensor(window, kInt64).view({1, ctx});
    const Tensor h = model.hidden(tokens).to(kFloat32).view({ctx, -1});
    // Position i predicts token i + 1: tokens 2..ctx of the window are scored.
    const Tensor sum = F::linear_cross_entropy(h.narrow(0, 0, ctx - 1), head, tokens.view({ctx}).narrow(0, 1, ctx - 1),
                                               nn::LinearCrossEntropyFuncOptions().reduction(kSum));
    total += sum.item<double>();
  }
  PerplexityResult result;
  result.tokens = windows * (ctx - 1);
  result.nll = total / static_cast<double>(result.tokens);
  result.perplexity = std::exp(result.nll);
  return result;
}

}  // namespace ember::models
