// One trace of a forward at concrete sizes: the values and op calls the op layer's trace
// hook reported (Note [Export trace] in src/core/trace.h). export.cpp traces a forward at
// several sizes and fits the numbers of the traces into affine expressions.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
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
  int64_t offset_step = 0;  // View in a loop body: offset added per iteration of loop `loop`
  uint32_t loop = 0;        // 1 + the ordinal of that loop in the trace; 0: none
  uint32_t slot = 0;     // Input
  uint32_t base = 0;     // View
  std::string constant;  // Constant: its name
  bool operator==(const TracedValue&) const = default;
};

struct TracedLoop;

// An op call, or (with `loop` set) a loop recorded once (Note [Export loops]).
struct TracedCall {
  std::string op;
  std::vector<uint32_t> inputs, outputs;
  std::vector<core::TraceAttribute> attributes;
  std::shared_ptr<TracedLoop> loop;
};

struct TracedLoop {
  int64_t trip_count = 0;
  uint32_t ordinal = 0;  // the loop's place among the trace's loops
  std::vector<TracedCall> body;
  std::vector<uint32_t> carried_inputs, carried_outputs;
};

struct Trace {
  std::vector<TracedValue> values;
  std::vector<TracedCall> calls;
  std::vector<uint32_t> outputs;
  std::map<std::string, Tensor> constants;  // by name: parameters, buffers, inline constants
};

// The thread's trace listener while alive. Inputs, the module's parameters and buffers and
// the named constants are known before the forward runs; every other tensor a recorded op
// reads must come from an earlier recorded op (or be a view of one), else the export is
// refused.
class Tracer final : public core::TraceListener {
 public:
  Tracer(const nn::Module& module, const std::vector<Tensor>& inputs, const std::vector<bool>& symbolic_value_inputs,
         const NamedConstants& constants);
  ~Tracer() override;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  void record(core::TracedOp op) override;
  void unsupported(const char* op, std::vector<Storage> allocations) noexcept override;
  void untraced_allocation(const Storage& storage) noexcept override;
  void item(const Tensor& tensor) override;
  void loop_begin(int64_t trip_count) override;
  void loop_iteration(const std::vector<Tensor>& carried) override;
  void loop_end(const std::vector<Tensor>& carried, const std::vector<std::vector<Tensor>>& stacked) override;

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
  // Values a and b are views of inline constants with the same bytes and geometry.
  bool same_constant(uint32_t a, uint32_t b) const;
  // Drops values no call or output reads (a loop's unrolled iterations) and renumbers.
  void compact();

  struct OpenLoop {
    int64_t trip_count = 0;
    size_t first_call = 0;
    std::vector<size_t> iteration_call, iteration_value;
    std::vector<std::vector<uint32_t>> carried;  // per iteration
  };
  struct StackedResult {
    std::vector<const void*> storages;  // the per-iteration results, in stack() order
    uint32_t buffer;
  };
  // Folding a loop's iterations into one body (Note [Export loops]).
  struct LoopFold;
  LoopFold classify_iterations(OpenLoop open);
  uint32_t stepping_view(LoopFold& f, uint32_t base, const std::vector<int64_t>& sizes,
                         const std::vector<int64_t>& strides, int64_t offset, int64_t step);
  uint32_t body_input(LoopFold& f, size_t call, size_t input);
  std::vector<TracedCall> fold_body(LoopFold& f);
  std::vector<uint32_t> carried_outputs(const LoopFold& f, const std::vector<Tensor>& carried_final);
  TracedCall stack_into_buffer(LoopFold& f, const std::vector<Tensor>& results);

  std::optional<OpenLoop> loop_;
  uint32_t loops_ = 0;
  std::vector<StackedResult> stacked_;
  std::map<const void*, std::string> loop_locals_;  // storages made inside a loop iteration
  std::vector<Tensor> retired_;  // tensors of loop iterations, kept alive

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
