// `ember generate --model DIR`, `ember perplexity` and `ember quantize`: Hugging Face model directories
// (config.json, safetensors, tokenizer.json) run as llama.cpp's and transformers' tools do.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "args.h"
#include "ember/data/tokenizers.h"
#include "ember/detail/sampling.h"
#include "ember/ember.h"
#include "ember/models/pretrained.h"

namespace ember::cli {
namespace {

const char* kGenerateModelHelp =
    "usage: ember generate --model DIR --prompt TEXT [flags]\n"
    "Streams a continuation of --prompt from a Hugging Face model directory (config.json,\n"
    "model.safetensors or shards, tokenizer.json), stopping at the model's EOS token(s).\n"
    "Prefill and decode speeds go to stderr at the end.\n"
    "  --model DIR          the model directory\n"
    "  --prompt TEXT        text to continue (the tokenizer adds its BOS as transformers does)\n"
    "  --max-new-tokens N   tokens to generate at most (default 128)\n"
    "  --greedy             always the most likely token\n"
    "  --temperature X      sample at this temperature (default: generation_config.json's, else 1.0)\n"
    "  --top-k N            keep the N most likely tokens, 0 = all (default: the model's, else 50)\n"
    "  --top-p X            nucleus sampling threshold (default: the model's, else 1.0)\n"
    "  --seed N             sampling seed (default 0)\n"
    "  --dtype KIND         float32 (default) or bfloat16\n"
    "  --quantize TYPE      weight-only (ember/quantized.h): int8 projections and head, or int4\n"
    "                       projections and an int8 head\n"
    "  --mmap               use the files' weights mapped, not copied (loads faster, decodes\n"
    "                       slower: PretrainedOptions::map_weights)\n"
    "  --threads N          thread count\n"
    "Without --greedy, --temperature, --top-k or --top-p, the model's generation_config.json\n"
    "decides: do_sample true samples with its settings, otherwise decoding is greedy.\n";

const char* kPerplexityHelp =
    "usage: ember perplexity --model DIR --file F [--ctx N] [--json]\n"
    "Mean negative log-likelihood (nats per token) and perplexity of a text file, as\n"
    "llama-perplexity: the file's tokens (no special tokens added) in non-overlapping windows of\n"
    "--ctx tokens, each window one forward from scratch scoring its tokens 2..ctx; the tokens\n"
    "after the last full window are dropped.\n"
    "  --model DIR          the model directory\n"
    "  --file F             the text\n"
    "  --ctx N              window length (default 512)\n"
    "  --json               print {\"tokens\": N, \"nll\": X, \"perplexity\": Y}\n"
    "  --dtype KIND         float32 (default) or bfloat16\n"
    "  --quantize TYPE      weight-only (ember/quantized.h): int8 projections and head, or int4\n"
    "                       projections and an int8 head\n"
    "  --mmap               use the files' weights mapped, not copied (loads faster, decodes\n"
    "                       slower: PretrainedOptions::map_weights)\n"
    "  --threads N          thread count\n";

const char* kQuantizeHelp =
    "usage: ember quantize --model DIR --out DIR2 --type int8|int4 [--dtype KIND]\n"
    "Writes DIR's model with weight-only quantized projections and head (ember/quantized.h) to\n"
    "DIR2: model.safetensors holds each quantized weight's blocks (<name>.qweight, <name>.scales)\n"
    "and the other tensors; config.json, generation_config.json and the tokenizer files are\n"
    "copied. from_pretrained, ember generate and ember perplexity read DIR2 back quantized.\n"
    "  --model DIR          the model directory\n"
    "  --out DIR2           where to write (not DIR)\n"
    "  --type TYPE          int8 (projections and head) or int4 (projections; the head in int8)\n"
    "  --dtype KIND         dtype of the float tensors kept (embeddings, norms): float32 (default)\n"
    "                       or bfloat16\n"
    "  --threads N          thread count\n";

models::PretrainedOptions pretrained_options(const Args& args) {
  models::PretrainedOptions options;
  options.dtype = parse_dtype(args);
  options.quantize = parse_quantize(args);
  options.map_weights = args.get_switch("mmap");
  return options;
}

std::string required(const Args& args, const std::string& flag) {
  if (!args.has(flag)) throw UsageError{"--" + flag + " is required"};
  return args.get(flag, "");
}

struct Sampling {
  double temperature = 0;  // <= 0: greedy
  int64_t top_k = 0;
  double top_p = 1;
};

// The command line's sampling settings over the model's generation config.
Sampling sampling_of(const Args& args, const models::GenerationConfig& generation) {
  const bool asked = args.has("temperature") || args.has("top-k") || args.has("top-p");
  Sampling s;
  if (args.get_switch("greedy") || (!asked && !generation.do_sample.value_or(false))) return s;
  s.temperature = args.get_double("temperature", generation.temperature.value_or(1.0));
  s.top_k = args.get_int("top-k", generation.top_k.value_or(50));
  s.top_p = args.get_double("top-p", generation.top_p.value_or(1.0));
  if (s.temperature <= 0) throw UsageError{"--temperature must be > 0 (use --greedy for greedy decoding)"};
  if (s.top_k < 0) throw UsageError{"--top-k must be >= 0"};
  if (s.top_p <= 0 || s.top_p > 1) throw UsageError{"--top-p must be in (0, 1]"};
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int run_generate_model(const std::vector<std::string>& argv) {
  if (asks_for_help(argv)) {
    std::cout << kGenerateModelHelp;
    return 0;
  }
  Args args(argv, {"model", "prompt", "max-new-tokens", "temperature", "top-k", "top-p", "seed", "dtype", "quantize", "threads"},
            {"greedy", "mmap"});
  if (args.has("threads")) set_num_threads(static_cast<int>(args.get_int("threads", 0)));
  const std::string dir = required(args, "model");
  const int64_t max_new_tokens = args.get_int("max-new-tokens", 128);
  if (max_new_tokens < 0) throw UsageError{"--max-new-tokens must be >= 0"};
  const uint64_t seed = static_cast<uint64_t>(args.get_int("seed", 0));

  const auto tokenizer = tokenizers::Tokenizer::from_file(dir + "/tokenizer.json");
  const models::GenerationConfig generation = models::read_generation_config(dir);
  const Sampling sampling = sampling_of(args, generation);
  models::CausalLM model = models::from_pretrained(dir, pretrained_options(args));
  model->eval();
  NoGradGuard no_grad;

  const std::string prompt = args.get("prompt", "");
  std::vector<int64_t> prompt_ids = tokenizer.encode(prompt, /*add_special_tokens=*/true);
  if (prompt_ids.empty()) {
    EMBER_CHECK(generation.bos_token_id.has_value(), "generate",
                "the prompt is empty and the model names no bos_token_id to start from");
    prompt_ids.push_back(*generation.bos_token_id);
  }
  const int64_t prompt_length = static_cast<int64_t>(prompt_ids.size());
  const int64_t max_positions = model->max_seq_len();
  EMBER_CHECK(prompt_length < max_positions, "generate", "the prompt has ", prompt_length,
              " tokens; the model takes at most ", max_positions, " positions");
  const int64_t cache_length = std::min(max_positions, prompt_length + max_new_tokens);
  models::DecoderCache cache = model->make_cache(1, cache_length);

  std::cout << prompt << std::flush;
  const auto prefill_start = std::chrono::steady_clock::now();
  Tensor logits = model->forward_cached(tensor(prompt_ids).view({1, prompt_length}), cache, /*logits_to_keep=*/1)
                      .select(1, -1)
                      .squeeze(0);
  const double prefill_seconds = seconds_since(prefill_start);

  models::CapturedDecoder decoder(model, cache);  // each step replays one captured graph
  tokenizers::DecodeStream stream(tokenizer, /*skip_special_tokens=*/true);
  int64_t generated = 0, decode_steps = 0;  // the first token comes from the prefill's logits
  const auto decode_start = std::chrono::steady_clock::now();
  while (generated < max_new_tokens) {
    const Tensor l = logits.to(kFloat64).contiguous();
    const double u = detail::uniform_from_bits(random_bits(seed, static_cast<uint64_t>(generated)));
    const int64_t next =
        detail::sample_token(l.data_ptr<double>(), l.numel(), sampling.temperature, sampling.top_k, sampling.top_p, u);
    const auto& eos = generation.eos_token_ids;
    if (std::find(eos.begin(), eos.end(), next) != eos.end()) break;
    ++generated;
    std::cout << stream.step(next) << std::flush;
    if (generated == max_new_tokens || cache.length() == cache_length) break;
    logits = decoder.step(tensor(std::vector<int64_t>{next}).view({1, 1})).squeeze(0);
    ++decode_steps;
  }
  std::cout << stream.flush() << "\n" << std::flush;
  const double decode_seconds = seconds_since(decode_start);
  std::cerr << std::fixed << std::setprecision(1) << "prefill: " << prompt_length << " tokens, "
            << prompt_length / prefill_seconds << " tokens/s; decode: " << generated << " tokens, "
            << (decode_steps > 0 ? decode_steps / decode_seconds : 0.0) << " tokens/s\n";
  return 0;
}

int run_perplexity(const std::vector<std::string>& argv) {
  if (asks_for_help(argv)) {
    std::cout << kPerplexityHelp;
    return 0;
  }
  Args args(argv, {"model", "file", "ctx", "dtype", "quantize", "threads"}, {"json", "mmap"});
  if (args.has("threads")) set_num_threads(static_cast<int>(args.get_int("threads", 0)));
  const std::string dir = required(args, "model"), file = required(args, "file");
  const int64_t ctx = args.get_int("ctx", 512);
  if (ctx < 2) throw UsageError{"--ctx must be >= 2"};

  const auto tokenizer = tokenizers::Tokenizer::from_file(dir + "/tokenizer.json");
  const std::vector<int64_t> ids = tokenizer.encode(data::read_text_file(file), /*add_special_tokens=*/false);
  models::CausalLM model = models::from_pretrained(dir, pretrained_options(args));
  model->eval();
  NoGradGuard no_grad;
  const models::PerplexityResult result = models::perplexity(*model, ids, ctx);
  if (args.get_switch("json")) {
    std::cout << nlohmann::json{{"tokens", result.tokens}, {"nll", result.nll}, {"perplexity", result.perplexity}}.dump()
              << "\n";
  } else {
    std::cout << std::setprecision(8) << "tokens " << result.tokens << " (" << ids.size() << " in the file, windows of "
              << ctx << ")\nnll " << result.nll << " nats/token\nperplexity " << result.perplexity << "\n";
  }
  return 0;
}

int run_quantize(const std::vector<std::string>& argv) {
  if (asks_for_help(argv)) {
    std::cout << kQuantizeHelp;
    return 0;
  }
  Args args(argv, {"model", "out", "type", "dtype", "threads"}, {});
  if (args.has("threads")) set_num_threads(static_cast<int>(args.get_int("threads", 0)));
  const std::string dir = required(args, "model"), out = required(args, "out"), type = required(args, "type");
  if (type != "int8" && type != "int4") throw UsageError{"--type must be int8 or int4, got '" + type + "'"};
  namespace fs = std::filesystem;
  EMBER_CHECK(fs::weakly_canonical(dir) != fs::weakly_canonical(out), "quantize", "--out ", out,
              " is the model's own directory: write the quantized model elsewhere");
  models::PretrainedOptions options;
  options.dtype = parse_dtype(args);
  options.quantize = type;
  models::CausalLM model = models::from_pretrained(dir, options);
  models::save_quantized(model, out);
  // The directory's other files (tokenizer, its settings) as they are.
  for (const auto& file : fs::directory_iterator(dir)) {
    const std::string name = file.path().filename().string();
    const bool written = name == "config.json" || name == "generation_config.json" ||
                         name.ends_with(".safetensors") || name == "model.safetensors.index.json";
    if (file.is_regular_file() && !written)
      fs::copy_file(file.path(), fs::path(out) / name, fs::copy_options::overwrite_existing);
  }
  std::cout << "wrote " << out << " (" << type << ", " << fs::file_size(fs::path(out) / "model.safetensors")
            << " bytes of weights)\n";
  return 0;
}

}  // namespace ember::cli
