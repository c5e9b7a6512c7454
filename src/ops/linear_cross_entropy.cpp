// Note [Fused linear cross-entropy]
// linear_cross_entropy(x, W, target) equals cross_entropy(linear(x, W, b), target) (plus
// the z-loss) without ever holding the [tokens, classes] logits. Tokens are processed in
// chunks (Liger-Kernel's scheme): for each chunk the logits [chunk, classes] are computed
// into one reused float32/float64 buffer, one pass per row turns them into the loss terms
// and, in place, into d loss / d logits, and that buffer then feeds grad_x = d @ W and
// grad_W += d^T @ x. Three products in all, as the unfused path, so no speed is lost, and
// the only transient memory is the chunk's logits. Chunks are sized from a memory budget.
//
// For 'mean' and 'sum' the gradient is known up to the scalar grad_output, so when autograd
// records, the forward computes the gradients with grad_output = 1 and backward only scales
// them (in place, handing the buffers over). For 'none' each token's grad_output is only
// known in backward, which recomputes the chunk logits (four products in all); so does a
// second backward through a retained graph.
//
// Reproducibility: each product is cut into tiles of fixed shapes (Note [Fixed product
// tiles] in src/cpu/linear_cross_entropy.h), each row's loss and gradient is computed by one thread, grad_W
// adds one product per block of kLinearCrossEntropyTokenBlock tokens in token order and
// grad_b sums each column in token order. Chunks hold whole token blocks, so no result
// depends on the chunk size or the thread count (tests/nn/loss checks both, bit for bit).
//
// bfloat16: the products take x and W as stored, accumulating into float32 (the logits
// gradient is rounded to bf16 for the two backward products, as an unfused bf16 graph rounds
// it); float16: the x chunk and tiles of W are widened to float32 on the fly (no float32
// copy of W), since float16 would flush the small logits gradients. Logits, loss and
// gradients accumulate in float32, grad_W in a float32 [classes, hidden] buffer rounded once
// at the end.
#include "ops/linear_cross_entropy.h"

#include <algorithm>
#include <memory>

#include "autograd/function.h"
#include "core/record_op.h"
#include "cpu/linear_cross_entropy.h"
#include "ember/functions.h"

namespace ember::ops {
namespace {

constexpr const char* kOp = "linear_cross_entropy";

bool is_low_precision(ScalarType dtype) { return dtype == kBFloat16 || dtype == kFloat16; }
ScalarType accumulation_type(ScalarType dtype) { return dtype == kFloat64 ? kFloat64 : kFloat32; }

// A [rows, cols] matrix with adjacent columns, as the kernel reads it: in place when its
// layout allows, else a contiguous copy.
struct RowMajor {
  Tensor matrix;
  int64_t ld = 0;
};

RowMajor row_major(const Tensor& m) {
  const int64_t rows = m.size(0), cols = m.size(1);
  if (m.stride(1) == 1 && (rows <= 1 || m.stride(0) >= cols))
    return {m, std::max<int64_t>({rows <= 1 ? 0 : m.stride(0), cols, 1})};
  return {m.contiguous(), std::max<int64_t>(cols, 1)};
}

// The validated, flattened problem: x [tokens, hidden], W [classes, hidden], target [tokens].
struct Problem {
  RowMajor x, weight;
  Tensor target;        // int64 [tokens], contiguous
  Tensor bias;          // accumulation type [classes] or undefined
  Tensor class_weight;  // accumulation type [classes] or undefined
  std::vector<int64_t> loss_shape;
  int64_t tokens = 0, hidden = 0, classes = 0, chunk_tokens = 0;
  double kept_weight = 0;  // sum of w[target] over kept tokens (the 'mean' divisor)
  double kept_tokens = 0;  // the z-loss 'mean' divisor
};

void check_tensors(const Tensor& input, const Tensor& weight, const Tensor& target,
                   const LinearCrossEntropyParams& o) {
  const ScalarType dtype = input.scalar_type();
  EMBER_CHECK(dtype == kFloat32 || dtype == kFloat64 || is_low_precision(dtype), kOp,
              "input must be float32, float64, bfloat16 or float16, got ", dtype_name(dtype));
  EMBER_CHECK(input.dim() >= 1, kOp, "input must be [*, hidden], got a 0-dim tensor");
  EMBER_CHECK(weight.dim() == 2 && weight.size(1) == input.size(-1), kOp, "weight of shape ", weight.sizes(),
              " must be [classes, ", input.size(-1), "] for input of shape ", input.sizes());
  EMBER_CHECK(weight.size(0) >= 1, kOp, "weight must have at least one class, got shape ", weight.sizes());
  EMBER_CHECK(weight.scalar_type() == dtype, kOp, "weight dtype ", dtype_name(weight.scalar_type()),
              " must match input dtype ", dtype_name(dtype));
  const int64_t classes = weight.size(0);
  if (o.bias.defined()) {
    EMBER_CHECK(o.bias.dim() == 1 && o.bias.size(0) == classes && o.bias.scalar_type() == dtype, kOp,
                "bias of shape ", o.bias.sizes(), " and dtype ", dtype_name(o.bias.scalar_type()), " must be [",
                classes, "] of dtype ", dtype_name(dtype));
  }
  if (o.class_weight.defined()) {
    EMBER_CHECK(o.class_weight.dim() == 1 && o.class_weight.size(0) == classes &&
                    o.class_weight.is_floating_point(),
                kOp, "class_weight of shape ", o.class_weight.sizes(), " must be a floating [", classes, "] tensor");
  }
  EMBER_CHECK(is_integral(target.scalar_type()), kOp, "target must be an integer tensor, got ",
              dtype_name(target.scalar_type()));
  std::vector<int64_t> expected(input.sizes().begin(), input.sizes().end() - 1);
  EMBER_CHECK(target.sizes() == expected, kOp, "target shape ", target.sizes(), " does not match input shape ",
              input.sizes(), " (expected ", expected, ")");
}

// Throws naming the first target outside [0, classes) that is not ignore_index.
void check_target_range(const Tensor& target, const Tensor& kept, int64_t classes, int64_t ignore_index) {
  Tensor bad = ((target < 0).logical_or(target >= classes)).logical_and(kept);
  if (!bad.any().item<bool>()) return;
  const int64_t position = bad.to(kInt64).argmax().item<int64_t>();
  EMBER_FAIL(kOp, "target ", target[position].item<int64_t>(), " at position ", position, " is out of bounds for ",
             classes, " classes (ignore_index is ", ignore_index, ")");
}

int64_t chunk_tokens(const LinearCrossEntropyParams& o, int64_t tokens, int64_t classes, ScalarType acc) {
  const int64_t block = o.token_block;
  int64_t chunk = o.chunk_size;
  if (chunk == 0) {
    const int64_t block_bytes = block * classes * static_cast<int64_t>(element_size(acc));
    chunk = std::max<int64_t>(1, o.memory_budget / block_bytes) * block;
  }
  // No buffer beyond the tokens there are; still a whole number of blocks.
  return std::min(chunk, std::max<int64_t>(1, (tokens + block - 1) / block) * block);
}

Problem prepare(const Tensor& input, const Tensor& weight, const Tensor& target, const LinearCrossEntropyParams& o) {
  check_tensors(input, weight, target, o);
  Problem p;
  p.hidden = input.size(-1);
  p.classes = weight.size(0);
  p.loss_shape = target.sizes();
  p.tokens = target.numel();
  const ScalarType acc = accumulation_type(input.scalar_type());
  p.x = row_major(input.reshape({p.tokens, p.hidden}));
  p.weight = row_major(weight);
  p.target = target.to(kInt64).reshape({p.tokens}).contiguous();
  Tensor kept = p.target != o.ignore_index;
  check_target_range(p.target, kept, p.classes, o.ignore_index);
  if (o.bias.defined()) p.bias = o.bias.detach().to(acc).contiguous();
  if (o.class_weight.defined()) p.class_weight = o.class_weight.detach().to(acc).contiguous();
  p.kept_tokens = kept.sum(kFloat64).item<double>();
  p.kept_weight = p.class_weight.defined()
                      ? (p.class_weight.to(kFloat64).index_select(0, p.target.masked_fill(kept.logical_not(), 0)) *
                         kept.to(kFloat64))
                            .sum()
                            .item<double>()
                      : p.kept_tokens;
  p.chunk_tokens = chunk_tokens(o, p.tokens, p.classes, acc);
  return p;
}

// What one run of the kernel produced, in the input's dtype. Gradients are undefined when
// not asked for.
struct Results {
  Tensor row_ce, row_lse;  // float64 [tokens]
  Tensor grad_x, grad_weight, grad_bias;
};

struct Wanted {
  bool x = false, weight = false, bias = false;
};

Results run_kernel(const Problem& p, const LinearCrossEntropyParams& o, const cpu::LceGradScale& scale,
                   Wanted wanted) {
  const ScalarType dtype = p.x.matrix.scalar_type(), acc = accumulation_type(dtype);
  Results r;
  r.row_ce = empty({p.tokens}, kFloat64);
  r.row_lse = empty({p.tokens}, kFloat64);
  if (wanted.x) r.grad_x = empty({p.tokens, p.hidden}, dtype);
  if (wanted.weight) r.grad_weight = zeros({p.classes, p.hidden}, acc);
  if (wanted.bias) r.grad_bias = zeros({p.classes}, acc);

  const int64_t chunk_rows = std::min(p.chunk_tokens, p.tokens);
  Tensor logits = empty({chunk_rows, p.classes}, acc);
  Tensor deferred_grad;  // Note [Deferred gradients]
  if (wanted.x || wanted.weight) {
    const int64_t tokens = cpu::lce_deferred_gradient_tokens(dtype, chunk_rows, p.classes, o.memory_budget);
    if (tokens > chunk_rows && p.tokens > chunk_rows)
      deferred_grad = empty({std::min(tokens, p.tokens), p.classes}, kBFloat16);
  }
  const int64_t grad_rows = deferred_grad.defined() ? deferred_grad.size(0) : chunk_rows;
  Tensor x_wide, grad_x_wide;
  if (is_low_precision(dtype)) grad_x_wide = empty({grad_rows, p.hidden}, kFloat32);
  if (cpu::lce_widens_operands(dtype)) x_wide = empty({chunk_rows, p.hidden}, kFloat32);

  cpu::LceProblem problem;
  problem.dtype = dtype;
  problem.tokens = p.tokens;
  problem.hidden = p.hidden;
  problem.classes = p.classes;
  problem.x = p.x.matrix.data_ptr();
  problem.ld_x = p.x.ld;
  problem.weight = p.weight.matrix.data_ptr();
  problem.ld_weight = p.weight.ld;
  problem.bias = p.bias.defined() ? p.bias.data_ptr() : nullptr;
  problem.class_weight = p.class_weight.defined() ? p.class_weight.data_ptr() : nullptr;
  problem.target = p.target.data_ptr<int64_t>();
  problem.ignore_index = o.ignore_index;
  problem.label_smoothing = o.label_smoothing;
  problem.z_loss = o.z_loss;
  problem.softcap = o.softcap;
  problem.chunk_tokens = p.chunk_tokens;
  problem.token_block = o.token_block;

  auto pointer = [](const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; };
  cpu::LceOutputs out{r.row_ce.data_ptr<double>(), r.row_lse.data_ptr<double>(), pointer(r.grad_x),
                      pointer(r.grad_weight), pointer(r.grad_bias)};
  cpu::LceWorkspace workspace{logits.data_ptr(), static_cast<float*>(pointer(x_wide)),
                              static_cast<float*>(pointer(grad_x_wide)), static_cast<uint16_t*>(pointer(deferred_grad)),
                              deferred_grad.defined() ? deferred_grad.size(0) : 0};
  cpu::linear_cross_entropy(problem, scale, out, workspace);
  // Rounded once, here, so that only the input-dtype copies are kept until backward.
  if (acc != dtype) {
    if (r.grad_weight.defined()) r.grad_weight = r.grad_weight.to(dtype);
    if (r.grad_bias.defined()) r.grad_bias = r.grad_bias.to(dtype);
  }
  return r;
}

// The gradient factors of the cross-entropy and z-loss terms for a reduced loss.
cpu::LceGradScale reduced_scale(const Problem& p, LinearCrossEntropyParams::Reduction reduction, double grad_output) {
  if (reduction == LinearCrossEntropyParams::Reduction::Sum) return {grad_output, grad_output, nullptr};
  return {grad_output / p.kept_weight, grad_output / p.kept_tokens, nullptr};
}

// The reduced loss in float64: sum (or mean) of the cross-entropy terms plus the z-loss.
double reduced_loss(const Results& r, const Problem& p, const LinearCrossEntropyParams& o) {
  const double ce = r.row_ce.sum().item<double>();
  const double z = o.z_loss > 0 ? o.z_loss * r.row_lse.square().sum().item<double>() : 0.0;
  if (o.reduction == LinearCrossEntropyParams::Reduction::Sum) return ce + z;
  return ce / p.kept_weight + (o.z_loss > 0 ? z / p.kept_tokens : 0.0);
}

// The gradients for autograd's inputs (input, weight, bias), in their shapes.
std::vector<Tensor> as_input_gradients(Results&& r, const Tensor& input) {
  return {r.grad_x.defined() ? r.grad_x.view(input.sizes()) : Tensor(), std::move(r.grad_weight),
          std::move(r.grad_bias)};
}

bool has_gradients(const Results& r) { return r.grad_x.defined() || r.grad_weight.defined() || r.grad_bias.defined(); }

Wanted wanted_from(const std::vector<bool>& needs) { return {needs[0], needs[1], needs.size() > 2 && needs[2]}; }

}  // namespace

Tensor linear_cross_entropy(const Tensor& input, const Tensor& weight, const Tensor& target,
                            const LinearCrossEntropyParams& options) {
  EMBER_RECORD_OP("linear_cross_entropy", input, weight, target);
  const Problem p = prepare(input, weight, target, options);
  const ScalarType dtype = options.loss_dtype.value_or(input.scalar_type());
  const Tensor& bias = options.bias;
  const bool record = autograd::should_record({input, weight, bias});
  const bool reduced = options.reduction != LinearCrossEntropyParams::Reduction::None;
  const Wanted wanted = record && reduced ? Wanted{input.requires_grad(), weight.requires_grad(),
                                                   bias.defined() && bias.requires_grad()}
                                          : Wanted{};
  Results r = run_kernel(p, options, reduced_scale(p, options.reduction, 1.0), wanted);
  Tensor loss = reduced ? scalar_tensor(reduced_loss(r, p, options), dtype)
                        : (r.row_ce + r.row_lse.square() * options.z_loss).to(dtype).reshape(p.loss_shape);
  if (!record) return loss;

  // Gradients computed above for grad_output = 1, handed over by the first backward.
  auto precomputed = std::make_shared<Results>(Results{{}, {}, r.grad_x, r.grad_weight, r.grad_bias});
  r = Results{};
  autograd::SavedTensor saved_input(input), saved_weight(weight), saved_bias(bias), saved_target(target);
  std::vector<Tensor> inputs{input, weight};
  if (bias.defined()) inputs.push_back(bias);
  autograd::record("LinearCrossEntropyBackward", inputs, {loss},
                   [=](std::vector<Tensor>& grads, const std::vector<bool>& needs) -> std::vector<Tensor> {
                     EMBER_CHECK(!is_grad_enabled(), kOp, "double backward (create_graph=true) is not supported");
                     // get() throws if a saved tensor was modified in place since the forward.
                     const Tensor x = saved_input.get(), w = saved_weight.get();
                     saved_bias.get();
                     if (reduced && has_gradients(*precomputed)) {
                       Results ready = std::move(*precomputed);
                       *precomputed = Results{};
                       const double g = grads[0].item<double>();
                       for (Tensor* t : {&ready.grad_x, &ready.grad_weight, &ready.grad_bias})
                         if (t->defined() && g != 1.0) t->mul_(g);
                       return as_input_gradients(std::move(ready), x);
                     }
                     const Problem again = prepare(x, w, saved_target.get(), options);
                     Tensor per_token;
                     cpu::LceGradScale scale;
                     if (reduced) {
                       scale = reduced_scale(again, options.reduction, grads[0].item<double>());
                     } else {
                       per_token = grads[0].to(kFloat64).reshape({again.tokens}).contiguous();
                       scale.per_token = per_token.data_ptr<double>();
                     }
                     return as_input_gradients(run_kernel(again, options, scale, wanted_from(needs)), x);
                   });
  return loss;
}

}  // namespace ember::ops

