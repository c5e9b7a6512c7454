// The `ember` command.
#include <algorithm>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "ember/ember.h"

#include "args.h"
#include "info.h"

int run_inspect(const std::vector<std::string>& args);  // src/cli/inspect.cpp
namespace ember::cli {
int run_train(const std::vector<std::string>& args);     // src/cli/train.cpp
int run_generate(const std::vector<std::string>& args);  // src/cli/generate.cpp
int run_fr_trace(const std::vector<std::string>& args);  // src/cli/fr_trace.cpp
int run_tune(const std::vector<std::string>& args);      // src/cli/tune.cpp
int run_profile(const std::vector<std::string>& args);   // src/cli/profile.cpp
int run_export(const std::vector<std::string>& args);    // src/cli/export.cpp
int run_export_hf(const std::vector<std::string>& args);       // src/cli/export_hf.cpp
int run_generate_model(const std::vector<std::string>& args);  // src/cli/pretrained.cpp
int run_perplexity(const std::vector<std::string>& args);      // src/cli/pretrained.cpp
int run_quantize(const std::vector<std::string>& args);        // src/cli/pretrained.cpp
int run_tokenize(const std::vector<std::string>& args);        // src/cli/tokenize.cpp
}  // namespace ember::cli

namespace {

const char* kUsage =
    "usage: ember COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  bench SUITE [--quick] [--json]   run a benchmark suite (ember bench --list); --only TEXT: the\n"
    "        [--only TEXT]              rows whose names contain TEXT (suites pretrained, flex, gemm)\n"
    "  inspect FILE                     list a safetensors file's tensors and metadata\n"
    "  train [FLAGS]                    train a GPT on text, or fine-tune a Hugging Face model with\n"
    "                                   --init DIR (ember train --help)\n"
    "  generate --run DIR [FLAGS]       sample text from a trained checkpoint (ember generate --help)\n"
    "  generate --model DIR [FLAGS]     generate from a Hugging Face model directory (--model DIR --help)\n"
    "  perplexity --model DIR --file F  perplexity of a text under a Hugging Face model (ember perplexity --help)\n"
    "  quantize --model DIR --out DIR2  write DIR's model with int8 or int4 weights (ember quantize --help)\n"
    "  export --run DIR --out FILE      write a checkpoint's GPT as a .ember program (ember export --help)\n"
    "  export --model DIR --out FILE    write a Hugging Face model as a .ember program for ember-rt\n"
    "  export-hf --run RUN --out DIR    write a fine-tuned model as a Hugging Face directory (adapters merged)\n"
    "  tokenize --model DIR --text T    a text's token ids under DIR/tokenizer.json (ember tokenize --help)\n"
    "  info [--json]                    the CPU, GEMM backends and their kernels, the autotune table\n"
    "  tune [FLAGS]                     autotune the GEMM backends for a model's products (ember tune --help)\n"
    "  profile TRACE.json [FLAGS]       the table of a trace from ember train --profile (--sort, --limit)\n"
    "  fr-trace DIR                     name the ranks a hung collective waits for (flight-recorder dumps)\n"
    "  help                             show this message\n";

int run_bench(const std::vector<std::string>& args) {
  ember::bench::Options options;
  std::string suite;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--quick") options.quick = true;
    else if (a == "--json") options.json = true;
    else if (a == "--only" && i + 1 < args.size()) options.only = args[++i];
    else if (a == "--list") {
      for (const auto& [name, _] : ember::bench::registry()) std::cout << name << "\n";
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "ember bench: unknown option " << a << "\n";
      return 2;
    } else suite = a;
  }
  if (auto alias = ember::bench::aliases().find(suite); alias != ember::bench::aliases().end()) suite = alias->second;
  auto& suites = ember::bench::registry();
  auto it = suites.find(suite);
  if (it == suites.end()) {
    std::cerr << "ember bench: unknown suite '" << suite << "'; available:";
    for (const auto& [name, _] : suites) std::cerr << " " << name;
    std::cerr << "\n";
    return 2;
  }
  nlohmann::json rows = it->second(options);
  nlohmann::json report = {{"suite", suite}, {"machine", ember::cli::machine_json()}, {"results", rows}};
  if (options.json) {
    std::cout << report.dump() << std::endl;
  } else {
    for (const auto& row : rows) std::cout << row.dump() << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  try {
    const std::string command = args[0];
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (command == "bench") return run_bench(rest);
    if (command == "inspect") return run_inspect(rest);
    if (command == "train") return ember::cli::run_train(rest);
    if (command == "generate") {
      const bool pretrained = std::any_of(rest.begin(), rest.end(), [](const std::string& a) {
        return a == "--model" || a.rfind("--model=", 0) == 0;
      });
      return pretrained ? ember::cli::run_generate_model(rest) : ember::cli::run_generate(rest);
    }
    if (command == "perplexity") return ember::cli::run_perplexity(rest);
    if (command == "quantize") return ember::cli::run_quantize(rest);
    if (command == "export") return ember::cli::run_export(rest);
    if (command == "export-hf") return ember::cli::run_export_hf(rest);
    if (command == "tokenize") return ember::cli::run_tokenize(rest);
    if (command == "info") return ember::cli::run_info(rest);
    if (command == "tune") return ember::cli::run_tune(rest);
    if (command == "profile") return ember::cli::run_profile(rest);
    if (command == "fr-trace") return ember::cli::run_fr_trace(rest);
    std::cerr << "ember: unknown command '" << command << "'\n" << kUsage;
    return 2;
  } catch (const ember::cli::UsageError& e) {
    std::cerr << "ember " << args[0] << ": " << e.message << "\n";
    return 2;
  } catch (const ember::Error& e) {
    std::cerr << "ember " << args[0] << ": " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "ember " << args[0] << ": " << e.what() << "\n";
    return 1;
  }
}
