// `ember bench train`: training throughput of the default GPT of `ember train` (the same
// model, optimizer, clipping and packed byte batches of the default corpus), in float32
// and bfloat16 compute. bench/peers/gpt_torch.py prints PyTorch's figure for the same run.
#include "bench.h"
#include "train/train_step.h"
#include "ember/ember.h"

namespace ember::bench {
namespace {

std::string row_name(const models::GPTConfig& c, int64_t batch, int64_t seq_len, ScalarType dtype) {
  return "gpt_d" + std::to_string(c.dim) + "_l" + std::to_string(c.n_layers) + "_h" + std::to_string(c.n_heads) +
         "_kv" + std::to_string(c.n_kv_heads) + "_f" + std::to_string(c.hidden_dim) + "_t" + std::to_string(seq_len) +
         "_b" + std::to_string(batch) + (dtype == kBFloat16 ? "_bf16" : "_f32");
}

nlohmann::json run(const Options& options) {
  const int64_t batch = 16, seq_len = 128;
  const int warmup_steps = 3, steps = options.quick ? 5 : 30;
  auto tokenizer = data::make_tokenizer("byte", "");
  const data::SplitStreams streams =
      data::tokenize_split(data::split_documents(data::read_corpus(data::default_corpus_path())), *tokenizer);
  nlohmann::json results = nlohmann::json::array();
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    manual_seed(1337);
    models::GPTConfig config;
    models::GPT model(config);
    model->set_compute_dtype(dtype);
    optim::AdamW optimizer = train::make_optimizer(model, 2e-3, 0.1);
    int64_t index = 0;
    auto step = [&] {
      return train::train_step(
          model, optimizer, 1,
          [&](int64_t) { return data::sample_batch(streams.train, batch, seq_len, 1, static_cast<uint64_t>(index++)); },
          1.0, {});
    };
    for (int i = 0; i < warmup_steps; ++i) step();
    // Median step time: robust to the odd slow step on a shared machine.
    const double step_ms = time_ms([&] { step(); }, steps);
    nlohmann::json r = {{"name", row_name(config, batch, seq_len, dtype)},
                        {"step_ms", step_ms},
                        {"tokens_per_s", static_cast<double>(batch * seq_len) / step_ms * 1e3},
                        {"threads", get_num_threads()}};
    note(r.dump());
    results.push_back(r);
  }
  return results;
}

Register reg("train", run);

}  // namespace
}  // namespace ember::bench
