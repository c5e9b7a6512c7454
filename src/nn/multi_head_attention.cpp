// F::multi_head_attention_forward as PyTorch's (torch/nn/functional.py): packed or separate
// input projections, bias_k/bias_v and zero attention appended to the keys, boolean masks
// turned into -inf additions, key padding merged into the attention mask; with need_weights
// the weights come from an explicit softmax(q k^T / sqrt(head_dim) + mask) (they are returned),
// otherwise the heads run through ember's scaled_dot_product_attention.
#include <cmath>
#include <limits>

#include "ember/functions.h"
#include "ember/nn/attention/sdpa.h"
#include "ember/nn/functional.h"

namespace ember::nn {

TransformerActivation::TransformerActivation(Nonlinearity relu) : kind_(Kind::ReLU) {
  EMBER_CHECK(relu == Nonlinearity::ReLU, "TransformerActivation",
              "activation must be ember::kReLU, ember::kGELU or a function, got another nonlinearity constant");
}
TransformerActivation::TransformerActivation(enumtype::kGELU) : kind_(Kind::GELU) {}
TransformerActivation::TransformerActivation(std::function<Tensor(const Tensor&)> function)
    : kind_(Kind::Function), function_(std::move(function)) {
  EMBER_CHECK(function_ != nullptr, "TransformerActivation", "the activation function is empty");
}

Tensor TransformerActivation::operator()(const Tensor& x) const {
  switch (kind_) {
    case Kind::ReLU:
      return ember::relu(x);
    case Kind::GELU:
      return ember::gelu(x);
    case Kind::Function:
      break;
  }
  return function_(x);
}

const char* TransformerActivation::name() const {
  return kind_ == Kind::ReLU ? "relu" : kind_ == Kind::GELU ? "gelu" : "function";
}

}  // namespace ember::nn

namespace ember::nn::functional {
namespace {

constexpr const char* kOp = "multi_head_attention_forward";

// A bool mask (true: masked out) as -inf additions in `dtype`; a floating mask as is.
Tensor additive_mask(const Tensor& mask, ScalarType dtype, const char* what) {
  if (!mask.defined()) return mask;
  if (mask.scalar_type() == kBool)
    return zeros(mask.sizes(), dtype).masked_fill(mask, -std::numeric_limits<double>::infinity());
  EMBER_CHECK(mask.is_floating_point(), kOp, what, " must be bool or floating point, got ",
              dtype_name(mask.scalar_type()));
  return mask.to(dtype);
}

// One more (zero) column at the end of the last dim.
Tensor pad_key_column(const Tensor& mask) {
  if (!mask.defined()) return mask;
  std::vector<int64_t> column = mask.sizes();
  column.back() = 1;
  return cat({mask, zeros(column, mask.scalar_type())}, -1);
}

}  // namespace

std::tuple<Tensor, Tensor> multi_head_attention_forward(const Tensor& query_in, const Tensor& key_in,
                                                        const Tensor& value_in,
                                                        const MultiheadAttentionForwardFuncOptions& options) {
  EMBER_CHECK(query_in.dim() == 3 || query_in.dim() == 2, kOp, "query must be [L, N, E] or unbatched [L, E], got ",
              query_in.sizes());
  const bool batched = query_in.dim() == 3;
  EMBER_CHECK(key_in.dim() == query_in.dim() && value_in.dim() == query_in.dim(), kOp,
              "key and value must have the query's number of dims (", query_in.dim(), "), got key ", key_in.sizes(),
              " and value ", value_in.sizes());
  Tensor query = batched ? query_in : query_in.unsqueeze(1);
  Tensor key = batched ? key_in : key_in.unsqueeze(1);
  Tensor value = batched ? value_in : value_in.unsqueeze(1);
  Tensor key_padding_mask = options.key_padding_mask();
  if (!batched && key_padding_mask.defined()) {
    EMBER_CHECK(key_padding_mask.dim() == 1, kOp, "an unbatched query needs a 1-D key_padding_mask, got ",
                key_padding_mask.sizes());
    key_padding_mask = key_padding_mask.unsqueeze(0);
  }
  const int64_t tgt_len = query.size(0), bsz = query.size(1), embed_dim = query.size(2);
  const int64_t heads = options.num_heads();
  const ScalarType dtype = query.scalar_type();
  EMBER_CHECK(embed_dim == options.embed_dim_to_check(), kOp, "query's embedding size ", embed_dim,
              " differs from embed_dim_to_check ", options.embed_dim_to_check());
  EMBER_CHECK(heads > 0 && embed_dim % heads == 0, kOp, "embed_dim (", embed_dim, ") must be divisible by num_heads (",
              heads, ")");
  const int64_t head_dim = embed_dim / heads;
  EMBER_CHECK(key.size(1) == bsz && value.size(1) == bsz && key.size(0) == value.size(0), kOp, "key ", key.sizes(),
              " and value ", value.sizes(), " must match each other's length and the query's ", "batch (query ",
              query.sizes(), ")");
  key_padding_mask = additive_mask(key_padding_mask, dtype, "key_padding_mask");
  Tensor attn_mask = additive_mask(options.attn_mask(), dtype, "attn_mask");

  // Input projections.
  Tensor q, k, v;
  const Tensor& in_bias = options.in_proj_bias();
  std::vector<Tensor> biases = in_bias.defined() ? in_bias.chunk(3) : std::vector<Tensor>(3);
  if (!options.use_separate_proj_weight()) {
    EMBER_CHECK(options.in_proj_weight().defined() && options.in_proj_weight().dim() == 2 &&
                    options.in_proj_weight().size(0) == 3 * embed_dim,
                kOp, "in_proj_weight must be [3 * embed_dim, embed_dim] = [", 3 * embed_dim, ", ", embed_dim, "], got ",
                options.in_proj_weight().defined() ? options.in_proj_weight().sizes() : IntArrayRef());
    EMBER_CHECK(key.size(2) == embed_dim && value.size(2) == embed_dim, kOp,
                "with a packed in_proj_weight key and value need embed_dim (", embed_dim, ") features, got key ",
                key.sizes(), " and value ", value.sizes(), " (use separate projection weights for kdim/vdim)");
    std::vector<Tensor> weights = options.in_proj_weight().chunk(3);
    q = ember::linear(query, weights[0], biases[0]);
    k = ember::linear(key, weights[1], biases[1]);
    v = ember::linear(value, weights[2], biases[2]);
  } else {
    q = ember::linear(query, options.q_proj_weight(), biases[0]);
    k = ember::linear(key, options.k_proj_weight(), biases[1]);
    v = ember::linear(value, options.v_proj_weight(), biases[2]);
  }

  if (attn_mask.defined()) {
    if (attn_mask.dim() == 2) {
      EMBER_CHECK(attn_mask.size(0) == tgt_len && attn_mask.size(1) == key.size(0), kOp, "a 2-D attn_mask must be [",
                  tgt_len, ", ", key.size(0), "] (target and source lengths), got ", attn_mask.sizes());
      attn_mask = attn_mask.unsqueeze(0);
    } else {
      EMBER_CHECK(attn_mask.dim() == 3 && attn_mask.size(0) == bsz * heads && attn_mask.size(1) == tgt_len &&
                      attn_mask.size(2) == key.size(0),
                  kOp, "a 3-D attn_mask must be [", bsz * heads, ", ", tgt_len, ", ", key.size(0),
                  "] (batch * num_heads, target, source), got ", attn_mask.sizes());
    }
  }
  if (options.bias_k().defined() || options.bias_v().defined()) {
    EMBER_CHECK(options.bias_k().defined() && options.bias_v().defined(), kOp,
                "bias_k and bias_v must both be given or both be undefined");
    EMBER_CHECK(!options.static_k().defined() && !options.static_v().defined(), kOp,
                "bias_k/bias_v cannot be combined with static_k/static_v");
    k = cat({k, options.bias_k().reshape({1, 1, embed_dim}).expand({1, bsz, embed_dim})}, 0);
    v = cat({v, options.bias_v().reshape({1, 1, embed_dim}).expand({1, bsz, embed_dim})}, 0);
    attn_mask = pad_key_column(attn_mask);
    key_padding_mask = pad_key_column(key_padding_mask);
  }
  // Heads into the batch: [N * H, len, head_dim].
  q = q.reshape({tgt_len, bsz * heads, head_dim}).transpose(0, 1);
  auto heads_first = [&](const Tensor& t, const Tensor& fixed, const char* what) {
    if (!fixed.defined()) return t.reshape({t.size(0), bsz * heads, head_dim}).transpose(0, 1);
    EMBER_CHECK(fixed.dim() == 3 && fixed.size(0) == bsz * heads && fixed.size(2) == head_dim, kOp, what, " must be [",
                bsz * heads, ", S, ", head_dim, "], got ", fixed.sizes());
    return fixed;
  };
  k = heads_first(k, options.static_k(), "static_k");
  v = heads_first(v, options.static_v(), "static_v");
  if (options.add_zero_attn()) {
    k = cat({k, zeros({bsz * heads, 1, head_dim}, k.scalar_type())}, 1);
    v = cat({v, zeros({bsz * heads, 1, head_dim}, v.scalar_type())}, 1);
    attn_mask = pad_key_column(attn_mask);
    key_padding_mask = pad_key_column(key_padding_mask);
  }
  const int64_t src_len = k.size(1);
  if (key_padding_mask.defined()) {
    EMBER_CHECK(key_padding_mask.dim() == 2 && key_padding_mask.size(0) == bsz && key_padding_mask.size(1) == src_len,
                kOp, "key_padding_mask must be [", bsz, ", ", src_len, "] (batch, source length), got ",
                key_padding_mask.sizes());
    Tensor per_head =
        key_padding_mask.view({bsz, 1, 1, src_len}).expand({bsz, heads, 1, src_len}).reshape({bsz * heads, 1, src_len});
    attn_mask = attn_mask.defined() ? attn_mask + per_head : per_head;
  }
  const double dropout_p = options.training() ? options.dropout_p() : 0.0;

  Tensor output, weights;
  if (options.need_weights()) {
    Tensor scores = (q * std::sqrt(1.0 / static_cast<double>(head_dim))).bmm(k.transpose(1, 2));
    if (attn_mask.defined()) scores = scores + attn_mask;
    weights = scores.softmax(-1);
    if (dropout_p > 0) weights = ember::dropout(weights, dropout_p, true);
    output = weights.bmm(v).transpose(0, 1).reshape({tgt_len * bsz, embed_dim});
    weights = weights.view({bsz, heads, tgt_len, src_len});
    if (options.average_attn_weights()) weights = weights.mean({1});
    if (!batched) weights = weights.squeeze(0);
  } else {
    Tensor mask4;
    if (attn_mask.defined())
      // [1 or N * H, L or 1 (key padding alone), S] -> [1 or N, H, L or 1, S].
      mask4 =
          attn_mask.size(0) == 1 ? attn_mask.unsqueeze(0) : attn_mask.view({bsz, heads, attn_mask.size(1), src_len});
    Tensor heads_out = attention::scaled_dot_product_attention(
        q.reshape({bsz, heads, tgt_len, head_dim}), k.reshape({bsz, heads, src_len, head_dim}),
        v.reshape({bsz, heads, src_len, head_dim}), mask4, dropout_p);
    output = heads_out.permute({2, 0, 1, 3}).reshape({tgt_len * bsz, embed_dim});
  }
  output = ember::linear(output, options.out_proj_weight(), options.out_proj_bias())
               .view({tgt_len, bsz, options.out_proj_weight().size(0)});
  if (!batched) output = output.squeeze(1);
  return {output, weights};
}

}  // namespace ember::nn::functional
