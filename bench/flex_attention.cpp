// `ember bench flex_attention` (alias `flex`): flex_attention with a causal sliding window
// against dense scaled_dot_product_attention given the same mask as attn_mask, and the BLAS
// sgemm rate of this machine, measured side by side, in float32 and bfloat16 (a bfloat16 row
// also runs the float32 step on the same values in turns with its own: bf16_vs_f32); where a
// Python with PyTorch is found, PyTorch's compiled flex_attention forward on the same shape
// right after each forward row (bench/peers/flex_attention_torch.py); `--only TEXT` runs the
// rows whose names contain TEXT. `ember bench flex_attention_decode` (alias `flex-decode`): one
// decoding step.

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

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
  Tensor grad = row.backward ? randn({1, heads, S, D}).to(row.dtype) : Tensor();
  att::BlockMask mask = att::create_block_mask(att::sliding_window_mask(window), 1, 1, S, S);
  // The row's step on given operands: the forward, or the forward and backward.
  auto step_of = [&](Tensor q_in, Tensor k_in, Tensor v_in, Tensor grad_in) {
    if (row.backward)
      for (Tensor* t : {&q_in, &k_in, &v_in}) t->requires_grad_();
    return [=, &mask]() {
      Tensor out = att::flex_attention(q_in, k_in, v_in, mask);
      if (row.backward) out.backward(grad_in);
    };
  };
  const double mask_ms = time_ms([&] { att::create_block_mask(att::sliding_window_mask(window), 1, 1, S, S); }, 1);
  const int reps = quick ? 2 : 3;
  const double sgemm = sgemm_gflops();  // next to the flex timing: the machine may be shared
  double flex_ms, sdpa_ms;
  Tensor dense_mask = att::create_mask(att::sliding_window_mask(window), 1, 1, S, S);
  // The float32 step on the same values, for a low-precision row's bf16_vs_f32.
  const bool low_precision = row.dtype != kFloat32;
  const std::function<void()> step = step_of(q, k, v, grad);
  const std::function<void()> float32_step =
      low_precision ? step_of(q.detach().to(kFloat32), k.detach().to(kFloat32), v.detach().to(kFloat32),
                              row.backward ? grad.to(kFloat32) : Tensor())
                    : std::function<void()>();
  flex_ms = time_ms(step, reps);
  if (row.backward) {
    for (Tensor* t : {&q, &k, &v}) t->requires_grad_();
    sdpa_ms = time_ms([&] { att::scaled_dot_product_attention(q, k, v, dense_mask).backward(grad); }, 1);
  } else {
    sdpa_ms = time_ms([&] { Tensor out = att::scaled_dot_product_attention(q, k, v, dense_mask); }, 1);
  }
  // Low precision against float32 in turns (the machine's speed moves between rows): the
  // median of the turns' ratios of float32's time to this row's.
  std::vector<double> turn_ratios;
  if (low_precision)
    for (int turn = 0; turn < reps; ++turn) {
      const double low_ms = time_ms(step, 1);
      turn_ratios.push_back(time_ms(float32_step, 1) / low_ms);
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
  if (low_precision) r["bf16_vs_f32"] = median(turn_ratios);
  return r;
}

// Every shape in float32 and bfloat16: s<seq>_w<window> or _causal, then _bf16, then _fwdbwd.
std::vector<Row> bench_rows() {
  const std::vector<std::pair<int64_t, int64_t>> forward = {{8192, 64},    {8192, 256},    {8192, 1024}, {8192, 4096},
                                                            {32768, 256},  {32768, 1024},  {8192, 0}};
  const std::vector<std::pair<int64_t, int64_t>> backward = {{8192, 256}, {8192, 0}};
  std::vector<Row> rows;
  for (bool with_backward : {false, true})
    for (const auto& [seq, window] : with_backward ? backward : forward)
      for (ScalarType dtype : {kFloat32, kBFloat16}) {
        const std::string name = "s" + std::to_string(seq) + (window ? "_w" + std::to_string(window) : "_causal") +
                                 (dtype == kBFloat16 ? "_bf16" : "") + (with_backward ? "_fwdbwd" : "");
        rows.push_back({name, seq, window, dtype, with_backward});
      }
  return rows;
}

// PyTorch's compiled flex_attention on a forward row, in a process of its own right after
// ember's timing of that row (its compile untimed): torch_flex_ms and flex_vs_torch (torch's
// time over ember's).
void add_torch_columns(const std::string& python, const Row& row, int64_t heads, nlohmann::json& r) {
  const std::string arguments = "--heads " + std::to_string(heads) + " --row " + row.name + "," +
                                std::to_string(row.seq) + "," + std::to_string(row.window) + "," +
                                dtype_name(row.dtype);
  for (const nlohmann::json& peer : run_peer(python, "flex_attention_torch.py", arguments))
    if (peer.contains("name") && r["name"] == peer["name"]) {
      r["torch_flex_ms"] = peer.at("ms").get<double>();
      r["flex_vs_torch"] = r["torch_flex_ms"].get<double>() / r["flex_ms"].get<double>();
    }
}

nlohmann::json run(const Options& options) {
  manual_seed(0);
  const int64_t heads = options.quick ? 1 : 8;
  std::vector<Row> rows;
  for (const Row& row : bench_rows())
    if (row.name.find(options.only) != std::string::npos) rows.push_back(row);
  const std::string python = torch_python();
  if (python.empty()) note("no Python with PyTorch found (EMBER_TORCH_PYTHON, python3): no torch columns");
  nlohmann::json results = nlohmann::json::array();
  for (const Row& row : rows) {
    nlohmann::json r = run_row(row, heads, options.quick);
    if (!python.empty() && !row.backward) add_torch_columns(python, row, heads, r);
    note(r.dump());
    results.push_back(r);
  }
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
