// One trace of a forward at concrete sizes: the values and op calls the op layer's trace
// hook reported (Note [Export trace] in src/core/trace.h). export.cpp traces a forward at
// several sizes and fits the numbers of the traces into affine expressions.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/trace.h"
#include "ember/export.h"

namespace ember::export_detail {

struct TracedValue {
  enum class Kind { Input, Constant, CallOutput, View };
  Kind kind = Kind::CallOutput;
  ScalarType dtype = kFloat32;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;    // View: elements into the base's memory
  uint32_t slot = 0;     // Input
  uint32_t base = 0;     // View
  std::string constant;  // Constant: its name
  bool operator==(const TracedValue&) const = default;
};

struct TracedCall {
  std::string op;
  std::vector<uint32_t> inputs, outputs;
  std::vector<core::TraceAttribute> attributes;
};

struct Trace {
  std::vector<TracedValue> values;
  std::vector<TracedCall> calls;
  std::vector<uint32_t> outputs;
  std::map<std::string, Tensor> constants;  // by name: parameters, buffers, inline constants
};

// The thread's trace listener while alive. Inputs and the module's parameters and buffers
// are known before the forward runs; every other tensor a recorded op reads must come from
// an earlier recorded op (or be a view of one), else the export is refused.
class Tracer final : public core::TraceListener {
 public:
  Tracer(const nn::Module& module, const std::vector<Tensor>& inputs, const std::vector<bool>& symbolic_value_inputs);
  ~Tracer() override;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  void record(core::TracedOp op) override;
  void unsupported(const char* op, std::vector<Storage> allocations) noexcept override;
  void item(const Tensor& tensor) override;

  // Stops listening and resolves the forward's results into the trace's outputs.
  Trace finish(const std::vector<Tensor>& outputs);

 private:
  struct Root {
    uint32_t value;
    Tensor tensor;  // kept alive: its storage's address stays unique while tracing
  };
  struct Producer {
    std::string op;
    size_t after_call;
  };
  uint32_t add_value(TracedValue value);
  void add_root(const Tensor& t, TracedValue value);
  // The value of `t`; `reader` names the op that reads it (for errors).
  uint32_t value_of(const Tensor& t, const std::string& reader);
  std::string place() const;

  Trace trace_;
  std::map<const void*, Root> roots_;  // by storage address
  std::map<std::tuple<uint32_t, std::vector<int64_t>, std::vector<int64_t>, int64_t>, uint32_t> views_;
  std::map<const void*, Producer> unsupported_;  // storages made by ops without export support
  std::vector<Storage> unsupported_storages_;
  std::vector<bool> symbolic_value_;  // per input slot
  size_t inline_constants_ = 0;
  bool finished_ = false;
};

}  // namespace ember::export_detail
