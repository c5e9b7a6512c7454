// `ember bench pretrained`: prefill and greedy-decode tokens/s of pretrained decoders with the
// real configurations of Qwen2.5-0.5B and Llama-3.2-1B (random weights made here), in float32,
// bfloat16 and weight-only int8 and int4 (the bf16 model quantized). The same weights, saved by
// save_pretrained to a scratch directory, run in the same run under the peers that are found: transformers' eager forward and `generate`
// (bench/peers/pretrained_torch.py, under EMBER_TORCH_PYTHON, else python3) and llama.cpp on GGUF
// conversions of the directory (bench/peers/pretrained_llamacpp.py, under EMBER_LLAMACPP_PYTHON,
// else the torch Python, where llama-cpp-python and gguf import).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>

#include "bench.h"
#include "ember/backends.h"
#include "ember/ember.h"
#include "ember/models/pretrained.h"

namespace ember::bench {
namespace {

struct ModelCase {
  const char* name;
  const char* config_json;  // the published config.json's fields that shape the compute
};

const ModelCase kCases[] = {
    {"qwen2.5-0.5b",
     R"({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
         "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
         "num_key_value_heads": 2, "max_position_embeddings": 32768, "rms_norm_eps": 1e-06,
         "rope_theta": 1000000.0, "sliding_window": 32768, "use_sliding_window": false,
         "max_window_layers": 24, "tie_word_embeddings": true, "hidden_act": "silu",
         "vocab_size": 151936, "bos_token_id": 151643, "eos_token_id": 151643, "torch_dtype": "bfloat16"})"},
    {"llama-3.2-1b",
     R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
         "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
         "num_key_value_heads": 8, "head_dim": 64, "max_position_embeddings": 131072,
         "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "rope_scaling": {"factor": 32.0,
         "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192,
         "rope_type": "llama3"}, "tie_word_embeddings": true, "hidden_act": "silu",
         "attention_bias": false, "mlp_bias": false, "vocab_size": 128256, "bos_token_id": 128000,
         "eos_token_id": 128001, "torch_dtype": "bfloat16"})"},
};

// Random weights of `config` in `dtype`: norms at one, everything else N(0, 0.02).
models::CausalLM random_model(const models::PretrainedConfig& config, ScalarType dtype) {
  manual_seed(0);
  std::map<std::string, Tensor> weights;
  for (const models::CheckpointTensor& t : models::checkpoint_tensors(config)) {
    const bool norm = t.name.find("norm") != std::string::npos && t.shape.size() == 1;
    weights[t.name] = (norm ? ones(t.shape) : randn(t.shape) * 0.02).to(dtype);
  }
  return models::CausalLM(config, std::move(weights), models::PretrainedOptions{dtype});
}

double milliseconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

struct Speeds {
  double prefill_tokens_per_s = 0, decode_tokens_per_s = 0;
};

// Prefill: `prompt` tokens into an empty cache, best of `reps`. Decode: `steps` single-token
// steps after a 16-token prompt, best of `reps` (tokens per second of the steps alone), through
// a CapturedDecoder as `ember generate` decodes (its capture in the warm-up round).
Speeds measure(models::CausalLM& model, int64_t prompt, int64_t steps, int reps) {
  NoGradGuard no_grad;
  const int64_t vocab = model->config().vocab_size;
  const Tensor prompt_ids = randint(0, vocab, {1, prompt});
  Speeds s;
  double best = 1e30;
  for (int r = 0; r <= reps; ++r) {  // the first round warms up
    models::DecoderCache cache = model->make_cache(1, prompt);
    const auto start = std::chrono::steady_clock::now();
    model->forward_cached(prompt_ids, cache, /*logits_to_keep=*/1);
    if (r > 0) best = std::min(best, milliseconds_since(start));
  }
  s.prefill_tokens_per_s = static_cast<double>(prompt) / best * 1e3;
  best = 1e30;
  models::DecoderCache cache = model->make_cache(1, 16 + steps);  // one cache: the decoder's graph holds its buffers
  models::CapturedDecoder decoder(model, cache);
  for (int r = 0; r <= reps; ++r) {
    for (nn::attention::KVCache& layer : cache.layers) layer.clear();
    Tensor logits = model->forward_cached(prompt_ids.narrow(1, 0, 16), cache, /*logits_to_keep=*/1);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < steps; ++i) {
      const Tensor next = logits.reshape({-1}).argmax().reshape({1, 1});
      logits = decoder.step(next);
    }
    if (r > 0) best = std::min(best, milliseconds_since(start));
  }
  s.decode_tokens_per_s = static_cast<double>(steps) / best * 1e3;
  return s;
}

// Note [Alternated peers]
// Decoding is bound by memory bandwidth, and on a shared machine that bandwidth swings by
// 10-30% over minutes: figures taken one after another compare the minutes, not the programs.
// So ember and each peer of a row's own precision run in turn, `rounds` times (one measured
// repetition each, after its warm-up), and each side keeps its best prefill and best decode:
// every side gets as many windows of the same span. The other llama.cpp types of a bf16 row
// (F16), shown beside it, run once at the end with `reps` repetitions.
struct PeerRun {
  std::string python, script, arguments;
  nlohmann::json best = nlohmann::json::object();  // prefill and decode tokens/s: the best of the rounds

  void run_once() {
    if (python.empty()) return;
    for (const nlohmann::json& line : run_peer(python, script, arguments)) {
      if (!line.contains("prefill_tokens_per_s") || !line.contains("decode_tokens_per_s")) continue;
      for (const char* key : {"prefill_tokens_per_s", "decode_tokens_per_s"})
        best[key] = std::max(best.value(key, 0.0), line.at(key).get<double>());
    }
  }
  bool ran() const { return best.contains("decode_tokens_per_s"); }
};

Speeds best_of(const Speeds& a, const Speeds& b) {
  return {std::max(a.prefill_tokens_per_s, b.prefill_tokens_per_s), std::max(a.decode_tokens_per_s, b.decode_tokens_per_s)};
}

Speeds alternate(int rounds, const std::function<Speeds()>& ember, std::vector<PeerRun*> peers) {
  Speeds best;
  for (int round = 0; round < rounds; ++round) {
    best = best_of(best, ember());
    for (PeerRun* peer : peers) peer->run_once();
  }
  return best;
}

// A peer's figures as columns of `row`, prefixed (`transformers_`, `llamacpp_`, `llamacpp_f16_`),
// with the ratios `*_vs_<name>` when `name` is given.
void add_peer_columns(nlohmann::json& row, const Speeds& ember, const nlohmann::json& peer, const std::string& prefix,
                      const std::string& name) {
  const double prefill = peer.at("prefill_tokens_per_s").get<double>();
  const double decode = peer.at("decode_tokens_per_s").get<double>();
  row[prefix + "prefill_tokens_per_s"] = prefill;
  row[prefix + "decode_tokens_per_s"] = decode;
  if (!name.empty()) {
    row["prefill_vs_" + name] = ember.prefill_tokens_per_s / prefill;
    row["decode_vs_" + name] = ember.decode_tokens_per_s / decode;
  }
}

nlohmann::json run(const Options& options) {
  const int64_t prompt = options.quick ? 64 : 512, steps = options.quick ? 8 : 64;
  const int reps = options.quick ? 1 : 3, rounds = options.quick ? 1 : 3;
  const std::string torch = torch_python();
  if (torch.empty()) note("no Python with PyTorch found (EMBER_TORCH_PYTHON, python3): no transformers columns");
  const std::string llamacpp = llamacpp_python();
  if (llamacpp.empty())
    note("no Python with llama-cpp-python and gguf found (EMBER_LLAMACPP_PYTHON, the torch Python): no llamacpp columns");
  const std::filesystem::path scratch = std::filesystem::temp_directory_path() / "ember-bench-pretrained";
  // The GGUF conversions, kept across a row's rounds (each peer run is a new process).
  const std::filesystem::path gguf_scratch = std::filesystem::temp_directory_path() / "ember-bench-pretrained-gguf";
  const std::string sizes = "--model '" + scratch.string() + "' --prefill " + std::to_string(prompt) + " --decode " +
                            std::to_string(steps);
  const std::string llamacpp_sizes = sizes + " --scratch '" + gguf_scratch.string() + "'";
  nlohmann::json results = nlohmann::json::array();
  for (const ModelCase& c : kCases) {
    const models::PretrainedConfig config = models::parse_pretrained_config(c.config_json, c.name);
    for (ScalarType dtype : {kBFloat16, kFloat32}) {
      const std::string dtype_name = dtype == kBFloat16 ? "bf16" : "f32";
      const std::string row_name = std::string(c.name) + "_" + dtype_name;
      const std::vector<std::string> quantize_types =
          dtype == kBFloat16 ? std::vector<std::string>{"int8", "int4"} : std::vector<std::string>{};
      bool selected = row_name.find(options.only) != std::string::npos;
      for (const std::string& type : quantize_types)
        selected |= (std::string(c.name) + "_" + type).find(options.only) != std::string::npos;
      if (!selected) continue;
      note("ember bench pretrained: " + row_name);
      models::CausalLM model = random_model(config, dtype);
      const bool peers = !torch.empty() || !llamacpp.empty();
      std::filesystem::remove_all(scratch);
      std::filesystem::remove_all(gguf_scratch);
      if (peers) models::save_pretrained(model, scratch.string());  // float weights, read by every peer
      auto measure_model = [&] { return measure(model, prompt, steps, 1); };
      PeerRun transformers{torch, "pretrained_torch.py",
                           sizes + " --reps 1 --dtype " + (dtype == kBFloat16 ? "bfloat16" : "float32")};
      PeerRun llamacpp_own{llamacpp, "pretrained_llamacpp.py",
                           llamacpp_sizes + " --reps 1 --types " + (dtype == kBFloat16 ? "bf16" : "f32")};
      const Speeds ember = alternate(rounds, measure_model, {&transformers, &llamacpp_own});
      auto make_row = [&](const std::string& name, const Speeds& speeds) {
        return nlohmann::json{{"name", name},
                              {"cpu", backends::cpu_info().model},
                              {"prefill_tokens", prompt},
                              {"decode_tokens", steps},
                              {"threads", get_num_threads()},
                              {"rounds", rounds},
                              {"prefill_tokens_per_s", speeds.prefill_tokens_per_s},
                              {"decode_tokens_per_s", speeds.decode_tokens_per_s}};
      };
      nlohmann::json row = make_row(row_name, ember);
      if (transformers.ran()) add_peer_columns(row, ember, transformers.best, "transformers_", "transformers");
      if (llamacpp_own.ran()) add_peer_columns(row, ember, llamacpp_own.best, "llamacpp_", "llamacpp");
      if (dtype == kBFloat16 && !llamacpp.empty()) {
        PeerRun f16{llamacpp, "pretrained_llamacpp.py", llamacpp_sizes + " --reps " + std::to_string(reps) + " --types f16"};
        f16.run_once();
        if (f16.ran()) add_peer_columns(row, ember, f16.best, "llamacpp_f16_", "");
      }
      results.push_back(row);
      // The bf16 weights quantized (weight-only; the float weights, which the peers read, are the
      // same): the `_int8` and `_int4` rows, each alternated with llama.cpp's Q8_0 / Q4_0 of the
      // same weights and with the bf16 model itself, whose speeds in the same windows give the
      // ratios `*_vs_bf16` (Note [Alternated peers]: the bf16 row's own figures come from other
      // minutes).
      for (const std::string& type : quantize_types) {
        const std::string name = std::string(c.name) + "_" + type;
        note("ember bench pretrained: " + name);
        models::CausalLM quantized = random_model(config, dtype);
        quantized->quantize(type);
        const std::string gguf_type = type == "int8" ? "q8_0" : "q4_0";
        PeerRun llamacpp_quantized{llamacpp, "pretrained_llamacpp.py", llamacpp_sizes + " --reps 1 --types " + gguf_type};
        Speeds bf16_beside;
        const Speeds speeds = alternate(
            rounds,
            [&] {
              bf16_beside = best_of(bf16_beside, measure_model());
              return measure(quantized, prompt, steps, 1);
            },
            {&llamacpp_quantized});
        nlohmann::json q = make_row(name, speeds);
        q["bf16_prefill_tokens_per_s"] = bf16_beside.prefill_tokens_per_s;
        q["bf16_decode_tokens_per_s"] = bf16_beside.decode_tokens_per_s;
        q["prefill_vs_bf16"] = speeds.prefill_tokens_per_s / bf16_beside.prefill_tokens_per_s;
        q["decode_vs_bf16"] = speeds.decode_tokens_per_s / bf16_beside.decode_tokens_per_s;
        q["kernel_isa"] = backends::cpu_info().dispatch_isa;  // the level of its decode kernels
        // Its prompt's products (Note [Quantized prompts on AMX]).
        q["prefill_kernel"] = quantized::prompt_kernel();
        if (llamacpp_quantized.ran()) add_peer_columns(q, speeds, llamacpp_quantized.best, "llamacpp_", "llamacpp");
        results.push_back(q);
      }
      std::filesystem::remove_all(scratch);
      std::filesystem::remove_all(gguf_scratch);
    }
  }
  return results;
}

Register registration("pretrained", run);

}  // namespace
}  // namespace ember::bench
