// `ember train --init DIR`: fine-tunes a Hugging Face model directory on a text file tokenized
// with the model's own tokenizer.json, every weight or LoRA adapters only, with validation on
// held-out documents, checkpoints and resume. The run directory ends with the adapters in PEFT's
// files (or the fine-tuned model in HF's) and run.json naming the base model.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "args.h"
#include "ember/atomic_file.h"
#include "ember/data/tokenizers.h"
#include "ember/ember.h"
#include "ember/models/lora.h"
#include "ember/models/pretrained.h"
#include "run_files.h"
#include "train/train_step.h"

namespace ember::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr const char* kOp = "train --init";

const char* kFinetuneHelp =
    "usage: ember train --init DIR --data FILE [flags]\n"
    "Fine-tunes the Hugging Face model in DIR (config.json, safetensors, tokenizer.json) on a text\n"
    "file tokenized with DIR's tokenizer: every weight, or with --lora-rank LoRA adapters only.\n"
    "One process on this machine's threads (no --fsdp for fine-tuning yet).\n"
    "data:\n"
    "  --data FILE          text; documents are split at lines holding only \"%\", else at blank lines,\n"
    "                       and tokenized without special tokens (as ember perplexity scores text)\n"
    "  --val-every N        every N-th document goes to validation (default 20)\n"
    "  --eval-file FILE     also report the perplexity of FILE (windows of --seq-len tokens, as\n"
    "                       ember perplexity --ctx) before and after training\n"
    "LoRA:\n"
    "  --lora-rank R        train rank-R adapters on the targets, base weights frozen\n"
    "  --lora-alpha A       adapter scale alpha / R (default 16)\n"
    "  --lora-targets LIST  comma-separated projection names (default as PEFT's: q_proj,v_proj;\n"
    "                       Phi-3 qkv_proj; GPT-2 c_attn)\n"
    "  --lora-dropout P     dropout on the adapters' input (default 0)\n"
    "optimisation:\n"
    "  --batch-size N       sequences per micro-batch (default 8)\n"
    "  --seq-len N          tokens per sequence (default 128, at most the model's positions)\n"
    "  --accum N            micro-batches per step (default 1)\n"
    "  --lr X --min-lr X    peak and final learning rate (defaults 2e-4 with LoRA, 2e-5 without;\n"
    "                       min-lr: lr / 10)\n"
    "  --warmup N           linear warmup steps (default 10), then cosine decay\n"
    "  --weight-decay X     AdamW weight decay on matrices (default 0)\n"
    "  --clip X             gradient norm clipping, 0 = off (default 1.0)\n"
    "  --dtype KIND         compute dtype: float32 (default) or bfloat16 (with LoRA the base weights\n"
    "                       are bfloat16 too; adapters, trained weights and optimizer state stay float32)\n"
    "length and output:\n"
    "  --max-steps N        steps of the schedule (default 200)\n"
    "  --stop-at N          stop after step N without changing the schedule (then --resume)\n"
    "  --eval-every N       validation every N steps (default 50)   --eval-batches N  (default 8)\n"
    "  --ckpt-every N       checkpoint every N steps (default 100) and at the end\n"
    "  --out RUN            run directory (default runs/finetune): checkpoint.safetensors (the\n"
    "                       trained tensors and optimizer state), metrics.jsonl, loss.svg, run.json;\n"
    "                       at the end adapter_model.safetensors + adapter_config.json (LoRA) or\n"
    "                       config.json + model.safetensors; ember export-hf --run RUN writes an HF model\n"
    "  --resume             continue from RUN/checkpoint.safetensors with the same settings\n"
    "  --seed N             adapter initialisation and data order (default 1337)\n"
    "  --threads N          thread count (default: cores)\n";

const std::set<std::string> kFlags = {
    "init", "data", "val-every", "eval-file", "lora-rank", "lora-alpha", "lora-targets", "lora-dropout", "batch-size",
    "seq-len", "accum", "lr", "min-lr", "warmup", "weight-decay", "clip", "dtype", "max-steps", "eval-every",
    "eval-batches", "ckpt-every", "out", "seed", "threads", "stop-at"};

std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream stream(list);
  for (std::string item; std::getline(stream, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

struct FinetuneOptions {
  std::string init_dir, data_path, eval_file, out_dir, dtype;
  std::optional<models::LoraConfig> lora;
  bool resume = false;
  int64_t batch = 0, seq_len = 0, accum = 0, max_steps = 0, warmup = 0, eval_every = 0, eval_batches = 0;
  int64_t ckpt_every = 0, val_every = 0, stop_at = 0;
  uint64_t seed = 0;
  double lr = 0, min_lr = 0, clip = 0, weight_decay = 0;

  std::string checkpoint_path() const { return out_dir + "/checkpoint.safetensors"; }

  // What defines the run: a resumed run must use the same.
  json settings() const {
    json s = {{"init", fs::absolute(init_dir).lexically_normal().string()}, {"data", data_path},
              {"batch_size", batch}, {"seq_len", seq_len}, {"accum", accum}, {"max_steps", max_steps},
              {"warmup", warmup}, {"lr", lr}, {"min_lr", min_lr}, {"weight_decay", weight_decay},
              {"seed", seed}, {"val_every", val_every}, {"dtype", dtype}};
    if (lora)
      s["lora"] = {{"r", lora->rank}, {"alpha", lora->alpha}, {"targets", lora->target_modules},
                   {"dropout", lora->dropout}};
    return s;
  }
};

FinetuneOptions parse_finetune_options(const std::vector<std::string>& argv) {
  Args args(argv, kFlags, {"resume"});
  if (args.has("threads")) set_num_threads(static_cast<int>(args.get_int("threads", 0)));
  FinetuneOptions o;
  o.init_dir = args.get("init", "");
  o.data_path = args.get("data", "");
  if (o.data_path.empty()) throw UsageError{"--init needs --data FILE, the text to fine-tune on"};
  o.eval_file = args.get("eval-file", "");
  o.out_dir = args.get("out", "runs/finetune");
  o.dtype = args.get("dtype", "float32");
  if (o.dtype != "float32" && o.dtype != "bfloat16")
    throw UsageError{"--dtype must be float32 or bfloat16, got '" + o.dtype + "'"};
  o.resume = args.get_switch("resume");
  if (args.has("lora-rank")) {
    models::LoraConfig lora;
    lora.rank = args.get_int("lora-rank", 8);
    lora.alpha = args.get_double("lora-alpha", lora.alpha);
    lora.dropout = args.get_double("lora-dropout", 0);
    // Empty: the architecture's default, known once the model is read.
    lora.target_modules = split_commas(args.get("lora-targets", ""));
    o.lora = lora;
  } else if (args.has("lora-alpha") || args.has("lora-targets") || args.has("lora-dropout")) {
    throw UsageError{"--lora-alpha, --lora-targets and --lora-dropout need --lora-rank"};
  }
  o.batch = args.get_int("batch-size", 8), o.seq_len = args.get_int("seq-len", 128);
  o.accum = args.get_int("accum", 1), o.max_steps = args.get_int("max-steps", 200);
  o.warmup = args.get_int("warmup", 10), o.eval_every = args.get_int("eval-every", 50);
  o.eval_batches = args.get_int("eval-batches", 8), o.ckpt_every = args.get_int("ckpt-every", 100);
  o.val_every = args.get_int("val-every", 20), o.stop_at = args.get_int("stop-at", o.max_steps);
  o.seed = static_cast<uint64_t>(args.get_int("seed", 1337));
  o.lr = args.get_double("lr", o.lora ? 2e-4 : 2e-5);
  o.min_lr = args.get_double("min-lr", o.lr / 10);
  o.clip = args.get_double("clip", 1.0);
  o.weight_decay = args.get_double("weight-decay", 0);
  const std::vector<std::pair<const char*, int64_t>> counts = {
      {"batch-size", o.batch},     {"seq-len", o.seq_len},           {"accum", o.accum},
      {"max-steps", o.max_steps},  {"eval-every", o.eval_every},     {"eval-batches", o.eval_batches},
      {"ckpt-every", o.ckpt_every}, {"val-every", o.val_every}};
  for (const auto& [flag, count] : counts)
    if (count <= 0) throw UsageError{str("--", flag, " must be positive, got ", count)};
  return o;
}

// The base model with its adapters (LoRA) or with trainable weights, and the tensors trained.
struct FinetuneModel {
  models::CausalLM model;
  std::shared_ptr<nn::Module> trained;  // the adapters, or every weight
  optim::AdamW optimizer;

  explicit FinetuneModel(const FinetuneOptions& o)
      : model(load(o)), trained(models::trainable_parameters(*model)),
        optimizer(train::make_optimizer(*trained, o.lr, o.weight_decay)) {}

  static models::CausalLM load(const FinetuneOptions& o) {
    const ScalarType compute = o.dtype == "bfloat16" ? kBFloat16 : kFloat32;
    models::PretrainedOptions options;
    // Frozen base weights may be bfloat16 (as mapped when the file holds them); trained ones
    // stay float32 and are rounded at each use.
    options.dtype = o.lora ? compute : kFloat32;
    options.trainable = !o.lora;
    models::CausalLM model = models::from_pretrained(o.init_dir, options);
    model->set_compute_dtype(compute);
    EMBER_CHECK(o.seq_len <= model->max_seq_len(), kOp, "--seq-len ", o.seq_len, " exceeds the ",
                model->max_seq_len(), " positions of ", o.init_dir);
    manual_seed(o.seed);
    if (o.lora) {
      models::LoraConfig lora = *o.lora;
      if (lora.target_modules.empty()) lora.target_modules = models::default_lora_targets(model->config());
      models::add_lora(*model, lora);
    }
    return model;
  }
};

// The data file's documents in the model's tokens, split into training and validation.
struct FinetuneData {
  tokenizers::Tokenizer tokenizer;
  data::SplitStreams streams;
  std::vector<int64_t> eval_ids;  // --eval-file's tokens

  explicit FinetuneData(const FinetuneOptions& o)
      : tokenizer(tokenizers::Tokenizer::from_file((fs::path(o.init_dir) / "tokenizer.json").string())) {
    const std::vector<std::string> documents = data::split_documents(data::read_text_file(o.data_path));
    EMBER_CHECK(documents.size() >= 2, kOp, o.data_path, " has ", documents.size(),
                " document(s); need at least 2 (documents are split at blank lines or \"%\" lines)");
    streams = data::tokenize_split(documents, tokenizer, o.val_every);
    for (const auto* stream : {&streams.train, &streams.val})
      EMBER_CHECK(static_cast<int64_t>(stream->tokens.size()) > o.seq_len + 1, kOp, o.data_path, ": the ",
                  stream == &streams.train ? "training" : "validation", " documents have ", stream->tokens.size(),
                  " tokens, too few for --seq-len ", o.seq_len, " (lower --val-every or --seq-len)");
    if (!o.eval_file.empty()) eval_ids = tokenizer.encode(data::read_text_file(o.eval_file));
  }
};

class FinetuneRun {
 public:
  FinetuneRun(const FinetuneOptions& o, const FinetuneData& d, FinetuneModel& m) : o_(o), data_(d), m_(m) {}

  int64_t step() const { return step_; }

  // Restores the checkpoint with --resume; a fresh run measures its starting point.
  void start() {
    fs::create_directories(o_.out_dir);
    const std::string metrics_path = o_.out_dir + "/metrics.jsonl";
    if (o_.resume) {
      EMBER_CHECK(fs::exists(o_.checkpoint_path()), kOp, "--resume: no checkpoint at '", o_.checkpoint_path(), "'");
      const io::Metadata metadata = io::checkpoint_extra_metadata(o_.checkpoint_path());
      const auto it = metadata.find("finetune.settings");
      EMBER_CHECK(it != metadata.end() && json::parse(it->second) == o_.settings(), kOp, "--resume: ",
                  o_.checkpoint_path(), " was trained with other settings: ",
                  it == metadata.end() ? std::string("none recorded") : it->second);
      step_ = io::load_checkpoint(o_.checkpoint_path(), *m_.trained, m_.optimizer);
      saved_step_ = step_;
      for (const auto& line : keep_metrics_until(metrics_path, step_)) {
        if (line.contains("loss")) train_curve_.push_back({line["step"], line["loss"]});
        if (line.contains("val_loss")) val_curve_.push_back({line["step"], line["val_loss"]});
        if (line.contains("tokens_per_s")) throughput_curve_.push_back({line["step"], line["tokens_per_s"]});
      }
      std::cerr << "resuming from " << o_.checkpoint_path() << " at step " << step_ << "\n";
      metrics_.open(metrics_path, std::ios::app);
    } else {
      metrics_.open(metrics_path, std::ios::trunc);
      json line = {{"step", 0}, {"val_loss", evaluate()}};
      add_eval_file(line);
      log(line);
    }
    start_ = std::chrono::steady_clock::now();
  }

  void train_one_step() {
    const double step_lr = train::learning_rate(step_, o_.warmup, o_.max_steps, o_.lr, o_.min_lr);
    for (auto& group : m_.optimizer.param_groups()) group.options().set_lr(step_lr);
    const auto step_start = std::chrono::steady_clock::now();
    const train::StepResult result = train::train_step(
        m_.optimizer, *m_.trained, o_.accum,
        [&](int64_t micro) {
          return data::sample_batch(data_.streams.train, o_.batch, o_.seq_len, o_.seed,
                                    static_cast<uint64_t>(step_ * o_.accum + micro));
        },
        [&](const data::Batch& b) { return m_.model->loss(b.inputs, b.targets, b.doc_ids); }, o_.clip);
    const double step_s = seconds_since(step_start);
    ++step_;
    train_curve_.push_back({step_, result.loss});
    throughput_curve_.push_back({step_, static_cast<double>(o_.batch * o_.seq_len * o_.accum) / step_s});
    json line = {{"step", step_},
                 {"loss", result.loss},
                 {"lr", step_lr},
                 {"grad_norm", result.grad_norm},
                 {"tokens_per_s", throughput_curve_.back().value},
                 {"elapsed_s", seconds_since(start_)}};
    if (step_ % o_.eval_every == 0 || step_ == o_.max_steps) line["val_loss"] = evaluate();
    log(line);
    if (step_ % o_.ckpt_every == 0) checkpoint();
  }

  // The last checkpoint, the model's files, run.json and the summary line.
  void finish() {
    checkpoint();
    const std::string base = fs::absolute(o_.init_dir).lexically_normal().string();
    if (o_.lora) {
      models::save_lora(*m_.model, o_.out_dir, base);
    } else {
      models::save_pretrained(m_.model, o_.out_dir);
    }
    const json run = {{"base_model", base}, {"lora", o_.lora.has_value()}, {"step", step_}, {"settings", o_.settings()}};
    write_file_atomically(o_.out_dir + "/run.json", run.dump(2) + "\n", kOp);
    json line = {{"step", step_}};
    add_eval_file(line);
    if (line.size() > 1) log(line);
    std::cout << "step " << step_ << " val_loss " << (val_curve_.empty() ? NAN : val_curve_.back().value)
              << " nats/token";
    if (line.contains("eval_perplexity")) std::cout << ", " << o_.eval_file << " perplexity " << line["eval_perplexity"];
    std::cout << "; " << (o_.lora ? "adapters" : "model") << " in " << o_.out_dir << "\n";
  }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  // Mean loss over --eval-batches fixed windows of the validation documents.
  double evaluate() {
    NoGradGuard no_grad;
    m_.model->eval();
    double total = 0;
    for (int64_t i = 0; i < o_.eval_batches; ++i) {
      const data::Batch b = data::sample_batch(data_.streams.val, o_.batch, o_.seq_len, o_.seed ^ 0x5eedull,
                                               static_cast<uint64_t>(i));
      total += m_.model->loss(b.inputs, b.targets, b.doc_ids).item<double>();
    }
    m_.model->train();
    const double loss = total / static_cast<double>(o_.eval_batches);
    val_curve_.push_back({step_, loss});
    return loss;
  }

  // --eval-file's perplexity, as ember perplexity --ctx SEQ_LEN measures it.
  void add_eval_file(json& line) {
    if (data_.eval_ids.empty()) return;
    NoGradGuard no_grad;
    m_.model->eval();
    const models::PerplexityResult result = models::perplexity(*m_.model, data_.eval_ids, o_.seq_len);
    m_.model->train();
    line["eval_nll"] = result.nll;
    line["eval_perplexity"] = result.perplexity;
  }

  void log(const json& line) {
    metrics_ << line.dump() << "\n" << std::flush;
    if (step_ % 10 == 0 || line.contains("val_loss")) std::cerr << line.dump() << "\n";
  }

  void checkpoint() {
    if (step_ != saved_step_)
      io::save_checkpoint(o_.checkpoint_path(), *m_.trained, m_.optimizer, step_,
                          {{"finetune.settings", o_.settings().dump()}});
    saved_step_ = step_;
    write_loss_svg(o_.out_dir + "/loss.svg", train_curve_, val_curve_, throughput_curve_);
  }

  const FinetuneOptions& o_;
  const FinetuneData& data_;
  FinetuneModel& m_;
  std::ofstream metrics_;
  std::vector<MetricPoint> train_curve_, val_curve_, throughput_curve_;
  int64_t step_ = 0, saved_step_ = -1;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

int run_finetune(const std::vector<std::string>& argv) {
  if (asks_for_help(argv)) {
    std::cout << kFinetuneHelp;
    return 0;
  }
  const FinetuneOptions options = parse_finetune_options(argv);
  const FinetuneData run_data(options);
  FinetuneModel model(options);
  FinetuneRun run(options, run_data, model);
  run.start();
  while (run.step() < std::min(options.stop_at, options.max_steps)) run.train_one_step();
  run.finish();
  return 0;
}

}  // namespace ember::cli
