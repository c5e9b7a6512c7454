// `ember bench runtime` (alias `export`): exported programs in libember_rt against the eager model they came
// from, called alternately (medians).
// - gpt: the demo's GPT (GPTConfig defaults, byte vocabulary; random init, seed 0: latency does
//   not depend on the weights) exported as `ember export` does it. Prefill of a 64-token prompt
//   and per-token decode of the next 64 tokens: ember_rt_run in this process against eager
//   forward_cached over a KV cache, as `ember generate` runs them; also the ember-rt binary's
//   own per-token decode. Sizes of the stripped runtime binaries (core_bytes: libember_rt's
//   core with no kernel; runtime_bytes: ember-rt with the GPT's op set) and each method's
//   arena against the sum of its intermediates.
// - lstm_<length>: a 2-layer LSTM exported with a dynamic length (one Loop per layer), at
//   three lengths. When this build's runtime lacks a kernel the program needs, the program
//   runs in ExportedProgram::run instead (column interpreter_ms instead of rt_ms; exported_by
//   says which kernel is missing): the choice follows what ember_rt_load accepts, so runtime
//   kernels added to the op table (Runtime rows) switch it with no change here.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "bench.h"
#include "ember/ember.h"
#include "ember/export.h"
#include "ember/models/gpt.h"
#include "ember/runtime.h"
#include "train/export_gpt.h"

namespace ember::bench {
namespace {

namespace fs = std::filesystem;

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

// ---- binary sizes ----

// A file's size once stripped of symbols and debug sections (a stripped copy is measured;
// the file itself is left alone), or the reason there is none.
struct StrippedSize {
  std::optional<uint64_t> bytes;
  std::string note;
};

StrippedSize stripped_size(const std::vector<fs::path>& candidates, const std::string& what) {
  const auto found = std::find_if(candidates.begin(), candidates.end(), [](const fs::path& p) {
    std::error_code ec;
    return !p.empty() && fs::is_regular_file(p, ec);
  });
  if (found == candidates.end()) return {std::nullopt, what + " not found (build its target)"};
  const fs::path copy = fs::temp_directory_path() / ("ember_bench_strip_" + std::to_string(::getpid()));
  const std::string command = "strip --strip-all -o '" + copy.string() + "' '" + found->string() + "' 2>/dev/null";
  StrippedSize size;
  if (std::system(command.c_str()) == 0 && fs::is_regular_file(copy)) {
    size.bytes = fs::file_size(copy);
    size.note = found->string();
  } else {
    size.note = "strip (binutils) failed on " + found->string();
  }
  std::error_code ec;
  fs::remove(copy, ec);
  return size;
}

fs::path sibling_of_this_program(const std::string& name) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : self.parent_path() / name;
}

// ---- the runtime ----

fs::path save_to_temp(const ExportedProgram& exported) {
  const fs::path path = fs::temp_directory_path() / ("ember_bench_export_" + std::to_string(::getpid()) + ".ember");
  exported.save(path.string());
  return path;
}

// One program loaded in libember_rt from the file ExportedProgram::save writes.
class RuntimeProgram {
 public:
  static std::unique_ptr<RuntimeProgram> load(const ExportedProgram& exported, std::string* error) {
    const fs::path path = save_to_temp(exported);
    EmberRtProgram* program = nullptr;
    const EmberRtStatus status = ember_rt_load(path.string().c_str(), &program);
    std::error_code ec;
    fs::remove(path, ec);  // the map keeps the bytes
    if (status != EMBER_RT_OK) {
      *error = ember_rt_last_error();
      return nullptr;
    }
    return std::unique_ptr<RuntimeProgram>(new RuntimeProgram(program));
  }
  ~RuntimeProgram() { ember_rt_free(program_); }
  RuntimeProgram(const RuntimeProgram&) = delete;
  RuntimeProgram& operator=(const RuntimeProgram&) = delete;

  EmberRtMethod* method(const std::string& name) {
    EmberRtMethod* method = nullptr;
    EMBER_CHECK(ember_rt_method(program_, name.c_str(), &method) == EMBER_RT_OK, "bench runtime",
                ember_rt_last_error());
    return method;
  }

 private:
  explicit RuntimeProgram(EmberRtProgram* program) : program_(program) {}
  EmberRtProgram* program_;
};

EmberRtTensor runtime_tensor(const Tensor& t) {
  EMBER_CHECK(t.is_contiguous() && t.dim() <= EMBER_RT_MAX_DIMS, "bench runtime", "a runtime operand must be contiguous");
  EmberRtTensor r{};
  r.data = t.data_ptr();
  r.dtype = static_cast<int32_t>(t.scalar_type());  // EmberRtDtype follows ScalarType's order
  r.ndim = static_cast<int32_t>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d) r.sizes[d] = t.size(d);
  r.capacity_bytes = static_cast<uint64_t>(t.numel() * t.element_size());
  return r;
}

// Outputs of a method in buffers sized for its bounds, viewed at the sizes of the last run.
class RuntimeOutputs {
 public:
  explicit RuntimeOutputs(EmberRtMethod* method) {
    for (size_t o = 0; o < ember_rt_num_outputs(method); ++o) {
      EmberRtTensorInfo info;
      ember_rt_output_info(method, o, &info);
      buffers_.push_back(empty({static_cast<int64_t>(info.max_bytes)}, TensorOptions().dtype(kUInt8)));
      tensors_.push_back(runtime_tensor(buffers_.back()));
    }
  }
  EmberRtTensor* data() { return tensors_.data(); }
  size_t size() const { return tensors_.size(); }
  Tensor operator[](size_t o) const {
    const EmberRtTensor& t = tensors_[o];
    std::vector<int64_t> sizes(t.sizes, t.sizes + t.ndim);
    return from_blob(t.data, sizes, TensorOptions().dtype(static_cast<ScalarType>(t.dtype))).clone();
  }

 private:
  std::vector<Tensor> buffers_;
  std::vector<EmberRtTensor> tensors_;
};

void run_method(EmberRtMethod* method, const std::vector<Tensor>& inputs, RuntimeOutputs& outputs) {
  std::vector<EmberRtTensor> operands;
  for (const Tensor& t : inputs) operands.push_back(runtime_tensor(t));
  EMBER_CHECK(ember_rt_run(method, operands.data(), operands.size(), outputs.data(), outputs.size()) == EMBER_RT_OK,
              "bench runtime", ember_rt_last_error());
}

nlohmann::json plan_columns(const export_ir::Method& method, const std::string& prefix) {
  return {{prefix + "arena_bytes", method.arena_bytes},
          {prefix + "intermediate_bytes", method.intermediate_bytes},
          {prefix + "arena_ratio", static_cast<double>(method.arena_bytes) /
                                       static_cast<double>(std::max<uint64_t>(method.intermediate_bytes, 1))}};
}

// Medians of the milliseconds `eager` and `exported` report (each times its own part, so untimed
// setup may precede it), called alternately after one warm-up call each.
struct SideBySide {
  double eager_ms, exported_ms;  // exported: the program, in the runtime or the interpreter
};

SideBySide alternate(const std::function<double()>& eager, const std::function<double()>& exported, int reps) {
  eager();  // warm-up: tuned GEMMs, first-touch pages
  exported();
  std::vector<double> eager_ms, exported_ms;
  for (int r = 0; r < reps; ++r) {
    eager_ms.push_back(eager());
    exported_ms.push_back(exported());
  }
  return {median(eager_ms), median(exported_ms)};
}

// ---- gpt ----

// Per-token decode of the ember-rt binary itself (--prompt, as a user runs it), from the wall
// times of whole runs: runs of `extra` more tokens less runs of one token, so that process
// start, loading and the prefill cancel. Includes the sampling of each token (vocabulary 256).
// Each rep also runs `eager_decode` (ms per token) between the runs: the side-by-side reference.
struct CliDecode {
  std::optional<double> ms;
  double eager_ms = 0;
  std::string note;
};

CliDecode ember_rt_decode_ms(const fs::path& rt_cli, ExportedProgram program, int64_t prompt_length, int64_t extra,
                             const std::function<double()>& eager_decode, int reps) {
  std::error_code ec;
  if (rt_cli.empty() || !fs::is_regular_file(rt_cli, ec)) return {std::nullopt, 0, "ember-rt not found"};
  program.set_metadata("tokenizer_kind", "byte");
  program.set_metadata("tokenizer_state", "");
  const fs::path path = save_to_temp(program);
  auto run_ms = [&](int64_t tokens) -> std::optional<double> {
    const std::string command = "EMBER_NUM_THREADS=" + std::to_string(get_num_threads()) + " '" + rt_cli.string() +
                                "' '" + path.string() + "' --prompt " + std::string(prompt_length, 'e') +
                                " --tokens " + std::to_string(tokens) + " --seed 1 >/dev/null 2>&1";
    const auto start = std::chrono::steady_clock::now();
    if (std::system(command.c_str()) != 0) return std::nullopt;
    return elapsed_ms(start);
  };
  std::vector<double> one, more, eager;
  CliDecode result{std::nullopt, 0, rt_cli.string()};
  for (int r = 0; r < reps; ++r) {
    const auto a = run_ms(1);
    eager.push_back(eager_decode());
    const auto b = run_ms(1 + extra);
    if (!a || !b) {
      result.note = rt_cli.string() + " --prompt failed";
      break;
    }
    one.push_back(*a);
    more.push_back(*b);
  }
  if (one.size() == static_cast<size_t>(reps)) {
    result.ms = (median(more) - median(one)) / static_cast<double>(extra);
    result.eager_ms = median(eager);
  }
  fs::remove(path, ec);
  return result;
}

nlohmann::json gpt_row(int reps) {
  const models::GPTConfig config;  // the demo's model (ember train's defaults, byte tokenizer)
  const int64_t prompt_length = 64, decoded = 64;
  manual_seed(0);
  models::GPT model(config);
  model->eval();
  NoGradGuard no_grad;
  const ExportedProgram exported = train::export_gpt(model);
  std::string error;
  auto runtime = RuntimeProgram::load(exported, &error);
  EMBER_CHECK(runtime != nullptr, "bench runtime", "the runtime refused the GPT program: ", error);
  EmberRtMethod* prefill = runtime->method("prefill");
  EmberRtMethod* decode = runtime->method("decode");
  RuntimeOutputs prefill_logits(prefill), decode_logits(decode);
  const Tensor prompt = randint(0, config.vocab_size, {1, prompt_length}, TensorOptions().dtype(kInt64));
  const Tensor next = randint(0, config.vocab_size, {decoded, 1, 1}, TensorOptions().dtype(kInt64));

  // Eager: forward_cached over a GPTCache, as ember generate runs it.
  models::GPTCache cache;
  Tensor eager_logits;
  auto eager_prefill = [&] {
    cache = model->make_cache(1);
    const auto start = std::chrono::steady_clock::now();
    eager_logits = model->forward_cached(prompt, cache);
    return elapsed_ms(start);
  };
  auto eager_decode = [&] {
    eager_prefill();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < decoded; ++i) eager_logits = model->forward_cached(next[i], cache);
    return elapsed_ms(start) / static_cast<double>(decoded);
  };
  // The runtime: the program's methods over caches the caller owns (zeroed once: a prefill
  // writes every position a later call reads).
  const std::vector<Tensor> caches = train::make_gpt_cache_inputs(model);
  std::vector<Tensor> prefill_inputs = {prompt};
  prefill_inputs.insert(prefill_inputs.end(), caches.begin(), caches.end());
  std::vector<Tensor> decode_inputs = {Tensor(), full({}, 0, TensorOptions().dtype(kInt64))};
  decode_inputs.insert(decode_inputs.end(), caches.begin(), caches.end());
  auto rt_prefill = [&] {
    const auto start = std::chrono::steady_clock::now();
    run_method(prefill, prefill_inputs, prefill_logits);
    return elapsed_ms(start);
  };
  auto rt_decode = [&] {
    rt_prefill();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < decoded; ++i) {
      decode_inputs[0] = next[i];
      decode_inputs[1].fill_(prompt_length + i);
      run_method(decode, decode_inputs, decode_logits);
    }
    return elapsed_ms(start) / static_cast<double>(decoded);
  };
  // Prefill calls are short: more of them for a stable median.
  const SideBySide prefill_ms = alternate(eager_prefill, rt_prefill, 4 * reps);
  const SideBySide decode_ms = alternate(eager_decode, rt_decode, reps);

  const fs::path rt_cli = sibling_of_this_program("ember-rt");
  const StrippedSize core = stripped_size({EMBER_RT_CORE_PATH}, "libember_rt_core_only (target ember_rt_core_only)");
  const StrippedSize runtime_size = stripped_size({rt_cli, EMBER_RT_CLI_PATH}, "ember-rt (target ember_rt_cli)");
  const fs::path rt_cli_found = fs::is_regular_file(rt_cli) ? rt_cli : fs::path(EMBER_RT_CLI_PATH);
  // 64 + 1 + 190 tokens stay inside max_seq_len 256: no restart in the timed part.
  const CliDecode cli = ember_rt_decode_ms(rt_cli_found, exported, prompt_length, 190, eager_decode, reps);
  note("gpt: prefill rt " + std::to_string(prefill_ms.exported_ms) + " ms, eager " + std::to_string(prefill_ms.eager_ms) +
       " ms; decode rt " + std::to_string(decode_ms.exported_ms) + " ms/token, eager " + std::to_string(decode_ms.eager_ms) +
       "; ember-rt binary " + (cli.ms ? std::to_string(*cli.ms) + " ms/token, eager beside it " +
                                     std::to_string(cli.eager_ms) : cli.note));
  nlohmann::json row = {
      {"name", "gpt"},
      {"config", nlohmann::json::parse(config.to_json())},
      {"weights", "random init, seed 0"},
      {"prompt_tokens", prompt_length},
      {"decode_tokens", decoded},
      {"core_bytes", core.bytes ? nlohmann::json(*core.bytes) : nlohmann::json()},
      {"core_bytes_note", core.note},
      {"runtime_bytes", runtime_size.bytes ? nlohmann::json(*runtime_size.bytes) : nlohmann::json()},
      {"runtime_bytes_note", runtime_size.note},
      {"prefill_rt_ms", prefill_ms.exported_ms},
      {"prefill_eager_ms", prefill_ms.eager_ms},
      {"prefill_rt_vs_eager", prefill_ms.exported_ms / prefill_ms.eager_ms},
      {"decode_rt_ms", decode_ms.exported_ms},
      {"decode_eager_ms", decode_ms.eager_ms},
      {"decode_rt_vs_eager", decode_ms.exported_ms / decode_ms.eager_ms},
      {"decode_ember_rt_binary_ms", cli.ms ? nlohmann::json(*cli.ms) : nlohmann::json()},
      {"decode_eager_beside_binary_ms", cli.ms ? nlohmann::json(cli.eager_ms) : nlohmann::json()},
      {"decode_ember_rt_binary_vs_eager", cli.ms ? nlohmann::json(*cli.ms / cli.eager_ms) : nlohmann::json()},
      {"decode_ember_rt_binary_note", cli.note},
      {"same_logits", equal(decode_logits[0], eager_logits)}};
  row.update(plan_columns(exported.method("prefill"), "prefill_"));
  row.update(plan_columns(exported.method("decode"), "decode_"));
  return row;
}

// ---- lstm ----

constexpr int64_t kLstmBatch = 4, kLstmInput = 64, kLstmHidden = 128, kLstmMaxLength = 512;

std::vector<Tensor> lstm_outputs(nn::LSTM& lstm, const Tensor& x) {
  auto [output, state] = lstm->forward(x);
  return {output, std::get<0>(state), std::get<1>(state)};
}

nlohmann::json lstm_rows(const std::vector<int64_t>& lengths, int reps) {
  manual_seed(0);
  nn::LSTM lstm(nn::LSTMOptions(kLstmInput, kLstmHidden).num_layers(2));
  lstm->eval();
  NoGradGuard no_grad;
  const ExportedProgram exported =
      export_program(*lstm, [lstm](const std::vector<Tensor>& in) mutable { return lstm_outputs(lstm, in[0]); },
                     {randn({8, kLstmBatch, kLstmInput})},
                     ExportOptions().dynamic_dim(0, 0, Dim("L", 1, kLstmMaxLength)));
  std::string refusal;
  auto runtime = RuntimeProgram::load(exported, &refusal);
  EmberRtMethod* forward = runtime ? runtime->method("forward") : nullptr;
  std::optional<RuntimeOutputs> outputs;
  if (forward) outputs.emplace(forward);
  const std::string exported_column = runtime ? "rt_ms" : "interpreter_ms";
  auto run_exported = [&](const Tensor& x) {
    if (!runtime) return exported.run({x});
    run_method(forward, {x}, *outputs);
    return std::vector<Tensor>{(*outputs)[0], (*outputs)[1], (*outputs)[2]};
  };

  nlohmann::json rows = nlohmann::json::array();
  for (int64_t length : lengths) {
    const Tensor x = randn({length, kLstmBatch, kLstmInput});
    std::vector<Tensor> eager, from_program;
    auto timed = [](const std::function<void()>& fn) {
      const auto start = std::chrono::steady_clock::now();
      fn();
      return elapsed_ms(start);
    };
    // Short sequences take a few milliseconds: more calls for a stable median.
    const int calls = reps * static_cast<int>(std::max<int64_t>(1, 128 / length));
    const SideBySide ms = alternate([&] { return timed([&] { eager = lstm_outputs(lstm, x); }); },
                                    [&] { return timed([&] { from_program = run_exported(x); }); }, calls);
    bool same = true;
    for (size_t i = 0; i < eager.size(); ++i) same = same && equal(from_program[i], eager[i]);
    const double e = ms.eager_ms, p = ms.exported_ms;
    note("lstm_" + std::to_string(length) + ": " + exported_column + " " + std::to_string(p) + ", eager " +
         std::to_string(e) + " ms");
    nlohmann::json row = {{"name", "lstm_" + std::to_string(length)},
                          {"layers", 2},
                          {"batch", kLstmBatch},
                          {"input_size", kLstmInput},
                          {"hidden_size", kLstmHidden},
                          {exported_column, p},
                          {"eager_ms", e},
                          {"exported_vs_eager", p / e},
                          {"exported_by", runtime ? "ember_rt_run" : "ExportedProgram::run (the runtime refused it: " + refusal + ")"},
                          {"same_outputs", same}};
    row.update(plan_columns(exported.method("forward"), ""));
    rows.push_back(row);
  }
  return rows;
}

nlohmann::json run(const Options& options) {
  const int reps = options.quick ? 3 : 11;
  nlohmann::json results = nlohmann::json::array();
  results.push_back(gpt_row(reps));
  for (const auto& row : lstm_rows({16, 128, 512}, reps)) results.push_back(row);
  return results;
}

Register reg("runtime", run, {"export"});

}  // namespace
}  // namespace ember::bench
