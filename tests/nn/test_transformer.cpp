// MultiheadAttention against PyTorch's multi-head attention written here in double loops
// (projections, per-head softmax(q k / sqrt(head_dim) + masks), output projection), with
// bool and float masks, key padding, bias_k/bias_v, zero attention, kdim/vdim, batch_first,
// unbatched inputs, per-head weights, the SDPA path (need_weights=false) and gradcheck; the
// Transformer layers against their definition composed from the tested pieces (post- and
// pre-norm, relu and gelu), the stacks' copies and Transformer's shapes, names and errors.
#include <cmath>
#include <limits>

#include "nn_testing.h"

namespace ember::nntest {
namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

// Values of a [rows, cols] matrix or of any tensor, row-major.
struct Dense {
  std::vector<double> v;
  std::vector<int64_t> sizes;
  explicit Dense(const Tensor& t) : v(values(t)), sizes(t.sizes()) {}
  double at3(int64_t a, int64_t b, int64_t c) const { return v[(a * sizes[1] + b) * sizes[2] + c]; }
  double at2(int64_t a, int64_t b) const { return v[a * sizes[1] + b]; }
};

struct MhaReference {
  std::vector<double> output;   // [L, N, E]
  std::vector<double> weights;  // [N, H, L, S']
};

// query [L, N, E], key [S, N, kdim], value [S, N, vdim]; wq [E, E], wk [E, kdim], wv [E, vdim];
// mask(n, h, l, s) is the additive mask over the S' = S (+1 bias_kv) (+1 zero attn) keys.
MhaReference mha_reference(const Tensor& query, const Tensor& key, const Tensor& value, int64_t H, const Tensor& wq,
                           const Tensor& wk, const Tensor& wv, const Tensor& in_bias, const Tensor& wo,
                           const Tensor& bo, const Tensor& bias_k, const Tensor& bias_v, bool zero_attn,
                           const std::function<double(int64_t, int64_t, int64_t, int64_t)>& mask) {
  const Dense q_in(query), k_in(key), v_in(value), Wq(wq), Wk(wk), Wv(wv), Wo(wo);
  const int64_t L = query.size(0), N = query.size(1), E = query.size(2), S = key.size(0), hd = E / H;
  const auto b = in_bias.defined() ? values(in_bias) : std::vector<double>(3 * E, 0.0);
  const auto bout = bo.defined() ? values(bo) : std::vector<double>(E, 0.0);
  const auto bk = bias_k.defined() ? values(bias_k) : std::vector<double>{};
  const auto bv = bias_v.defined() ? values(bias_v) : std::vector<double>{};
  const int64_t S2 = S + (bias_k.defined() ? 1 : 0) + (zero_attn ? 1 : 0);
  MhaReference r{std::vector<double>(L * N * E, 0.0), std::vector<double>(N * H * L * S2, 0.0)};
  for (int64_t n = 0; n < N; ++n) {
    auto project = [&](const Dense& x, const Dense& W, int64_t offset, int64_t rows) {
      std::vector<std::vector<double>> out(rows, std::vector<double>(E, 0.0));
      for (int64_t r2 = 0; r2 < rows; ++r2)
        for (int64_t e = 0; e < E; ++e) {
          double acc = b[offset + e];
          for (int64_t i = 0; i < W.sizes[1]; ++i) acc += x.at3(r2, n, i) * W.at2(e, i);
          out[r2][e] = acc;
        }
      return out;
    };
    auto q = project(q_in, Wq, 0, L), k = project(k_in, Wk, E, S), v = project(v_in, Wv, 2 * E, S);
    if (bias_k.defined()) {
      k.push_back(bk);
      v.push_back(bv);
    }
    if (zero_attn) {
      k.emplace_back(E, 0.0);
      v.emplace_back(E, 0.0);
    }
    std::vector<double> attended(L * E, 0.0);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        std::vector<double> scores(S2);
        double top = -kInf;
        for (int64_t s = 0; s < S2; ++s) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d) dot += q[l][h * hd + d] * k[s][h * hd + d];
          scores[s] = dot / std::sqrt(static_cast<double>(hd)) + mask(n, h, l, s);
          top = std::max(top, scores[s]);
        }
        double sum = 0;
        for (double& s : scores) sum += (s = std::exp(s - top));
        for (int64_t s = 0; s < S2; ++s) {
          const double p = scores[s] / sum;
          r.weights[((n * H + h) * L + l) * S2 + s] = p;
          for (int64_t d = 0; d < hd; ++d) attended[l * E + h * hd + d] += p * v[s][h * hd + d];
        }
      }
    for (int64_t l = 0; l < L; ++l)
      for (int64_t e = 0; e < E; ++e) {
        double acc = bout[e];
        for (int64_t i = 0; i < E; ++i) acc += attended[l * E + i] * Wo.at2(e, i);
        r.output[(l * N + n) * E + e] = acc;
      }
  }
  return r;
}

// The weights averaged over heads: [N, L, S'].
std::vector<double> head_average(const std::vector<double>& w, int64_t N, int64_t H, int64_t L, int64_t S) {
  std::vector<double> out(N * L * S, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L * S; ++i) out[n * L * S + i] += w[(n * H + h) * L * S + i] / H;
  return out;
}

// Fills every parameter of `module` with distinct uniform values (biases non-zero too).
void randomize(nn::Module& module, uint32_t seed) {
  NoGradGuard no_grad;
  for (auto& item : module.named_parameters()) item.value().copy_(uniform(item.value().sizes(), seed++, -0.5, 0.5));
}

TEST(MultiheadAttention, MatchesReferenceWithMasksAndKeyPadding) {
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(6, 2));
  mha->to(kFloat64);
  randomize(*mha, 1);
  EXPECT_EQ(mha->named_parameters().keys(),
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  const int64_t L = 3, S = 4, N = 2, E = 6, H = 2;
  Tensor query = uniform({L, N, E}, 10), key = uniform({S, N, E}, 11), value = uniform({N, S, E}, 12).transpose(0, 1);
  Tensor attn_mask = uniform({L, S}, 13, -1, 1);  // float, added
  Tensor padding = testutil::make({0, 0, 1, 0, 0, 1, 0, 1}, {N, S}, kBool);
  auto [out, weights] = mha(query, key, value, padding, true, attn_mask);
  const auto am = values(attn_mask), pad = values(padding);
  auto chunk = [&](int64_t i) { return mha->in_proj_weight.narrow(0, i * E, E); };
  const MhaReference r = mha_reference(
      query, key, value, H, chunk(0), chunk(1), chunk(2), mha->in_proj_bias, mha->out_proj->weight, mha->out_proj->bias,
      {}, {}, false,
      [&](int64_t n, int64_t, int64_t l, int64_t s) { return am[l * S + s] + (pad[n * S + s] ? -kInf : 0.0); });
  EXPECT_TRUE(all_close(out, r.output));
  EXPECT_EQ(weights.sizes(), (std::vector<int64_t>{N, L, S}));
  EXPECT_TRUE(all_close(weights, head_average(r.weights, N, H, L, S)));
  // Per-head weights, and the SDPA path (no weights) gives the same output.
  auto [out2, per_head] = mha(query, key, value, padding, true, attn_mask, /*average_attn_weights=*/false);
  EXPECT_TRUE(all_close(per_head, r.weights));
  auto [fast, none] = mha(query, key, value, padding, false, attn_mask);
  EXPECT_FALSE(none.defined());
  EXPECT_TRUE(all_close(fast, r.output, {1e-10, 1e-10}));
  // A bool attn_mask (true: not attended) of shape [N * H, L, S].
  Tensor bool_mask = testutil::make(testutil::integer_values(N * H * L * S, 0, 3, 14), {N * H, L, S}, kInt64) == 0;
  for (int64_t row = 0; row < N * H * L; ++row) {  // keep one key per row
    NoGradGuard no_grad;
    bool_mask.view({N * H * L, S})[row][row % S].fill_(false);
  }
  const auto bm = values(bool_mask);
  const MhaReference rb = mha_reference(
      query, key, value, H, chunk(0), chunk(1), chunk(2), mha->in_proj_bias, mha->out_proj->weight, mha->out_proj->bias,
      {}, {}, false,
      [&](int64_t n, int64_t h, int64_t l, int64_t s) { return bm[((n * H + h) * L + l) * S + s] ? -kInf : 0.0; });
  EXPECT_TRUE(all_close(std::get<0>(mha(query, key, value, Tensor(), true, bool_mask)), rb.output));
  EXPECT_TRUE(all_close(std::get<0>(mha(query, key, value, Tensor(), false, bool_mask)), rb.output, {1e-10, 1e-10}));
  // float32 against the float64 reference.
  mha->to(kFloat32);
  auto [out32, weights32] =
      mha(query.to(kFloat32), key.to(kFloat32), value.to(kFloat32), padding, true, attn_mask.to(kFloat32));
  EXPECT_TRUE(all_close(out32, r.output, {1e-5, 1e-5}));
  EXPECT_TRUE(all_close(weights32, head_average(r.weights, N, H, L, S), {1e-5, 1e-6}));
}

TEST(MultiheadAttention, KdimVdimBiasKvZeroAttnBatchFirstAndUnbatched) {
  nn::MultiheadAttention mha(
      nn::MultiheadAttentionOptions(4, 2).kdim(3).vdim(5).add_bias_kv(true).add_zero_attn(true).batch_first(true));
  mha->to(kFloat64);
  randomize(*mha, 20);
  EXPECT_EQ(mha->named_parameters().keys(),
            (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k",
                                      "bias_v", "out_proj.weight", "out_proj.bias"}));
  const int64_t L = 2, S = 3, N = 2, H = 2;
  Tensor query = uniform({N, L, 4}, 21), key = uniform({N, S, 3}, 22), value = uniform({N, S, 5}, 23);
  Tensor padding = testutil::make({0, 1, 0, 0, 0, 1}, {N, S}, kBool);
  auto [out, weights] = mha(query, key, value, padding);
  const auto pad = values(padding);
  const MhaReference r = mha_reference(
      query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1), H, mha->q_proj_weight, mha->k_proj_weight,
      mha->v_proj_weight, mha->in_proj_bias, mha->out_proj->weight, mha->out_proj->bias, mha->bias_k, mha->bias_v, true,
      [&](int64_t n, int64_t, int64_t, int64_t s) { return s < S && pad[n * S + s] ? -kInf : 0.0; });
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{N, L, 4}));
  EXPECT_TRUE(all_close(out.transpose(0, 1), r.output));
  EXPECT_TRUE(all_close(weights, head_average(r.weights, N, H, L, S + 2)));
  // Unbatched: [L, E] inputs, [S] key padding.
  auto [single, single_weights] = mha(query[1], key[1], value[1], padding[1]);
  EXPECT_TRUE(all_close(single, values(out[1])));
  EXPECT_TRUE(all_close(single_weights, values(weights[1])));

  EXPECT_TRUE(
      gradients_match(
          [&](const std::vector<Tensor>& in) {
            return std::get<0>(F::multi_head_attention_forward(
                in[0], in[1], in[2],
                F::MultiheadAttentionForwardFuncOptions(4, 2, {}, in[3], in[4], in[5], true, 0.0, in[6], {})
                    .use_separate_proj_weight(true)
                    .q_proj_weight(in[7])
                    .k_proj_weight(in[8])
                    .v_proj_weight(in[9])));
          },
          {leaf(uniform({L, N, 4}, 24)), leaf(uniform({S, N, 3}, 25)), leaf(uniform({S, N, 5}, 26)),
           leaf(uniform({12}, 27)), leaf(uniform({1, 1, 4}, 28)), leaf(uniform({1, 1, 4}, 29)),
           leaf(uniform({4, 4}, 30)), leaf(uniform({4, 4}, 31)), leaf(uniform({4, 3}, 32)), leaf(uniform({4, 5}, 33))},
          tight_gradcheck()));
}

TEST(MultiheadAttention, StaticKeysAndValuesReplaceTheProjections) {
  // static_k/static_v [N * H, S, head_dim] equal to the projected keys/values give the same result.
  const int64_t L = 2, S = 3, N = 2, E = 4, H = 2;
  Tensor query = uniform({L, N, E}, 80), key = uniform({S, N, E}, 81), value = uniform({S, N, E}, 82);
  Tensor w = uniform({3 * E, E}, 83), b = uniform({3 * E}, 84), wo = uniform({E, E}, 85);
  auto options = F::MultiheadAttentionForwardFuncOptions(E, H, w, b, {}, {}, false, 0.0, wo, {});
  auto heads = [&](const Tensor& x, int64_t i) {
    return ember::linear(x, w.narrow(0, i * E, E), b.narrow(0, i * E, E)).reshape({S, N * H, E / H}).transpose(0, 1);
  };
  auto [expected, expected_weights] = F::multi_head_attention_forward(query, key, value, options);
  auto [out, weights] = F::multi_head_attention_forward(
      query, key, value,
      F::MultiheadAttentionForwardFuncOptions(options).static_k(heads(key, 1)).static_v(heads(value, 2)));
  EXPECT_TRUE(all_close(out, values(expected)));
  EXPECT_TRUE(all_close(weights, values(expected_weights)));
  EXPECT_TRUE(throws_error(
      [&] {
        F::multi_head_attention_forward(query, key, value,
                                        F::MultiheadAttentionForwardFuncOptions(options).static_k(zeros({3, S, 2})));
      },
      {"multi_head_attention_forward", "static_k", "[4, S, 2]", "[3, 3, 2]"}));
}

TEST(MultiheadAttention, EmptyBatch) {
  nn::MultiheadAttention mha(4, 2);
  Tensor x = empty({3, 0, 4});
  auto [out, weights] = mha(x, x, x);
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{3, 0, 4}));
  EXPECT_EQ(weights.sizes(), (std::vector<int64_t>{0, 3, 3}));
}

TEST(MultiheadAttention, ArgumentErrors) {
  EXPECT_TRUE(
      throws_error([] { nn::MultiheadAttention(5, 2); }, {"MultiheadAttention", "embed_dim (5)", "num_heads (2)"}));
  nn::MultiheadAttention mha(4, 2);
  Tensor x = zeros({3, 2, 4});
  EXPECT_TRUE(throws_error(
      [&] {
        mha(x, x, x, Tensor(), true, zeros({3, 5}));
      },
      {"multi_head_attention_forward", "attn_mask", "[3, 3]", "[3, 5]"}));
  EXPECT_TRUE(throws_error(
      [&] {
        mha(x, x, x, zeros({2, 4}, kBool));
      },
      {"multi_head_attention_forward", "key_padding_mask", "[2, 3]", "[2, 4]"}));
  EXPECT_TRUE(throws_error([&] { mha(x, zeros({3, 2, 5}), x); }, {"multi_head_attention_forward", "embed_dim (4)"}));
  EXPECT_TRUE(throws_error(
      [&] {
        mha(zeros({3, 2, 6}), x, x);
      },
      {"multi_head_attention_forward", "6", "embed_dim_to_check 4"}));
  EXPECT_TRUE(throws_error(
      [&] {
        mha(x, x, x, Tensor(), true, zeros({3, 3}, kInt64));
      },
      {"multi_head_attention_forward", "attn_mask", "bool or floating", "int64"}));
}

// The encoder layer written out from MultiheadAttention, Linear and LayerNorm (eval: no dropout).
Tensor encoder_layer_reference(nn::TransformerEncoderLayerImpl& layer, const Tensor& src, const Tensor& mask,
                               bool gelu) {
  auto sa = [&](const Tensor& x) { return std::get<0>(layer.self_attn(x, x, x, Tensor(), true, mask)); };
  auto ff = [&](const Tensor& x) {
    Tensor h = layer.linear1(x);
    return layer.linear2(gelu ? ember::gelu(h) : ember::relu(h));
  };
  if (layer.options.norm_first()) {
    Tensor x = src + sa(layer.norm1(src));
    return x + ff(layer.norm2(x));
  }
  Tensor x = layer.norm1(src + sa(src));
  return layer.norm2(x + ff(x));
}

TEST(Transformer, EncoderLayerPostAndPreNormReluAndGelu) {
  for (bool norm_first : {false, true}) {
    for (bool gelu : {false, true}) {
      SCOPED_TRACE(std::string(norm_first ? "pre-norm" : "post-norm") + (gelu ? " gelu" : " relu"));
      auto options = nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(6).norm_first(norm_first);
      if (gelu) options.activation(ember::kGELU);
      nn::TransformerEncoderLayer layer(options);
      layer->to(kFloat64);
      randomize(*layer, 40);
      layer->eval();
      Tensor src = uniform({3, 2, 4}, 41);
      Tensor mask = nn::TransformerImpl::generate_square_subsequent_mask(3).to(kFloat64);
      EXPECT_TRUE(
          all_close(layer(src, mask), values(encoder_layer_reference(*layer, src, mask, gelu)), {1e-10, 1e-10}));
    }
  }
  nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(6).dropout(0));
  layer->to(kFloat64);
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return layer(in[0]); },
                              {leaf(uniform({3, 2, 4}, 42))}, tight_gradcheck()));
  EXPECT_EQ(layer->named_parameters().size(), 12u);  // attn 4 + linear 4 + norms 4
}

// The decoder layer written out from its pieces (eval: no dropout).
Tensor decoder_layer_reference(nn::TransformerDecoderLayerImpl& layer, const Tensor& tgt, const Tensor& memory,
                               const Tensor& tgt_mask, const Tensor& memory_padding) {
  auto sa = [&](const Tensor& x) { return std::get<0>(layer.self_attn(x, x, x, Tensor(), true, tgt_mask)); };
  auto ca = [&](const Tensor& x) { return std::get<0>(layer.multihead_attn(x, memory, memory, memory_padding)); };
  auto ff = [&](const Tensor& x) { return layer.linear2(ember::relu(layer.linear1(x))); };
  if (layer.options.norm_first()) {
    Tensor x = tgt + sa(layer.norm1(tgt));
    x = x + ca(layer.norm2(x));
    return x + ff(layer.norm3(x));
  }
  Tensor x = layer.norm1(tgt + sa(tgt));
  x = layer.norm2(x + ca(x));
  return layer.norm3(x + ff(x));
}

TEST(Transformer, DecoderLayerPostAndPreNorm) {
  for (bool norm_first : {false, true}) {
    SCOPED_TRACE(norm_first ? "pre-norm" : "post-norm");
    nn::TransformerDecoderLayer layer(
        nn::TransformerDecoderLayerOptions(4, 2).dim_feedforward(5).norm_first(norm_first).batch_first(true));
    layer->to(kFloat64);
    randomize(*layer, 70);
    layer->eval();
    Tensor tgt = uniform({2, 3, 4}, 71), memory = uniform({2, 5, 4}, 72);
    Tensor tgt_mask = nn::TransformerImpl::generate_square_subsequent_mask(3).to(kFloat64);
    Tensor padding = testutil::make({0, 0, 0, 1, 1, 0, 0, 0, 0, 0}, {2, 5}, kBool);
    EXPECT_TRUE(all_close(layer(tgt, memory, tgt_mask, Tensor(), Tensor(), padding),
                          values(decoder_layer_reference(*layer, tgt, memory, tgt_mask, padding)), {1e-10, 1e-10}));
    EXPECT_EQ(layer->named_parameters().size(), 18u);
  }
  nn::TransformerDecoderLayer layer(nn::TransformerDecoderLayerOptions(4, 2).dim_feedforward(5).dropout(0));
  layer->to(kFloat64);
  EXPECT_TRUE(gradients_match([&](const std::vector<Tensor>& in) { return layer(in[0], in[1]); },
                              {leaf(uniform({3, 2, 4}, 73)), leaf(uniform({4, 2, 4}, 74))}, tight_gradcheck()));
}

TEST(Transformer, StacksCopyTheLayerAndTransformerRuns) {
  nn::TransformerEncoderLayer prototype(nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(6));
  nn::TransformerEncoder encoder(
      nn::TransformerEncoderOptions(prototype, 2).norm(nn::AnyModule(nn::LayerNorm(nn::LayerNormOptions({4})))));
  const auto names = encoder->named_parameters().keys();
  EXPECT_EQ(names.front(), "layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(names.back(), "norm.bias");
  // Copies start equal to the prototype and are independent tensors.
  EXPECT_TRUE(
      all_close(encoder->named_parameters()["layers.1.linear1.weight"], values(prototype->linear1->weight), {0, 0}));
  EXPECT_NE(encoder->named_parameters()["layers.0.linear1.weight"].data_ptr(),
            encoder->named_parameters()["layers.1.linear1.weight"].data_ptr());
  encoder->eval();
  Tensor src = uniform({5, 2, 4}, 50, -1, 1, kFloat32);
  Tensor expected = src;
  for (int i = 0; i < 2; ++i) expected = encoder->layers->at<nn::TransformerEncoderLayerImpl>(i).forward(expected);
  expected = encoder->norm.forward(expected);
  EXPECT_TRUE(all_close(encoder(src), values(expected), {0, 0}));

  nn::Transformer transformer(nn::TransformerOptions(8, 2, 2, 1).dim_feedforward(16).batch_first(true));
  EXPECT_EQ(transformer->named_parameters().size(), 2u * 12 + 2 + 18 + 2);  // encoder, its norm, decoder, its norm
  transformer->eval();
  Tensor out = transformer(uniform({2, 5, 8}, 51, -1, 1, kFloat32), uniform({2, 3, 8}, 52, -1, 1, kFloat32), Tensor(),
                           nn::TransformerImpl::generate_square_subsequent_mask(3));
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{2, 3, 8}));
  EXPECT_TRUE(all_close(nn::TransformerImpl::generate_square_subsequent_mask(2), {0, -kInf, 0, 0}));
  EXPECT_TRUE(throws_error([&] { transformer(zeros({2, 5, 8}), zeros({3, 3, 8})); }, {"Transformer", "src and tgt should have equal batch size"}));
  EXPECT_TRUE(throws_error([&] { transformer(zeros({2, 5, 6}), zeros({2, 3, 6})); }, {"Transformer", "d_model (8)"}));
  EXPECT_TRUE(throws_error([] { nn::TransformerEncoderLayerOptions(4, 2).activation(ember::kTanh); },
                           {"TransformerActivation", "kReLU"}));
}

}  // namespace
}  // namespace ember::nntest
