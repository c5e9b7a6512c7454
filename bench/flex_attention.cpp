// `ember bench flex_attention` (alias `flex`): flex_attention with a causal sliding window
// against dense scaled_dot_product_attention given the same mask as attn_mask, and the BLAS
// sgemm rate of this machine, measured side by side. `ember bench flex_attention_decode`
// (alias `flex-decode`): one decoding step.

#include <cmath>

#include "bench.h"
#include "ember/ember.h"
#include "ember/nn/attention.h"

namespace ember::bench {
namespace {

namespace att = ember::nn::attention;

double sgemm_gflops() {
  const int64_t n = 2048;
  return 2.0 * n * n * n / blas_sgemm_ms(n, n, n, 3) / 1e6;
}

struct Row {
  std::string name;
  int64_t seq;
  int64_t window;  // 0: causal
  ScalarType dtype = kFloat32;
  bool backward = false;
};

// Visible (query, key) pairs of a causal window over seq positions.
double visible_pairs(int64_t seq, int64_t window) {
  double pairs = 0;
  for (int64_t q = 0; q < seq; ++q) pairs += static_cast<double>(window ? std::min(q + 1, window) : q + 1);
  return pairs;
}

nlohmann::json run_row(const Row& row, int64_t heads, bool quick) {
  const int64_t S = row.seq, D = 64;
  const auto window = static_cast<int32_t>(row.window ? row.window : S);
  Tensor q = randn({1, heads, S, D}).to(row.dtype), k = randn({1, heads, S, D}).to(row.dtype),
         v = randn({1, heads, S, D}).to(row.dtype);
  att::BlockMask mask = att::create_block_mask(att::sliding_window_mask(window), 1, 1, S, S);
  const double mask_ms = time_ms([&] { att::create_block_mask(att::sliding_window_mask(window), 1, 1, S, S); }, 1);
  const int reps = quick ? 2 : 3;
  const double sgemm = sgemm_gflops();  // next to the flex timing: the machine may be shared
  double flex_ms, sdpa_ms;
  Tensor dense_mask = att::create_mask(att::sliding_window_mask(window), 1, 1, S, S);
  if (row.backward) {
    for (Tensor* t : {&q, &k, &v}) t->requires_grad_();
    Tensor grad = randn({1, heads, S, D}).to(row.dtype);
    flex_ms = time_ms([&] { Tensor(att::flex_attention(q, k, v, mask)).backward(grad); }, reps);
    sdpa_ms = time_ms([&] { att::scaled_dot_product_attention(q, k, v, dense_mask).backward(grad); }, 1);
  } else {
    flex_ms = time_ms([&] { Tensor out = att::flex_attention(q, k, v, mask); }, reps);
    sdpa_ms = time_ms([&] { Tensor out = att::scaled_dot_product_attention(q, k, v, dense_mask); }, 1);
  }
  const int64_t blocks = mask.kv_num_blocks.sum(kInt64).item<int64_t>() + mask.full_kv_num_blocks.sum(kInt64).item<int64_t>();
  // q·k and p·v per visited block: 4 * 128 * 128 * D flops; the backward does 2.5x that.
  const double flops = 4.0 * 128 * 128 * D * static_cast<double>(blocks * heads) * (row.backward ? 3.5 : 1.0);
  nlohmann::json r = {{"name", row.name},
                      {"flex_ms", flex_ms},
                      {"sdpa_ms", sdpa_ms},
                      {"speedup", sdpa_ms / flex_ms},
                      {"density", visible_pairs(S, row.window) / (static_cast<double>(S) * S)},
                      {"block_density", 1.0 - mask.sparsity() / 100},
                      {"flex_gflops", flops / flex_ms / 1e6},
                      {"sgemm_gflops", sgemm},
                      {"create_block_mask_ms", mask_ms}};
  note(r.dump());
  return r;
}

nlohmann::json run(const Options& options) {
  manual_seed(0);
  const int64_t heads = options.quick ? 1 : 8;
  std::vector<Row> rows = {{"s8192_w64", 8192, 64},       {"s8192_w256", 8192, 256},
                           {"s8192_w1024", 8192, 1024},   {"s8192_w4096", 8192, 4096},
                           {"s32768_w256", 32768, 256},   {"s32768_w1024", 32768, 1024},
                           {"s8192_w64_bf16", 8192, 64, kBFloat16}, {"s32768_w256_bf16", 32768, 256, kBFloat16},
                           {"s8192_causal", 8192, 0},     {"s8192_w256_fwdbwd", 8192, 256, kFloat32, true},
                           {"s8192_causal_fwdbwd", 8192, 0, kFloat32, true}};
  nlohmann::json results = nlohmann::json::array();
  for (const Row& row : rows) results.push_back(run_row(row, heads, options.quick));
  return results;
}

// One decoding step: a query of length 1 against 32768 cached keys, Hq 32, Hkv 8, D 128.
nlohmann::json run_decode(const Options& options) {
  manual_seed(0);
  const int64_t S = 32768, Hq = 32, Hkv = 8, D = 128, position = S - 1;
  Tensor q = randn({1, Hq, 1, D}), k = randn({1, Hkv, S, D}), v = randn({1, Hkv, S, D});
  const auto gqa = att::FlexAttentionOptions().set_enable_gqa(true);
  const int reps = options.quick ? 5 : 20;
  const double sdpa_ms =
      time_ms([&] { Tensor out = att::scaled_dot_product_attention(q, k, v, {}, 0.0, false, std::nullopt, true); }, reps);
  nlohmann::json results = nlohmann::json::array();
  for (int64_t window : {int64_t{4096}, S}) {
    auto mask_mod = [position, window](auto, auto, auto q_idx, auto kv_idx) {
      return q_idx + position >= kv_idx && q_idx + position - kv_idx < window;
    };
    att::BlockMask mask = att::create_block_mask(mask_mod, 1, 1, 1, S);
    const double flex_ms = time_ms([&] { Tensor out = att::flex_attention(q, k, v, mask, gqa); }, reps);
    nlohmann::json r = {{"name", window == S ? "decode_s32768_causal" : "decode_s32768_w4096"},
                        {"flex_ms", flex_ms},
                        {"sdpa_ms", sdpa_ms},
                        {"speedup", sdpa_ms / flex_ms}};
    note(r.dump());
    results.push_back(r);
  }
  return results;
}

Register reg("flex_attention", run, {"flex"});
Register reg_decode("flex_attention_decode", run_decode, {"flex-decode"});

}  // namespace
}  // namespace ember::bench
