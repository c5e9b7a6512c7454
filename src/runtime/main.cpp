// ember-rt: runs a .ember program file (libember_rt) without the ember library.
//   ember-rt PROGRAM                          its metadata, methods, inputs and outputs
//   ember-rt PROGRAM --method NAME --input SHAPE=FILE ... [--output PREFIX]
//       input i: FILE's raw little-endian bytes in the input's dtype, row-major, of SHAPE
//       (3x4; "scalar" for 0 dims); output o is written to PREFIX<o>.bin (default out)
//   ember-rt GPT.ember --prompt TEXT [--tokens N --temperature X --top-k N --top-p X --seed N]
//       text generation as `ember generate` (the exported GPT's prefill and decode methods)
//   ember-rt MODEL.ember --ids "1 2 3" [--emit ids|text] [--ignore-eos] [sampling flags]
//       generation from token ids (any exported decoder; a pretrained model's text is printed
//       from its "token_bytes" metadata: ember-rt does not parse tokenizer.json)
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/random.h"
#include "ember/detail/sampling.h"
#include "ember/runtime.h"

namespace {

const char* kUsage =
    "usage: ember-rt PROGRAM [--method NAME --input SHAPE=FILE ... [--output PREFIX]]\n"
    "       ember-rt GPT.ember --prompt TEXT [--tokens N] [--temperature X] [--top-k N] [--top-p X] [--seed N]\n"
    "       ember-rt MODEL.ember --ids \"1 2 3\" [--emit ids|text] [--ignore-eos] [--tokens N] [sampling flags]\n"
    "  PROGRAM alone lists its metadata, methods, inputs and outputs; with --method runs NAME\n"
    "  on the inputs (raw row-major bytes in each input's dtype; SHAPE like 3x4, or scalar) and writes\n"
    "  output o to PREFIX<o>.bin (default PREFIX: out). With --prompt, continues the text with\n"
    "  an exported GPT as `ember generate` does (defaults: --tokens 200 --temperature 0.8\n"
    "  --top-k 40 --top-p 0.95 --seed 0; --temperature 0 is greedy). With --ids, continues those\n"
    "  token ids (a model exported by `ember export --model`: ember-rt cannot encode its text, so\n"
    "  take the ids `ember tokenize` prints) and prints the new ids on one line, or with --emit text\n"
    "  their bytes; stops after an EOS id of the model unless --ignore-eos.\n";

const char* const kDtypeNames[] = {"bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32",
                                   "float64"};
const size_t kElementSizes[] = {1, 1, 1, 4, 8, 2, 2, 4, 8};

int fail(const char* message) {
  std::fprintf(stderr, "ember-rt: %s\n", message);
  return 1;
}

void print_info(const char* what, size_t index, const EmberRtTensorInfo& info) {
  std::printf("  %s %zu '%s': %s [", what, index, info.name, kDtypeNames[info.dtype]);
  for (int32_t d = 0; d < info.ndim; ++d) {
    if (info.min_sizes[d] == info.max_sizes[d]) std::printf("%s%lld", d ? ", " : "", static_cast<long long>(info.min_sizes[d]));
    else std::printf("%s%lld..%lld", d ? ", " : "", static_cast<long long>(info.min_sizes[d]),
                     static_cast<long long>(info.max_sizes[d]));
  }
  std::printf("]\n");
}

// The metadata tools read (the C API looks keys up; it does not list them), with newlines
// and other control bytes escaped so each entry stays on one line.
void print_metadata(const EmberRtProgram* program) {
  for (const char* key : {"max_seq_len", "tokenizer_kind", "tokenizer_state", "gpt_config", "architecture",
                          "quantization", "eos_token_ids"}) {
    const char* value = ember_rt_metadata(program, key);
    if (value == nullptr) continue;
    std::printf("metadata %s: ", key);
    for (const char* c = value; *c; ++c) {
      const unsigned char byte = static_cast<unsigned char>(*c);
      if (byte == '\\') std::printf("\\\\");
      else if (byte == '\n') std::printf("\\n");
      else if (byte < 0x20 || byte == 0x7f) std::printf("\\x%02x", byte);
      else std::putchar(byte);
    }
    std::printf("\n");
  }
}

int list_methods(EmberRtProgram* program) {
  print_metadata(program);
  for (size_t m = 0; m < ember_rt_num_methods(program); ++m) {
    EmberRtMethod* method = nullptr;
    ember_rt_method(program, ember_rt_method_name(program, m), &method);
    std::printf("method %s\n", ember_rt_method_name(program, m));
    EmberRtTensorInfo info;
    for (size_t i = 0; i < ember_rt_num_inputs(method); ++i)
      if (ember_rt_input_info(method, i, &info) == EMBER_RT_OK) print_info("input", i, info);
    for (size_t o = 0; o < ember_rt_num_outputs(method); ++o)
      if (ember_rt_output_info(method, o, &info) == EMBER_RT_OK) print_info("output", o, info);
  }
  return 0;
}

bool read_file(const std::string& path, std::vector<unsigned char>* bytes) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  unsigned char chunk[65536];
  for (size_t n; (n = std::fread(chunk, 1, sizeof(chunk), f)) > 0;) bytes->insert(bytes->end(), chunk, chunk + n);
  std::fclose(f);
  return true;
}

// "3x4=x.bin" -> sizes {3, 4} and the file's bytes.
bool parse_input(const std::string& spec, EmberRtTensor* tensor, std::vector<unsigned char>* bytes) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos) return false;
  const std::string shape = spec.substr(0, eq);
  tensor->ndim = 0;
  if (shape != "scalar") {
    for (size_t start = 0; start <= shape.size();) {
      size_t end = shape.find('x', start);
      if (end == std::string::npos) end = shape.size();
      if (tensor->ndim == EMBER_RT_MAX_DIMS || end == start) return false;
      tensor->sizes[tensor->ndim++] = std::strtoll(shape.substr(start, end - start).c_str(), nullptr, 10);
      start = end + 1;
    }
  }
  return read_file(spec.substr(eq + 1), bytes);
}

int run_method(EmberRtProgram* program, const std::string& name, const std::vector<std::string>& input_specs,
               const std::string& prefix) {
  EmberRtMethod* method = nullptr;
  if (ember_rt_method(program, name.c_str(), &method) != EMBER_RT_OK) return fail(ember_rt_last_error());
  if (input_specs.size() != ember_rt_num_inputs(method)) return fail("the number of --input flags differs from the method's inputs");
  std::vector<EmberRtTensor> inputs(input_specs.size()), outputs(ember_rt_num_outputs(method));
  std::vector<std::vector<unsigned char>> buffers(inputs.size() + outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    EmberRtTensorInfo info;
    ember_rt_input_info(method, i, &info);
    inputs[i] = EmberRtTensor{};
    inputs[i].dtype = info.dtype;
    if (!parse_input(input_specs[i], &inputs[i], &buffers[i])) return fail("cannot read an --input SHAPE=FILE");
    size_t expected = kElementSizes[info.dtype];
    for (int32_t d = 0; d < inputs[i].ndim; ++d) expected *= static_cast<size_t>(inputs[i].sizes[d]);
    if (buffers[i].size() != expected) return fail("an input file's size differs from its shape and dtype");
    buffers[i].resize(expected + 1);
    inputs[i].data = buffers[i].data();
  }
  for (size_t o = 0; o < outputs.size(); ++o) {
    EmberRtTensorInfo info;
    ember_rt_output_info(method, o, &info);
    std::vector<unsigned char>& buffer = buffers[inputs.size() + o];
    buffer.resize(info.max_bytes + 1);
    outputs[o] = EmberRtTensor{};
    outputs[o].data = buffer.data();
    outputs[o].capacity_bytes = info.max_bytes;
  }
  if (ember_rt_run(method, inputs.data(), inputs.size(), outputs.data(), outputs.size()) != EMBER_RT_OK)
    return fail(ember_rt_last_error());
  for (size_t o = 0; o < outputs.size(); ++o) {
    size_t bytes = kElementSizes[outputs[o].dtype];
    std::printf("output %zu: %s [", o, kDtypeNames[outputs[o].dtype]);
    for (int32_t d = 0; d < outputs[o].ndim; ++d) {
      bytes *= static_cast<size_t>(outputs[o].sizes[d]);
      std::printf("%s%lld", d ? ", " : "", static_cast<long long>(outputs[o].sizes[d]));
    }
    const std::string path = prefix + std::to_string(o) + ".bin";
    std::printf("] -> %s\n", path.c_str());
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(outputs[o].data, 1, bytes, f) != bytes || std::fclose(f) != 0)
      return fail("cannot write an output file");
  }
  return 0;
}

// Numbers as `ember generate` reads its flags (src/cli/args.cpp): the whole text or nothing.
bool parse_int(const std::string& text, int64_t* value) {
  errno = 0;
  char* end = nullptr;
  const long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) return false;
  *value = parsed;
  return true;
}

bool parse_number(const std::string& text, double* value) {
  char* end = nullptr;
  const double parsed = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(parsed)) return false;
  *value = parsed;
  return true;
}

// The tokenizers of ember::data (src/data/text.cpp), which ember-rt does not link: "byte", or
// "char" over the sorted distinct bytes of the state (unknown bytes encode to id 0).
struct Tokenizer {
  bool bytes = true;
  std::string alphabet;
  int16_t index[256] = {};
  std::vector<std::string> table;  // a pretrained model's bytes per id (decode only)

  // "token_bytes" metadata: each id's bytes in lowercase hex, comma-separated in id order.
  bool init_table(const char* token_bytes) {
    table.assign(1, std::string());
    for (const char* c = token_bytes; *c; ++c) {
      if (*c == ',') {
        table.emplace_back();
        continue;
      }
      const int high = hex(c[0]), low = c[1] ? hex(c[1]) : -1;
      if (high < 0 || low < 0) return false;
      table.back().push_back(static_cast<char>(high * 16 + low));
      ++c;
    }
    return true;
  }
  static int hex(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

  bool init(const char* kind, const char* state) {
    bytes = std::strcmp(kind, "byte") == 0;
    if (bytes) return true;
    if (std::strcmp(kind, "char") != 0 || state == nullptr) return false;
    bool seen[256] = {};
    for (const char* c = state; *c; ++c) seen[static_cast<unsigned char>(*c)] = true;
    for (int c = 0; c < 256; ++c) {
      index[c] = static_cast<int16_t>(seen[c] ? alphabet.size() : 0);
      if (seen[c]) alphabet.push_back(static_cast<char>(c));
    }
    return !alphabet.empty();
  }
  std::vector<int64_t> encode(const std::string& text) const {
    std::vector<int64_t> ids;
    for (unsigned char c : text) ids.push_back(bytes ? c : index[c]);
    return ids;
  }
  std::string decode(int64_t id) const {
    if (!table.empty()) return id >= 0 && id < static_cast<int64_t>(table.size()) ? table[static_cast<size_t>(id)] : "";
    if (bytes) return std::string(1, static_cast<char>(id));
    return id >= 0 && id < static_cast<int64_t>(alphabet.size()) ? std::string(1, alphabet[static_cast<size_t>(id)])
                                                                 : std::string();
  }
};

// "1 2 3": token ids separated by spaces or commas, brackets ignored ("[1, 2, 3]" as `ember
// tokenize` prints them).
bool parse_ids(const std::string& text, std::vector<int64_t>* ids) {
  size_t at = 0;
  while ((at = text.find_first_not_of(" ,[]", at)) != std::string::npos) {
    const size_t end = std::min(text.find_first_of(" ,[]", at), text.size());
    int64_t id = 0;
    if (!parse_int(text.substr(at, end - at), &id) || id < 0) return false;
    ids->push_back(id);
    at = end;
  }
  return true;
}

struct GenerateOptions {
  std::string prompt;
  std::vector<int64_t> ids;  // --ids: the context as token ids
  bool from_ids = false, emit_text = false, ignore_eos = false;
  int64_t tokens = 200, top_k = 40;
  double temperature = 0.8, top_p = 0.95;
  uint64_t seed = 0;
};

// The exported GPT's methods over one set of KV-cache buffers: prefill(tokens [1, T], caches)
// and decode(tokens [1, 1], pos, caches), each giving logits [1, T or 1, vocab] (float32).
class Gpt {
 public:
  bool init(EmberRtProgram* program) {
    if (ember_rt_method(program, "prefill", &prefill_) != EMBER_RT_OK ||
        ember_rt_method(program, "decode", &decode_) != EMBER_RT_OK)
      return false;
    const size_t caches = ember_rt_num_inputs(prefill_) - 1;
    if (ember_rt_num_inputs(decode_) != caches + 2) return false;
    cache_buffers_.resize(caches);
    cache_tensors_.resize(caches);
    for (size_t c = 0; c < caches; ++c) {
      EmberRtTensorInfo info;
      if (ember_rt_input_info(prefill_, c + 1, &info) != EMBER_RT_OK) return false;
      cache_buffers_[c].assign(info.max_bytes, 0);
      EmberRtTensor& t = cache_tensors_[c];
      t = EmberRtTensor{};
      t.data = cache_buffers_[c].data();
      t.dtype = info.dtype;
      t.ndim = info.ndim;
      for (int32_t d = 0; d < info.ndim; ++d) t.sizes[d] = info.max_sizes[d];
    }
    EmberRtTensorInfo logits;
    if (ember_rt_output_info(prefill_, 0, &logits) != EMBER_RT_OK || logits.dtype != EMBER_RT_FLOAT32) return false;
    logits_.resize(logits.max_bytes / sizeof(float) + 1);
    vocab_ = logits.max_sizes[2];
    return true;
  }

  // Logits of the last of `context`'s tokens, the cache holding them.
  bool prefill(const std::vector<int64_t>& context, std::vector<double>* logits) {
    std::vector<EmberRtTensor> inputs{token_tensor(context, {1, static_cast<int64_t>(context.size())})};
    inputs.insert(inputs.end(), cache_tensors_.begin(), cache_tensors_.end());
    length_ = static_cast<int64_t>(context.size());
    return run(prefill_, inputs, logits);
  }

  // Logits after `token`, appended to the cache at position length().
  bool decode(int64_t token, std::vector<double>* logits) {
    std::vector<int64_t> one{token};
    int64_t pos = length_;
    EmberRtTensor position{};
    position.data = &pos;
    position.dtype = EMBER_RT_INT64;
    std::vector<EmberRtTensor> inputs{token_tensor(one, {1, 1}), position};
    inputs.insert(inputs.end(), cache_tensors_.begin(), cache_tensors_.end());
    ++length_;
    return run(decode_, inputs, logits);
  }

  int64_t length() const { return length_; }

 private:
  EmberRtTensor token_tensor(const std::vector<int64_t>& ids, std::vector<int64_t> sizes) {
    token_buffer_ = ids;
    EmberRtTensor t{};
    t.data = token_buffer_.data();
    t.dtype = EMBER_RT_INT64;
    t.ndim = static_cast<int32_t>(sizes.size());
    for (size_t d = 0; d < sizes.size(); ++d) t.sizes[d] = sizes[d];
    return t;
  }

  // The logits of the output's last row: a GPT's prefill gives every position's, a pretrained
  // model's the last one only.
  bool run(EmberRtMethod* method, const std::vector<EmberRtTensor>& inputs, std::vector<double>* logits) {
    EmberRtTensor output{};
    output.data = logits_.data();
    output.capacity_bytes = (logits_.size() - 1) * sizeof(float);
    if (ember_rt_run(method, inputs.data(), inputs.size(), &output, 1) != EMBER_RT_OK) return false;
    const float* values = logits_.data() + (output.sizes[1] - 1) * vocab_;
    logits->assign(values, values + vocab_);  // exact, as Tensor::to(kFloat64) in ember generate
    return true;
  }

  EmberRtMethod *prefill_ = nullptr, *decode_ = nullptr;
  std::vector<std::vector<unsigned char>> cache_buffers_;
  std::vector<EmberRtTensor> cache_tensors_;
  std::vector<int64_t> token_buffer_;
  std::vector<float> logits_;
  int64_t vocab_ = 0, length_ = 0;
};

// The steps of `ember generate` (src/cli/generate.cpp): prefill the prompt (its last
// max_seq_len tokens), then sample and decode one token at a time; a full cache restarts from
// the latest half of the context.
// The decoder's text, from a GPT's byte/char tokenizer or a pretrained model's token_bytes.
bool init_tokenizer(EmberRtProgram* program, Tokenizer* tokenizer) {
  if (const char* token_bytes = ember_rt_metadata(program, "token_bytes")) return tokenizer->init_table(token_bytes);
  const char* kind = ember_rt_metadata(program, "tokenizer_kind");
  return kind != nullptr && tokenizer->init(kind, ember_rt_metadata(program, "tokenizer_state"));
}

// "eos_token_ids" metadata: decimal ids, space-separated.
std::vector<int64_t> eos_ids(EmberRtProgram* program) {
  std::vector<int64_t> ids;
  const char* text = ember_rt_metadata(program, "eos_token_ids");
  for (char* end = nullptr; text != nullptr && *text; text = end) {
    ids.push_back(std::strtoll(text, &end, 10));
    if (end == text) break;
  }
  return ids;
}

int generate(EmberRtProgram* program, const GenerateOptions& options) {
  const char* max_len_text = ember_rt_metadata(program, "max_seq_len");
  Tokenizer tokenizer;
  const bool has_tokenizer = init_tokenizer(program, &tokenizer);
  if (max_len_text == nullptr || (!has_tokenizer && (!options.from_ids || options.emit_text)))
    return fail("the program has no max_seq_len and tokenizer (tokenizer_kind/tokenizer_state or token_bytes) "
                "metadata (not an exported decoder?)");
  if (!options.from_ids && !tokenizer.table.empty())
    return fail("ember-rt cannot encode text for this model's tokenizer: give the prompt as --ids (ember tokenize)");
  Gpt gpt;
  if (!gpt.init(program)) return fail("the program has no prefill and decode methods of an exported decoder");
  const int64_t max_len = std::strtoll(max_len_text, nullptr, 10);
  const std::vector<int64_t> eos = options.ignore_eos ? std::vector<int64_t>() : eos_ids(program);
  std::vector<int64_t> tokens =
      options.from_ids ? options.ids : tokenizer.encode(options.prompt.empty() ? "\n" : options.prompt);
  if (tokens.empty()) return fail("--ids needs at least one token id");
  std::vector<double> logits;
  auto prefill = [&](int64_t keep) {
    keep = std::min<int64_t>(keep, static_cast<int64_t>(tokens.size()));
    return gpt.prefill(std::vector<int64_t>(tokens.end() - keep, tokens.end()), &logits);
  };
  if (!prefill(max_len)) return fail(ember_rt_last_error());
  if (!options.from_ids) std::fputs(options.prompt.c_str(), stdout);
  std::fflush(stdout);
  for (int64_t i = 0; i < options.tokens; ++i) {
    const double u = ember::detail::uniform_from_bits(ember::cpu::random_bits(options.seed, static_cast<uint64_t>(i)));
    const int64_t next = ember::detail::sample_token(logits.data(), static_cast<int64_t>(logits.size()),
                                                     options.temperature, options.top_k, options.top_p, u);
    tokens.push_back(next);
    const bool at_eos = std::find(eos.begin(), eos.end(), next) != eos.end();
    if (options.from_ids && !options.emit_text) {
      std::printf("%s%lld", i ? " " : "", static_cast<long long>(next));
    } else if (!at_eos) {
      const std::string text = tokenizer.decode(next);
      std::fwrite(text.data(), 1, text.size(), stdout);  // not fputs: token 0 of the byte tokenizer is a NUL
    }
    std::fflush(stdout);
    if (i + 1 == options.tokens || at_eos) break;
    const bool ok = gpt.length() == max_len ? prefill(max_len / 2) : gpt.decode(next, &logits);
    if (!ok) return fail(ember_rt_last_error());
  }
  std::fputs("\n", stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string method, prefix = "out";
  std::vector<std::string> inputs;
  GenerateOptions generation;
  int64_t seed = 0;  // read as ember generate reads it (a signed integer), used as its bits
  bool generating = false;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--ignore-eos") {  // the one switch
      generation.ignore_eos = generating = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fputs(kUsage, stderr);
      return 2;
    }
    const std::string value = argv[++i];
    bool parsed = true;
    if (flag == "--method") method = value;
    else if (flag == "--input") inputs.push_back(value);
    else if (flag == "--output") prefix = value;
    else if (flag == "--prompt") generation.prompt = value;
    else if (flag == "--ids") parsed = parse_ids(value, &generation.ids), generation.from_ids = true;
    else if (flag == "--emit") parsed = value == "text" || value == "ids", generation.emit_text = value == "text";
    else if (flag == "--tokens") parsed = parse_int(value, &generation.tokens);
    else if (flag == "--temperature") parsed = parse_number(value, &generation.temperature);
    else if (flag == "--top-k") parsed = parse_int(value, &generation.top_k);
    else if (flag == "--top-p") parsed = parse_number(value, &generation.top_p);
    else if (flag == "--seed") parsed = parse_int(value, &seed);
    else {
      std::fprintf(stderr, "ember-rt: unknown flag %s\n%s", flag.c_str(), kUsage);
      return 2;
    }
    if (!parsed) {
      std::fprintf(stderr, "ember-rt: %s expects %s, got '%s'\n", flag.c_str(),
                   flag == "--emit" ? "ids or text" : flag == "--ids" ? "integers separated by spaces" : "a number",
                   value.c_str());
      return 2;
    }
    generating |= flag != "--method" && flag != "--input" && flag != "--output";
  }
  generation.seed = static_cast<uint64_t>(seed);
  if (generating && (generation.tokens < 0 || generation.top_p <= 0 || generation.top_p > 1)) {
    std::fprintf(stderr, "ember-rt: --tokens must be >= 0 and --top-p in (0, 1]\n");
    return 2;
  }
  EmberRtProgram* program = nullptr;
  if (ember_rt_load(argv[1], &program) != EMBER_RT_OK) return fail(ember_rt_last_error());
  const int status = generating         ? generate(program, generation)
                     : method.empty() ? list_methods(program)
                                      : run_method(program, method, inputs, prefix);
  ember_rt_free(program);
  return status;
}
