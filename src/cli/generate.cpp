// `ember generate`: samples text from a training checkpoint, streaming tokens to stdout.
#include <iostream>

#include "args.h"
#include "ember/detail/sampling.h"
#include "ember/ember.h"
#include "run_files.h"

namespace ember::cli {
namespace {

const char* kGenerateHelp =
    "usage: ember generate --checkpoint FILE [flags]\n"
    "Streams a continuation of --prompt, one decoding step per token over a KV cache.\n"
    "  --checkpoint FILE    a checkpoint written by ember train (or --run DIR)\n"
    "  --run DIR            use DIR/checkpoint.safetensors\n"
    "  --prompt TEXT        text to continue (default: empty)\n"
    "  --tokens N           tokens to generate (default 200)\n"
    "  --temperature X      softmax temperature, 0 = greedy (default 0.8)\n"
    "  --top-k N            keep the N most likely tokens, 0 = all (default 40)\n"
    "  --top-p X            keep the smallest set with probability >= X (default 0.95)\n"
    "  --seed N             sampling seed (default 0)\n"
    "  --threads N          thread count\n";

// Draws a token from logits (detail::sample_token, shared with ember-rt's generation).
int64_t sample(const Tensor& logits, double temperature, int64_t top_k, double top_p, double u) {
  const Tensor l = logits.to(kFloat64).contiguous();
  return detail::sample_token(l.data_ptr<double>(), l.numel(), temperature, top_k, top_p, u);
}

}  // namespace

int run_generate(const std::vector<std::string>& argv) {
  if (asks_for_help(argv)) {
    std::cout << kGenerateHelp;
    return 0;
  }
  Args args(argv, {"checkpoint", "run", "prompt", "tokens", "temperature", "top-k", "top-p", "seed", "threads"}, {});
  if (args.has("threads")) set_num_threads(static_cast<int>(args.get_int("threads", 0)));
  std::string path = args.get("checkpoint", args.has("run") ? args.get("run", "") + "/checkpoint.safetensors" : "");
  if (path.empty()) throw UsageError{"--checkpoint FILE or --run DIR is required"};
  const int64_t count = args.get_int("tokens", 200), top_k = args.get_int("top-k", 40);
  const double temperature = args.get_double("temperature", 0.8), top_p = args.get_double("top-p", 0.95);
  const uint64_t seed = static_cast<uint64_t>(args.get_int("seed", 0));
  if (count < 0) throw UsageError{"--tokens must be >= 0"};
  if (top_p <= 0 || top_p > 1) throw UsageError{"--top-p must be in (0, 1]"};

  RunInfo info = read_run_info(path);
  auto tokenizer = data::make_tokenizer(info.tokenizer_kind, info.tokenizer_state);
  models::GPT model(info.config);
  io::load_checkpoint_weights(path, *model);
  model->eval();
  NoGradGuard guard;

  // The prompt fills a KV cache (prefill); then each token is one decoding step over it.
  // When the cache is full, it restarts from the latest half of the context.
  const std::string prompt = args.get("prompt", "");
  std::vector<int64_t> tokens = tokenizer->encode(prompt.empty() ? "\n" : prompt);
  const int64_t max_len = info.config.max_seq_len;
  auto prefill = [&](int64_t keep, models::GPTCache& cache) {
    keep = std::min<int64_t>(keep, static_cast<int64_t>(tokens.size()));
    cache = model->make_cache(1);
    std::vector<int64_t> context(tokens.end() - keep, tokens.end());
    return model->forward_cached(tensor(context).view({1, keep}), cache).select(1, keep - 1).squeeze(0);
  };
  models::GPTCache cache;
  Tensor logits = prefill(max_len, cache);
  std::cout << prompt << std::flush;
  for (int64_t i = 0; i < count; ++i) {
    const double u = detail::uniform_from_bits(random_bits(seed, static_cast<uint64_t>(i)));
    const int64_t next = sample(logits, temperature, top_k, top_p, u);
    tokens.push_back(next);
    std::cout << tokenizer->decode({next}) << std::flush;
    if (i + 1 == count) break;
    if (cache.length() == max_len) logits = prefill(max_len / 2, cache);
    else logits = model->forward_cached(tensor(std::vector<int64_t>{next}).view({1, 1}), cache).select(1, 0).squeeze(0);
  }
  std::cout << "\n";
  return 0;
}

}  // namespace ember::cli
