// `ember export`: writes a training checkpoint's GPT or a Hugging Face model directory as a
// .ember program (prefill and decode methods over caller-owned KV caches) for libember_rt and
// ember-rt.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "args.h"
#include "ember/ember.h"
#include "ember/atomic_file.h"
#include "ember/data/tokenizers.h"
#include "ember/export.h"
#include "ember/models/pretrained.h"
#include "run_files.h"
#include "train/export_gpt.h"
#include "train/export_pretrained.h"

namespace ember::cli {
namespace {

const char* kExportHelp =
    "usage: ember export (--run DIR | --checkpoint FILE | --model DIR) --out FILE [flags]\n"
    "Exports a decoder language model as a program file with two methods: prefill (tokens\n"
    "[1, T]) and decode (one token at position pos), both over KV caches the caller owns\n"
    "(docs/RUNTIME_OPS.md), for libember_rt and ember-rt. Checks the program against the eager\n"
    "model before writing.\n"
    "  --run DIR            the GPT of DIR/checkpoint.safetensors (ember train)\n"
    "  --checkpoint FILE    a checkpoint written by ember train (instead of --run)\n"
    "  --model DIR          a Hugging Face model directory (config.json, safetensors, and\n"
    "                       tokenizer.json, whose per-id bytes ember-rt prints as text)\n"
    "  --max-seq-len N      --model: the longest sequence the program takes, which sizes its\n"
    "                       caches (default: 512, or the config's max_position_embeddings if less)\n"
    "  --dtype KIND         --model: float32 (default) or bfloat16\n"
    "  --quantize TYPE      --model: weight-only int8 or int4 (ember/quantized.h), as ember\n"
    "                       generate --quantize; a directory written by ember quantize exports\n"
    "                       quantized without it\n"
    "  --out FILE           the .ember file to write\n"
    "  --threads N          thread count\n"
    "  --print              list the program (methods, views, calls)\n";

// The cache length of `--model` exports when --max-seq-len is not given: caches grow with it,
// and a config's max_position_embeddings (32768 and more) would make them gigabytes.
constexpr int64_t kDefaultMaxSeqLen = 512;

std::string megabytes(uint64_t bytes) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return s.str();
}

// ember train's GPT, with the tokenizer it was trained with.
ExportedProgram export_run(const Args& args) {
  const std::string path =
      args.get("checkpoint", args.has("run") ? args.get("run", "") + "/checkpoint.safetensors" : "");
  RunInfo info = read_run_info(path);
  models::GPT model(info.config);
  io::load_checkpoint_weights(path, *model);
  model->eval();
  ExportedProgram program = train::export_gpt(model);
  // The runtime hands metadata out as C strings (ember_rt_metadata): a NUL would cut the alphabet.
  EMBER_CHECK(info.tokenizer_state.find('\0') == std::string::npos, "export",
              "the char tokenizer's alphabet holds a NUL byte, which a program's metadata cannot carry");
  program.set_metadata("tokenizer_kind", info.tokenizer_kind);
  program.set_metadata("tokenizer_state", info.tokenizer_state);
  train::check_against_eager(program, train::cached_decoder(model));
  return program;
}

// A Hugging Face model directory, with its tokenizer's bytes per id and its EOS ids.
ExportedProgram export_model(const Args& args) {
  const std::string dir = args.get("model", "");
  const std::string config_file = dir + "/config.json";
  const models::PretrainedConfig config =
      models::parse_pretrained_config(read_file(config_file, "ember export"), config_file);
  const int64_t max_seq_len = args.get_int("max-seq-len", std::min(kDefaultMaxSeqLen, config.max_position_embeddings));
  if (max_seq_len < 3) throw UsageError{"--max-seq-len must be >= 3, got " + std::to_string(max_seq_len)};
  models::PretrainedOptions options;
  options.dtype = parse_dtype(args);
  options.max_seq_len = max_seq_len;
  options.quantize = parse_quantize(args);
  options.map_weights = true;  // read once, into the program
  models::CausalLM model = models::from_pretrained(dir, options);
  model->eval();
  std::optional<tokenizers::Tokenizer> tokenizer;
  if (std::filesystem::exists(dir + "/tokenizer.json")) tokenizer = tokenizers::Tokenizer::from_file(dir + "/tokenizer.json");
  ExportedProgram program = train::export_pretrained(model, models::read_generation_config(dir).eos_token_ids,
                                                     tokenizer ? &*tokenizer : nullptr);
  train::check_against_eager(program, train::cached_decoder(model));
  return program;
}

}  // namespace

int run_export(const std::vector<std::string>& argv) {
  if (asks_for_help(argv)) {
    std::cout << kExportHelp;
    return 0;
  }
  Args args(argv, {"checkpoint", "run", "model", "max-seq-len", "dtype", "quantize", "out", "threads"}, {"print"});
  if (args.has("threads")) set_num_threads(static_cast<int>(args.get_int("threads", 0)));
  const int sources = static_cast<int>(args.has("checkpoint")) + args.has("run") + args.has("model");
  if (sources != 1) throw UsageError{"exactly one of --checkpoint FILE, --run DIR and --model DIR is required"};
  if (!args.has("model") && (args.has("max-seq-len") || args.has("dtype") || args.has("quantize")))
    throw UsageError{"--max-seq-len, --dtype and --quantize apply to --model only (a GPT keeps its own)"};
  const std::string out = args.get("out", "");
  if (out.empty()) throw UsageError{"--out FILE is required"};

  ExportedProgram program = args.has("model") ? export_model(args) : export_run(args);
  program.save(out);

  std::cout << "wrote " << out << " (" << megabytes(std::filesystem::file_size(out)) << ")\n";
  std::cout << "operators:";
  for (const auto& op : program.program().operators()) std::cout << ' ' << op;
  std::cout << "\n";
  for (const auto& m : program.program().methods) {
    std::cout << "method " << m.name << ": " << m.inputs.size() << " inputs, " << m.instructions.size()
              << " instructions, symbols";
    for (const auto& s : m.symbols) std::cout << ' ' << s.name << " in [" << s.min << ", " << s.max << "]";
    std::cout << "; arena " << m.arena_bytes << " bytes for " << m.intermediate_bytes
              << " bytes of intermediates (" << std::fixed << std::setprecision(3)
              << static_cast<double>(m.arena_bytes) / static_cast<double>(std::max<uint64_t>(m.intermediate_bytes, 1))
              << "x)\n";
  }
  std::cout << "checked: prefill and decode equal the eager model bitwise\n";
  if (args.get_switch("print")) std::cout << program.to_string();
  return 0;
}

}  // namespace ember::cli
