// ember::export_program: records the eager ops of a forward (the op layer's trace hook) into
// a program: a graph IR whose sizes are affine in symbols with bounds (dynamic dims, int64
// inputs), parameters and buffers as named constants, and a static memory plan. The program
// runs in-library (ExportedProgram::run, an interpreter over ember's ops) and is written as a
// `.ember` file (src/runtime/schema/program.fbs) for libember_rt. torch.export has no libtorch
// C++ counterpart: the names follow PyTorch's Python API (torch.export.export, Dim,
// ExportedProgram) where they can.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember {

// A dynamic dim or a symbolic int64 input: a named symbol with inclusive bounds
// (torch.export.Dim("T", min=..., max=...)).
struct Dim {
  Dim(std::string name, int64_t min, int64_t max) : name(std::move(name)), min(min), max(max) {}
  std::string name;
  int64_t min, max;
};

struct ExportOptions {
  struct Symbolic {
    size_t input;
    int64_t dim;  // -1: the value of the int64 0-d input `input`
    Dim symbol;
  };
  // Dim `dim` of input `input` is the symbol `symbol` (torch.export's dynamic_shapes).
  ExportOptions& dynamic_dim(size_t input, int64_t dim, Dim symbol) {
    symbols.push_back({input, dim, std::move(symbol)});
    return *this;
  }
  // The value of input `input` (an int64 0-d tensor, e.g. a cache position) is a symbol:
  // the forward may read it with item<int64_t>() and sizes and offsets may depend on it.
  ExportOptions& symbolic_value(size_t input, Dim symbol) {
    symbols.push_back({input, -1, std::move(symbol)});
    return *this;
  }
  std::vector<Symbolic> symbols;
};

// The graph IR, in the shape of the program file (src/runtime/schema/program.fbs).
namespace export_ir {

struct Term {
  uint32_t symbol = 0;
  int64_t coefficient = 0;
  bool operator==(const Term&) const = default;
};

// constant + sum(coefficient * symbol) (Note [Symbolic sizes] in program.fbs).
struct Expr {
  int64_t constant = 0;
  std::vector<Term> terms;
  int64_t eval(const std::vector<int64_t>& symbols) const;
  // The largest value over the symbols' bounds [min[i], max[i]].
  int64_t upper_bound(const std::vector<int64_t>& min, const std::vector<int64_t>& max) const;
  bool operator==(const Expr&) const = default;
};

enum class SymbolSource : uint8_t { InputDim, InputValue, LoopIndex };

struct Symbol {
  std::string name;
  SymbolSource source = SymbolSource::InputDim;
  uint32_t input = 0, dim = 0;
  int64_t min = 0, max = 0;
  bool operator==(const Symbol&) const = default;
};

enum class Location : uint8_t { Arena, Constant, Input, Output, View };

struct Value {
  std::string name;
  ScalarType dtype = kFloat32;
  std::vector<Expr> shape;
  std::vector<Expr> strides;  // empty: contiguous
  Location location = Location::Arena;
  uint64_t arena_offset = 0;  // Arena
  uint64_t max_bytes = 0;     // Arena, Constant
  uint32_t constant = 0;      // Constant: index into Program::constants (its segment)
  uint32_t slot = 0;          // Input, Output
  uint32_t base = 0;          // View
  Expr view_offset;           // View: elements into the base's memory
  bool operator==(const Value&) const = default;
};

enum class AttributeKind : uint8_t { Int, Float, Ints, Floats, String, Exprs };

struct Attribute {
  std::string name;
  AttributeKind kind = AttributeKind::Int;
  int64_t int_value = 0;
  double float_value = 0;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string string_value;
  std::vector<Expr> exprs;
  bool operator==(const Attribute&) const = default;
};

struct Call {
  std::string op;
  std::vector<uint32_t> inputs, outputs;  // indices into Method::values
  std::vector<Attribute> attributes;
  bool operator==(const Call&) const = default;
};

struct Instruction;

// Runs `body` trip_count times with symbol index_symbol (a LoopIndex) counting; after each
// iteration carried_outputs[i] is copied into carried_inputs[i] (an RNN's state).
struct Loop {
  Expr trip_count;
  uint32_t index_symbol = 0;
  std::vector<Instruction> body;
  std::vector<uint32_t> carried_inputs, carried_outputs;
  bool operator==(const Loop&) const;
};

struct Instruction {
  std::variant<Call, Loop> op;
  bool operator==(const Instruction&) const = default;
};

inline bool Loop::operator==(const Loop&) const = default;

// Calls fn(value) for every value an instruction reads or writes (a loop: its body's and its
// carried values).
template <typename Fn>
void for_each_value(const Instruction& instruction, Fn&& fn) {
  if (const auto* call = std::get_if<Call>(&instruction.op)) {
    for (uint32_t v : call->inputs) fn(v);
    for (uint32_t v : call->outputs) fn(v);
    return;
  }
  const Loop& loop = std::get<Loop>(instruction.op);
  for (const Instruction& i : loop.body) for_each_value(i, fn);
  for (uint32_t v : loop.carried_inputs) fn(v);
  for (uint32_t v : loop.carried_outputs) fn(v);
}

struct Method {
  std::string name;
  std::vector<Symbol> symbols;
  std::vector<Value> values;
  std::vector<uint32_t> inputs, outputs;
  std::vector<Instruction> instructions;
  uint64_t arena_bytes = 0;         // the static memory plan's arena, at the symbols' bounds
  uint64_t intermediate_bytes = 0;  // the sum of every Arena value's max_bytes (not in the file)
};

struct Constant {
  std::string name;  // the state_dict key of a parameter or buffer, or a named constant's name
  Tensor data;       // contiguous
};

struct Program {
  std::vector<Constant> constants;
  std::vector<Method> methods;
  std::map<std::string, std::string> metadata;  // free-form, for tools (a GPT's tokenizer)
  // The ops the methods call, sorted: the program's kernel list.
  std::vector<std::string> operators() const;
};

}  // namespace export_ir

class ExportedProgram {
 public:
  explicit ExportedProgram(export_ir::Program program) : program_(std::move(program)) {}

  // Interprets `method` through ember's ops, in the static memory plan's arena: symbols bound
  // from the inputs and checked against their bounds (an ember::Error outside them).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::string& method = "forward") const;
  // Writes the .ember file (Note [Program file layout] in program.fbs).
  void save(const std::string& path) const;
  // Reads a .ember file written by save() back into the IR (verified first).
  static ExportedProgram load(const std::string& path);
  // A readable listing: each method's inputs and symbols, views, calls and loops.
  std::string to_string() const;

  const export_ir::Program& program() const { return program_; }
  void set_metadata(const std::string& key, std::string value) { program_.metadata[key] = std::move(value); }
  const export_ir::Method& method(const std::string& name) const;

 private:
  export_ir::Program program_;
};

// A forward over tensors: a module's forward, or another entry point (a GPT's prefill).
using ExportFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct ExportMethod {
  std::string name;
  ExportFunction forward;
  std::vector<Tensor> example_inputs;
  ExportOptions options;
};

// Tensors a forward reads beyond its module's parameters and buffers (a quantized model's
// blocks, which it holds outside its state), by the names their constants take.
using NamedConstants = std::vector<std::pair<std::string, Tensor>>;

// Traces each method at its example inputs and at resized copies (every symbol at two more
// values inside its bounds), requires the same ops every time and fits every size, stride,
// offset and integer attribute as an affine expression in the symbols; anything else (an
// op without export support, item() on a computed value, different ops at different sizes,
// a size that is not affine) is an ember::Error naming the op and the call. Parameters and
// buffers of `module` become constants named by their state_dict keys, and `constants` by
// their names (a name of the module's state is an error).
ExportedProgram export_program(const nn::Module& module, std::vector<ExportMethod> methods,
                               const NamedConstants& constants = {});

ExportedProgram export_program(const nn::Module& module, const ExportFunction& forward,
                               std::vector<Tensor> example_inputs, const ExportOptions& options = {});

// A module holder whose forward takes one tensor and returns one (torch.export.export(m, (x,))).
template <typename Holder>
  requires requires(Holder m, Tensor x) { Tensor(m->forward(x)); }
ExportedProgram export_program(const Holder& module, std::vector<Tensor> example_inputs,
                               const ExportOptions& options = {}) {
  return export_program(
      *module,
      [holder = module](const std::vector<Tensor>& in) mutable {
        return std::vector<Tensor>{Tensor(holder->forward(in.at(0)))};
      },
      std::move(example_inputs), options);
}

}  // namespace ember
