// `ember bench graph`: graph replay (ember/graph.h) against the same code run eagerly, side
// by side in alternating rounds, where per-op dispatch is a large share of the time:
// - mlp_train_step: forward, backward and AdamW of a 64 -> 128 -> 10 MLP at batch 16;
// - gpt_decode_step: one token through a small GPT with a static KV cache;
// - pretrained_decode_step_bf16 / _int4: CausalLM::decode_step (what models::CapturedDecoder
//   replays) of a Qwen2 with Qwen2.5-0.5B's 24 layers at tiny widths (hidden size 256), where
//   the ops' host work is most of a step, in bf16 and with int4 weights.
// Figures are medians over rounds of the per-call microseconds.
#include <algorithm>

#include "bench.h"
#include "ember/ember.h"
#include "ember/models/gpt.h"
#include "ember/models/pretrained.h"

namespace ember::bench {
namespace {

namespace F = nn::functional;


// Microseconds per call of `eager` and `replay`, alternating rounds of `calls` calls each.
nlohmann::json compare(const std::string& name, const std::function<void()>& eager,
                       const std::function<void()>& replay, int rounds, int calls) {
  std::vector<double> eager_us, replay_us;
  auto per_call_us = [calls](const std::function<void()>& fn) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) fn();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / calls;
  };
  eager();
  replay();
  for (int r = 0; r < rounds; ++r) {
    eager_us.push_back(per_call_us(eager));
    replay_us.push_back(per_call_us(replay));
  }
  const double e = median(eager_us), g = median(replay_us);
  note(name + ": replay " + std::to_string(g) + " us, eager " + std::to_string(e) + " us");
  return {{"name", name}, {"replay_us", g}, {"eager_us", e}, {"speedup", e / g}};
}

nlohmann::json mlp_train_step(int rounds, int calls) {
  auto make = [] {
    manual_seed(0);
    return nn::Sequential(nn::Linear(64, 128), nn::ReLU(), nn::Linear(128, 10));
  };
  nn::Sequential eager_model = make(), graph_model = make();
  auto options = optim::AdamWOptions(1e-3).capturable(true);
  optim::AdamW eager_opt(eager_model->parameters(), options), graph_opt(graph_model->parameters(), options);
  Tensor input = randn({16, 64}), target = randint(0, 10, {16});
  auto step = [&](nn::Sequential& model, optim::AdamW& opt) {
    opt.zero_grad(true);
    F::cross_entropy(model->forward(input), target).backward();
    opt.step();
  };
  for (int i = 0; i < 3; ++i) step(graph_model, graph_opt);  // warm-up: optimizer state, tuned GEMMs
  graph_opt.zero_grad(true);
  Graph graph;
  graph.capture([&] {
    F::cross_entropy(graph_model->forward(input), target).backward();
    graph_opt.step();
  });
  return compare("mlp_train_step", [&] { step(eager_model, eager_opt); }, [&] { graph.replay(); }, rounds, calls);
}

nlohmann::json gpt_decode_step(int rounds, int calls) {
  const models::GPTConfig config{.vocab_size = 256, .dim = 128, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2,
                                 .hidden_dim = 256, .max_seq_len = 128};
  manual_seed(0);
  models::GPT model(config);
  NoGradGuard no_grad;
  models::GPTCache eager_cache = model->make_cache(1), graph_cache = model->make_cache(1);
  Tensor token = tensor(std::vector<int64_t>{7}).view({1, 1}), position = tensor(std::vector<int64_t>{40});
  model->decode_step(token, position, graph_cache);  // warm-up: tuned GEMMs
  Graph graph;
  graph.capture([&] { model->decode_step(token, position, graph_cache); });
  return compare("gpt_decode_step", [&] { model->decode_step(token, position, eager_cache); },
                 [&] { graph.replay(); }, rounds, calls);
}

nlohmann::json pretrained_decode_step(const std::string& quantize, int rounds, int calls) {
  const models::PretrainedConfig config = models::parse_pretrained_config(
      R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 256,
          "intermediate_size": 512, "num_hidden_layers": 24, "num_attention_heads": 4,
          "num_key_value_heads": 2, "max_position_embeddings": 4096, "rms_norm_eps": 1e-06,
          "rope_theta": 1000000.0, "tie_word_embeddings": true, "hidden_act": "silu",
          "vocab_size": 1024, "torch_dtype": "bfloat16"})",
      "bench graph");
  manual_seed(0);
  std::map<std::string, Tensor> weights;
  for (const models::CheckpointTensor& t : models::checkpoint_tensors(config)) {
    const bool norm = t.name.find("norm") != std::string::npos && t.shape.size() == 1;
    weights[t.name] = (norm ? ones(t.shape) : randn(t.shape) * 0.02).to(kBFloat16);
  }
  models::CausalLM model(config, std::move(weights), models::PretrainedOptions{kBFloat16});
  if (!quantize.empty()) model->quantize(quantize);
  NoGradGuard no_grad;
  models::DecoderCache eager_cache = model->make_cache(1, 64), graph_cache = model->make_cache(1, 64);
  Tensor token = tensor(std::vector<int64_t>{7}).view({1, 1}), position = tensor(std::vector<int64_t>{40});
  model->decode_step(token, position, graph_cache);  // warm-up: tuned products, the rotary tables
  Graph graph;
  graph.capture([&] { model->decode_step(token, position, graph_cache); });
  return compare("pretrained_decode_step_" + (quantize.empty() ? std::string("bf16") : quantize),
                 [&] { model->decode_step(token, position, eager_cache); }, [&] { graph.replay(); }, rounds, calls);
}

nlohmann::json run(const Options& options) {
  const int rounds = options.quick ? 5 : 21, calls = options.quick ? 20 : 100;
  nlohmann::json results = nlohmann::json::array();
  results.push_back(mlp_train_step(rounds, calls));
  results.push_back(gpt_decode_step(rounds, calls));
  results.push_back(pretrained_decode_step("", rounds, calls));
  results.push_back(pretrained_decode_step("int4", rounds, calls));
  return results;
}

Register reg("graph", run);

}  // namespace
}  // namespace ember::bench
