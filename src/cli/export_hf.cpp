// `ember export-hf --run RUN --out DIR`: the model a `train --init` run fine-tuned, as a Hugging
// Face directory (LoRA adapters merged into the base weights) with the base model's tokenizer
// files, for transformers or any tool that reads that layout.
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "args.h"
#include "ember/atomic_file.h"
#include "ember/data/tokenizers.h"
#include "ember/ember.h"
#include "ember/models/lora.h"
#include "ember/io/safetensors.h"
#include "ember/models/pretrained.h"

namespace ember::cli {
namespace {

namespace fs = std::filesystem;
constexpr const char* kOp = "export-hf";

const char* kExportHfHelp =
    "usage: ember export-hf --run RUN --out DIR [--dtype float32|bfloat16]\n"
    "Writes the model fine-tuned by `ember train --init ... --out RUN` to DIR as a Hugging Face\n"
    "model directory: config.json, model.safetensors, generation_config.json and the base model's\n"
    "tokenizer files. LoRA adapters are merged into the base weights (in float32, then stored in\n"
    "--dtype, default float32).\n"
    "  --logits-text TEXT --logits-out FILE   also write, for TEXT in the base tokenizer's ids (no\n"
    "                       special tokens), input_ids [1, T] and the float32 logits [1, T, vocab] of\n"
    "                       the exported model (logits_merged) and, for LoRA, of the base model with\n"
    "                       the adapters unmerged (logits_adapters), as safetensors: what\n"
    "                       scripts/check_pretrained_exports.py compares with transformers and PEFT\n";

// The files besides the weights that make a directory usable by a tokenizer or a pipeline.
const char* const kTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                       "tokenizer.model", "vocab.json", "merges.txt", "added_tokens.json",
                                       "chat_template.jinja"};

}  // namespace

int run_export_hf(const std::vector<std::string>& argv) {
  if (asks_for_help(argv)) {
    std::cout << kExportHfHelp;
    return 0;
  }
  Args args(argv, {"run", "out", "dtype", "logits-text", "logits-out"}, {});
  if (args.has("logits-text") != args.has("logits-out"))
    throw UsageError{"--logits-text and --logits-out go together"};
  if (!args.has("run") || !args.has("out")) throw UsageError{"--run RUN and --out DIR are required"};
  const std::string run_dir = args.get("run", ""), out_dir = args.get("out", "");
  const std::string dtype = args.get("dtype", "float32");
  if (dtype != "float32" && dtype != "bfloat16") throw UsageError{"--dtype must be float32 or bfloat16, got '" + dtype + "'"};

  const std::string run_path = (fs::path(run_dir) / "run.json").string();
  EMBER_CHECK(fs::exists(run_path), kOp, run_dir, ": no run.json (is it the --out of a finished `ember train --init`?)");
  nlohmann::json run;
  try {
    run = nlohmann::json::parse(read_file(run_path, kOp));
  } catch (const nlohmann::json::exception& e) {
    EMBER_FAIL(kOp, run_path, ": not valid JSON: ", e.what());
  }
  EMBER_CHECK(run.contains("base_model") && run["base_model"].is_string() && run.contains("lora") &&
                  run["lora"].is_boolean(),
              kOp, run_path, ": expected keys 'base_model' (a directory) and 'lora' (true or false)");
  const std::string base_dir = run["base_model"];

  // Merged in float32 whatever the training dtype, rounded once when stored.
  models::CausalLM model = models::from_pretrained(run["lora"] ? base_dir : run_dir);
  Tensor input_ids;
  io::TensorList logits;
  if (args.has("logits-text")) {
    const auto tokenizer = tokenizers::Tokenizer::from_file((fs::path(base_dir) / "tokenizer.json").string());
    const std::vector<int64_t> ids = tokenizer.encode(args.get("logits-text", ""));
    EMBER_CHECK(!ids.empty(), kOp, "--logits-text has no tokens");
    input_ids = tensor(ids, kInt64).view({1, static_cast<int64_t>(ids.size())});
    logits.emplace_back("input_ids", input_ids);
  }
  const auto add_logits = [&](const char* name) {
    NoGradGuard no_grad;
    if (input_ids.defined()) logits.emplace_back(name, model->forward(input_ids));
  };
  if (run["lora"]) {
    models::load_lora(*model, run_dir);
    add_logits("logits_adapters");
    models::merge_lora(*model);
  }
  if (dtype == "bfloat16") model->to(kBFloat16);
  add_logits("logits_merged");
  models::save_pretrained(model, out_dir);
  if (input_ids.defined()) io::save_safetensors(args.get("logits-out", ""), logits);
  for (const char* name : kTokenizerFiles) {
    const fs::path source = fs::path(base_dir) / name;
    if (!fs::exists(source)) continue;
    write_file_atomically((fs::path(out_dir) / name).string(), read_file(source.string(), kOp), kOp);
  }
  std::cout << "wrote " << out_dir << " (" << architecture_name(model->config().architecture) << ", "
            << (run["lora"] ? "adapters merged into " : "fine-tuned from ") << base_dir << ")\n";
  return 0;
}

}  // namespace ember::cli
