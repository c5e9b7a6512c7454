// `ember tokenize`: a text's token ids under a model directory's tokenizer.json, as
// llama-tokenize prints them.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "args.h"
#include "ember/data/tokenizers.h"
#include "ember/error.h"

namespace ember::cli {
namespace {

const char* kTokenizeHelp =
    "usage: ember tokenize --model DIR (--text TEXT | --file FILE) [--json] [--add-special]\n"
    "Prints the token ids of a text under DIR/tokenizer.json (DIR may also be the file itself):\n"
    "one line [id, id, ...], or {\"ids\": [...]} with --json. No special tokens are added unless\n"
    "--add-special is given (then the file's post-processor adds them, as <s> for Llama).\n"
    "  --model DIR      a Hugging Face model directory holding tokenizer.json\n"
    "  --text TEXT      the text to tokenize\n"
    "  --file FILE      read the text from FILE (its exact bytes)\n"
    "  --json           print {\"ids\": [...]}\n"
    "  --add-special    add the special tokens of the file's post-processor\n";

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in, "tokenize", "cannot open '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int run_tokenize(const std::vector<std::string>& argv) {
  if (asks_for_help(argv)) {
    std::cout << kTokenizeHelp;
    return 0;
  }
  Args args(argv, {"model", "text", "file"}, {"json", "add-special"});
  const std::string model = args.get("model", "");
  if (model.empty()) throw UsageError{"--model DIR is required"};
  if (args.has("text") == args.has("file")) throw UsageError{"give one of --text TEXT or --file FILE"};
  const std::string path = std::filesystem::is_directory(model) ? model + "/tokenizer.json" : model;
  const auto tokenizer = tokenizers::Tokenizer::from_file(path);
  const std::string text = args.has("text") ? args.get("text", "") : read_whole_file(args.get("file", ""));
  const std::vector<int64_t> ids = tokenizer.encode(text, args.get_switch("add-special"));
  std::ostringstream list;
  list << '[';
  for (size_t i = 0; i < ids.size(); ++i) list << (i ? ", " : "") << ids[i];
  list << ']';
  if (args.get_switch("json"))
    std::cout << "{\"ids\": " << list.str() << "}\n";
  else
    std::cout << list.str() << "\n";
  return 0;
}

}  // namespace ember::cli
