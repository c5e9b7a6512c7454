// `ember export`: writes a training checkpoint's GPT as a .ember program (prefill and
// decode methods over caller-owned KV caches) for libember_rt and ember-rt.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "args.h"
#include "ember/ember.h"
#include "ember/export.h"
#include "run_files.h"
#include "train/export_gpt.h"

namespace ember::cli {
namespace {

const char* kExportHelp =
    "usage: ember export --run DIR --out FILE [flags]\n"
    "Exports the GPT of a training checkpoint as a program file with two methods: prefill\n"
    "(tokens [1, T]) and decode (one token at position pos), both over KV caches the caller\n"
    "owns (docs/PROGRAM_OPS.md). Checks the program against the eager model before writing.\n"
    "  --run DIR            use DIR/checkpoint.safetensors\n"
    "  --checkpoint FILE    a checkpoint written by ember train (instead of --run)\n"
    "  --out FILE           the .ember file to write\n"
    "  --threads N          thread count\n"
    "  --print              list the program (methods, views, calls)\n";

std::string megabytes(uint64_t bytes) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1 << 20) << " MiB";
  return s.str();
}

// The exported methods against eager forward_cached on a short prompt and two decode steps.
void check_against_eager(const ExportedProgram& program, models::GPT model) {
  NoGradGuard no_grad;
  const int64_t prompt = std::min<int64_t>(5, model->config.max_seq_len - 2);
  Tensor tokens = randint(0, model->config.vocab_size, {1, prompt}, TensorOptions().dtype(kInt64));
  models::GPTCache cache = model->make_cache(1);
  std::vector<Tensor> caches = train::make_gpt_cache_inputs(model);
  std::vector<Tensor> inputs = {tokens};
  inputs.insert(inputs.end(), caches.begin(), caches.end());
  EMBER_CHECK(equal(program.run(inputs, "prefill")[0], model->forward_cached(tokens, cache)), "export",
              "the exported prefill differs from the eager model");
  for (int64_t pos = prompt; pos < prompt + 2; ++pos) {
    Tensor next = randint(0, model->config.vocab_size, {1, 1}, TensorOptions().dtype(kInt64));
    std::vector<Tensor> step = {next, full({}, pos, TensorOptions().dtype(kInt64))};
    step.insert(step.end(), caches.begin(), caches.end());
    EMBER_CHECK(equal(program.run(step, "decode")[0], model->forward_cached(next, cache)), "export",
                "the exported decode differs from the eager model at position ", pos);
  }
}

}  // namespace

int run_export(const std::vector<std::string>& argv) {
  if (asks_for_help(argv)) {
    std::cout << kExportHelp;
    return 0;
  }
  Args args(argv, {"checkpoint", "run", "out", "threads"}, {"print"});
  if (args.has("threads")) set_num_threads(static_cast<int>(args.get_int("threads", 0)));
  const std::string path =
      args.get("checkpoint", args.has("run") ? args.get("run", "") + "/checkpoint.safetensors" : "");
  if (path.empty()) throw UsageError{"--checkpoint FILE or --run DIR is required"};
  const std::string out = args.get("out", "");
  if (out.empty()) throw UsageError{"--out FILE is required"};

  RunInfo info = read_run_info(path);
  models::GPT model(info.config);
  io::load_checkpoint_weights(path, *model);
  model->eval();
  ExportedProgram program = train::export_gpt(model);
  program.set_metadata("tokenizer_kind", info.tokenizer_kind);
  // The runtime hands metadata out as C strings (ember_rt_metadata): a NUL would cut the alphabet.
  EMBER_CHECK(info.tokenizer_state.find('\0') == std::string::npos, "export",
              "the char tokenizer's alphabet holds a NUL byte, which a program's metadata cannot carry");
  program.set_metadata("tokenizer_state", info.tokenizer_state);
  check_against_eager(program, model);
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
