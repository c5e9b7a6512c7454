// The trace listener of ember::export_program (Note [Export trace] in src/core/trace.h).
#include "export/tracer.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include "ember/error.h"
#include "ember/functions.h"
#include "export/interpreter.h"

namespace ember::export_detail {
namespace {

const void* storage_key(const Tensor& t) { return t.storage().data(); }

std::string shape_string(const Tensor& t) {
  std::ostringstream s;
  s << '[';
  for (int64_t d = 0; d < t.dim(); ++d) s << (d ? ", " : "") << t.size(d);
  s << "] " << dtype_name(t.scalar_type());
  return s.str();
}

}  // namespace

Tracer::Tracer(const nn::Module& module, const std::vector<Tensor>& inputs,
               const std::vector<bool>& symbolic_value_inputs, const NamedConstants& constants)
    : symbolic_value_(symbolic_value_inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].defined(), "export", "example input ", i, " is undefined");
    EMBER_CHECK(!roots_.count(storage_key(inputs[i])), "export", "example input ", i,
                " shares its memory with an earlier input or a parameter");
    add_root(inputs[i], {.kind = TracedValue::Kind::Input, .slot = static_cast<uint32_t>(i)});
  }
  auto add_constant = [&](const std::string& name, const Tensor& t) {
    if (!t.defined() || roots_.count(storage_key(t))) return;  // tied: its first name
    trace_.constants.emplace(name, t);
    add_root(t, {.kind = TracedValue::Kind::Constant, .constant = name});
  };
  const auto parameters = module.named_parameters(), buffers = module.named_buffers();
  for (const auto& item : parameters) add_constant(item.key(), item.value());
  for (const auto& item : buffers) add_constant(item.key(), item.value());
  std::set<std::string> named;
  for (const auto& [name, t] : constants) {
    EMBER_CHECK(!parameters.find(name) && !buffers.find(name) && named.insert(name).second, "export", "constant '",
                name, "' is named twice (by the module's state or by an earlier constant)");
    add_constant(name, t);
  }
  core::set_trace_listener(this);
}

Tracer::~Tracer() {
  if (!finished_) core::set_trace_listener(nullptr);
}

uint32_t Tracer::add_value(TracedValue value) {
  trace_.values.push_back(std::move(value));
  return static_cast<uint32_t>(trace_.values.size() - 1);
}

void Tracer::add_root(const Tensor& t, TracedValue value) {
  value.dtype = t.scalar_type();
  value.sizes = t.sizes();
  value.strides = t.strides();
  value.offset = t.storage_offset();
  const uint32_t id = add_value(std::move(value));
  roots_[storage_key(t)] = {id, t};
}

std::string Tracer::place() const {
  return "call #" + std::to_string(trace_.calls.size());
}

uint32_t Tracer::value_of(const Tensor& t, const std::string& reader) {
  auto root = roots_.find(storage_key(t));
  if (root == roots_.end()) {
    auto local = loop_locals_.find(storage_key(t));
    EMBER_CHECK(local == loop_locals_.end(), "export", "op '", reader, "' (", place(), ") reads a tensor ",
                shape_string(t), " computed inside an iteration of a loop (", local->second,
                "); only the loop's carried state and stacked results are visible after it");
    auto made = unsupported_.find(storage_key(t));
    EMBER_CHECK(made == unsupported_.end() || !made->second.op.empty(), "export", "op '", reader, "' (", place(),
                ") reads a tensor ", shape_string(t), " made after call #", made->second.after_call,
                " by an op without a trace hook (no export support; ops record through EMBER_RECORD_OP)");
    EMBER_CHECK(made == unsupported_.end(), "export", "op '", reader, "' (", place(), ") reads a tensor ",
                shape_string(t), " made by op '", made->second.op, "' (after call #", made->second.after_call,
                "), which has no export support");
    // Made by a factory (zeros, arange, a scalar operand) or before the trace: its storage's
    // bytes are baked in as a flat constant, which t and any other view of it view;
    // export_program checks the bytes are the same at every traced size.
    core::TracePause pause;
    const int64_t numel = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
    const Tensor flat = t.as_strided({numel}, {1}, 0);
    const std::string name = "constant." + std::to_string(inline_constants_++);
    trace_.constants.emplace(name, flat.clone());
    add_root(flat, {.kind = TracedValue::Kind::Constant, .constant = name});
    return value_of(t, reader);
  }
  const TracedValue& base = trace_.values[root->second.value];
  const int64_t offset = t.storage_offset() - base.offset;
  // The root's own tensor only: a view with the root's geometry at one size (a narrow to
  // the full length) stays a view, so every traced size records the same values.
  if (t.is_same(root->second.tensor)) return root->second.value;
  EMBER_CHECK(t.scalar_type() == base.dtype, "export", "op '", reader, "' (", place(),
              ") reads a tensor that reinterprets the memory of another as ", dtype_name(t.scalar_type()));
  auto key = std::make_tuple(root->second.value, t.sizes().vec(), t.strides().vec(), offset);
  auto view = views_.find(key);
  if (view != views_.end()) return view->second;
  const uint32_t id = add_value({.kind = TracedValue::Kind::View,
                                 .dtype = t.scalar_type(),
                                 .sizes = t.sizes(),
                                 .strides = t.strides(),
                                 .offset = offset,
                                 .base = root->second.value});
  views_.emplace(std::move(key), id);
  return id;
}

void Tracer::record(core::TracedOp op) {
  static const std::set<std::string> program_op_names = program_ops();
  EMBER_CHECK(program_op_names.count(op.name), "export", "op '", op.name, "' (", place(),
              ") records itself but is no program op of the op table (include/ember/detail/op_table.def)");
  if (op.name == "stack" && op.outputs.size() == 1 && !op.attributes.empty() && op.attributes[0].int_value == 0) {
    // stack() of a loop's per-iteration results: the loop wrote them into its buffer.
    std::vector<const void*> storages;
    for (const Tensor& t : op.inputs) storages.push_back(storage_key(t));
    for (const StackedResult& s : stacked_)
      if (s.storages == storages) {
        roots_[storage_key(op.outputs[0])] = {s.buffer, op.outputs[0]};
        return;
      }
  }
  TracedCall call{.op = op.name, .attributes = std::move(op.attributes)};
  for (const Tensor& t : op.inputs) call.inputs.push_back(value_of(t, op.name));
  for (const Tensor& t : op.outputs) {
    auto known = roots_.find(storage_key(t));
    if (known != roots_.end()) {
      // The op returned (a view of) memory the trace knows: no new value, no call.
      EMBER_CHECK(op.outputs.size() == 1, "export", "op '", op.name, "' (", place(),
                  ") returned an alias of an existing tensor among several results");
      return;
    }
    EMBER_CHECK(t.is_contiguous() && t.storage_offset() == 0, "export", "op '", op.name, "' (", place(),
                ") returned a non-contiguous result ", shape_string(t), ", which a memory plan cannot hold");
    add_root(t, {.kind = TracedValue::Kind::CallOutput});
    call.outputs.push_back(roots_[storage_key(t)].value);
  }
  trace_.calls.push_back(std::move(call));
}

void Tracer::unsupported(const char* op, std::vector<Storage> allocations) noexcept {
  for (Storage& storage : allocations) {
    unsupported_[storage.data()] = {op, trace_.calls.size()};
    unsupported_storages_.push_back(std::move(storage));
  }
}

void Tracer::untraced_allocation(const Storage& storage) noexcept {
  unsupported_[storage.data()] = {"", trace_.calls.size()};
  unsupported_storages_.push_back(storage);
}

void Tracer::item(const Tensor& tensor) {
  auto root = roots_.find(storage_key(tensor));
  if (root != roots_.end()) {
    const TracedValue& value = trace_.values[root->second.value];
    if (value.kind == TracedValue::Kind::Constant) return;  // the same in every run
    if (value.kind == TracedValue::Kind::Input && value.slot < symbolic_value_.size() && symbolic_value_[value.slot])
      return;  // a symbol: the program reads it too
  }
  std::string source = "an input that is not a symbolic value";
  if (root == roots_.end()) {
    auto made = unsupported_.find(storage_key(tensor));
    source = made == unsupported_.end()   ? "a tensor made by a factory"
             : made->second.op.empty() ? "a tensor made by an op without a trace hook"
                                       : "the result of op '" + made->second.op + "'";
  } else if (trace_.values[root->second.value].kind == TracedValue::Kind::CallOutput) {
    for (const auto& call : trace_.calls)
      for (uint32_t out : call.outputs)
        if (out == root->second.value) source = "the result of op '" + call.op + "'";
  }
  EMBER_FAIL("export", "item() at ", place(), " reads ", source,
             ": the recorded graph would depend on the data (control flow or a size computed from values); "
             "declare an int64 input with ExportOptions::symbolic_value instead");
}

// Note [Export loops]
// A TraceLoop's iterations are recorded like any ops, then folded into one body when the
// loop ends: iteration i must record the same calls as iteration 0, reading the same outer
// values, its own results (matched by their order of creation), the state carried into it,
// or views of one outer value whose offset moves by the same step every iteration (the
// time step's row of the input projections). The carried state lives in values the loop
// owns (initialised by copy_ before it), each stacked per-iteration result is copied into a
// buffer row by the body, and a later stack() of those results reads that buffer.
bool Tracer::same_constant(uint32_t a, uint32_t b) const {
  // A scalar operand made afresh in every iteration (1 - z): the same bytes each time.
  auto flat = [&](uint32_t v) -> const TracedValue* {
    const TracedValue* value = &trace_.values[v];
    if (value->kind == TracedValue::Kind::View) value = &trace_.values[value->base];
    return value->kind == TracedValue::Kind::Constant ? value : nullptr;
  };
  const TracedValue *x = flat(a), *y = flat(b);
  if (!x || !y || trace_.values[a].sizes != trace_.values[b].sizes || trace_.values[a].strides != trace_.values[b].strides ||
      trace_.values[a].offset != trace_.values[b].offset)
    return false;
  const Tensor &p = trace_.constants.at(x->constant), &q = trace_.constants.at(y->constant);
  return p.sizes() == q.sizes() && p.scalar_type() == q.scalar_type() && equal(p, q);
}

void Tracer::loop_begin(int64_t trip_count) {
  EMBER_CHECK(!loop_, "export", "nested loops cannot be exported (", place(), ")");
  loop_ = OpenLoop{.trip_count = trip_count, .first_call = trace_.calls.size()};
}

void Tracer::loop_iteration(const std::vector<Tensor>& carried) {
  EMBER_CHECK(loop_, "export", "a loop iteration outside a loop");
  loop_->iteration_call.push_back(trace_.calls.size());
  loop_->iteration_value.push_back(trace_.values.size());
  std::vector<uint32_t> ids;
  for (const Tensor& t : carried) ids.push_back(value_of(t, "loop"));
  loop_->carried.push_back(std::move(ids));
}

// What loop_end learns of a loop's unrolled iterations: the iteration each value was made in
// and its place among that iteration's values (-1: made outside the iterations).
struct Tracer::LoopFold {
  OpenLoop open;
  size_t iterations = 0, calls_end = 0, values_end = 0, calls_per_iteration = 0;
  uint32_t ordinal = 0;
  std::vector<int64_t> iteration_of, ordinal_of;
  std::vector<uint32_t> carried_inputs;
  std::map<std::tuple<uint32_t, std::vector<int64_t>, std::vector<int64_t>, int64_t, int64_t>, uint32_t> stepping_views;

  bool local_in(uint32_t v, size_t i, int64_t ordinal_wanted) const {
    return v < values_end && iteration_of[v] == static_cast<int64_t>(i) && ordinal_of[v] == ordinal_wanted;
  }
  [[noreturn]] void fail(const std::string& what) const {
    EMBER_FAIL("export", "the loop that starts at call #", open.first_call, " cannot be recorded once: ", what);
  }
};

Tracer::LoopFold Tracer::classify_iterations(OpenLoop open) {
  LoopFold f{.open = std::move(open)};
  const size_t n = f.iterations = f.open.iteration_call.size();
  EMBER_CHECK(static_cast<int64_t>(n) == f.open.trip_count && n >= 3, "export", "a loop of ", f.open.trip_count,
              " steps ran ", n, " iterations when traced; it needs at least 3 (give an example with 3 or more steps)");
  f.calls_end = trace_.calls.size();
  f.values_end = trace_.values.size();
  f.ordinal = loops_++;
  f.iteration_of.assign(f.values_end, -1);
  f.ordinal_of.assign(f.values_end, -1);
  std::vector<size_t> locals(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const size_t end = i + 1 < n ? f.open.iteration_value[i + 1] : f.values_end;
    for (size_t v = f.open.iteration_value[i]; v < end; ++v) {
      const TracedValue& value = trace_.values[v];
      const bool local = value.kind == TracedValue::Kind::CallOutput ||
                         (value.kind == TracedValue::Kind::View && f.iteration_of[value.base] == static_cast<int64_t>(i));
      if (!local) continue;
      f.iteration_of[v] = static_cast<int64_t>(i);
      f.ordinal_of[v] = static_cast<int64_t>(locals[i]++);
    }
  }
  for (size_t i = 1; i < n; ++i)
    if (locals[i] != locals[0]) f.fail("iteration " + std::to_string(i) + " makes other values than iteration 0");
  f.calls_per_iteration = f.open.iteration_call[1] - f.open.iteration_call[0];
  for (size_t i = 0; i < n; ++i) {
    const size_t end = i + 1 < n ? f.open.iteration_call[i + 1] : f.calls_end;
    if (end - f.open.iteration_call[i] != f.calls_per_iteration)
      f.fail("iteration " + std::to_string(i) + " records " + std::to_string(end - f.open.iteration_call[i]) +
             " calls, iteration 0 " + std::to_string(f.calls_per_iteration));
  }
  // Views made in an iteration of its own values: the same geometry in every iteration.
  for (uint32_t v = 0; v < f.values_end; ++v) {
    if (f.iteration_of[v] <= 0 || trace_.values[v].kind != TracedValue::Kind::View) continue;
    for (uint32_t u = 0; u < f.values_end; ++u)
      if (f.iteration_of[u] == 0 && f.ordinal_of[u] == f.ordinal_of[v]) {
        const TracedValue &a = trace_.values[u], &b = trace_.values[v];
        if (a.sizes != b.sizes || a.strides != b.strides || a.offset != b.offset ||
            f.ordinal_of[a.base] != f.ordinal_of[b.base])
          f.fail("a view inside the loop changes between iterations");
      }
  }
  return f;
}

uint32_t Tracer::stepping_view(LoopFold& f, uint32_t base, const std::vector<int64_t>& sizes,
                               const std::vector<int64_t>& strides, int64_t offset, int64_t step) {
  auto key = std::make_tuple(base, sizes, strides, offset, step);
  auto found = f.stepping_views.find(key);
  if (found != f.stepping_views.end()) return found->second;
  const uint32_t id = add_value({.kind = TracedValue::Kind::View, .dtype = trace_.values[base].dtype, .sizes = sizes,
                                 .strides = strides, .offset = offset, .offset_step = step, .loop = f.ordinal + 1,
                                 .base = base});
  f.stepping_views.emplace(key, id);
  return id;
}

uint32_t Tracer::body_input(LoopFold& f, size_t c, size_t j) {
  const size_t n = f.iterations;
  std::vector<uint32_t> seen;
  for (size_t i = 0; i < n; ++i) seen.push_back(trace_.calls[f.open.iteration_call[i] + c].inputs[j]);
  // The state carried into every iteration: the loop's state value.
  auto carried_at = [&](size_t i) {
    const auto& ids = f.open.carried[i];
    return static_cast<size_t>(std::find(ids.begin(), ids.end(), seen[i]) - ids.begin());
  };
  const size_t p = carried_at(0);
  bool all = p < f.carried_inputs.size();
  for (size_t i = 1; all && i < n; ++i) all = carried_at(i) == p;
  if (all) return f.carried_inputs[p];
  // The iteration's own value, or one value (or equal scalar constants) for all iterations.
  all = f.iteration_of[seen[0]] == 0;
  for (size_t i = 1; all && i < n; ++i) all = f.local_in(seen[i], i, f.ordinal_of[seen[0]]);
  if (all || std::all_of(seen.begin(), seen.end(), [&](uint32_t v) { return v == seen[0]; }) ||
      std::all_of(seen.begin(), seen.end(), [&](uint32_t v) { return same_constant(v, seen[0]); }))
    return seen[0];
  // A view of an outer value moving by the same step each iteration (the step's input row).
  const TracedValue& first = trace_.values[seen[0]];
  const int64_t step = trace_.values[seen[1]].offset - first.offset;
  bool stepping = first.kind == TracedValue::Kind::View && f.iteration_of[first.base] < 0;
  for (size_t i = 1; stepping && i < n; ++i) {
    const TracedValue& v = trace_.values[seen[i]];
    stepping = v.kind == TracedValue::Kind::View && v.base == first.base && v.sizes == first.sizes &&
               v.strides == first.strides && v.offset == first.offset + step * static_cast<int64_t>(i);
  }
  if (!stepping)
    f.fail("call #" + std::to_string(c) + " '" + trace_.calls[f.open.iteration_call[0] + c].op + "' reads input " +
           std::to_string(j) + " that is neither the same, carried, made in the iteration, nor a view stepping with it");
  return stepping_view(f, first.base, first.sizes, first.strides, first.offset, step);
}

std::vector<TracedCall> Tracer::fold_body(LoopFold& f) {
  std::vector<TracedCall> body;
  for (size_t c = 0; c < f.calls_per_iteration; ++c) {
    TracedCall call = trace_.calls[f.open.iteration_call[0] + c];
    for (size_t i = 1; i < f.iterations; ++i) {
      const TracedCall& other = trace_.calls[f.open.iteration_call[i] + c];
      bool same = other.op == call.op && other.inputs.size() == call.inputs.size() &&
                  other.outputs.size() == call.outputs.size() && other.attributes.size() == call.attributes.size();
      for (size_t a = 0; same && a < call.attributes.size(); ++a) {
        const auto &x = call.attributes[a], &y = other.attributes[a];
        same = x.name == y.name && x.int_value == y.int_value && x.float_value == y.float_value && x.ints == y.ints &&
               x.floats == y.floats && x.string_value == y.string_value;
      }
      if (!same)
        f.fail("its call #" + std::to_string(c) + " is '" + call.op + "' in iteration 0 but '" + other.op +
               "' (or other attributes) in iteration " + std::to_string(i));
      for (size_t o = 0; o < call.outputs.size(); ++o)
        if (!f.local_in(other.outputs[o], i, f.ordinal_of[call.outputs[o]]))
          f.fail("call #" + std::to_string(c) + " '" + call.op + "' writes other values in iteration " +
                 std::to_string(i));
    }
    for (size_t j = 0; j < call.inputs.size(); ++j) call.inputs[j] = body_input(f, c, j);
    body.push_back(std::move(call));
  }
  return body;
}

std::vector<uint32_t> Tracer::carried_outputs(const LoopFold& f, const std::vector<Tensor>& carried_final) {
  EMBER_CHECK(carried_final.size() == f.carried_inputs.size(), "export", "the loop ends with ", carried_final.size(),
              " carried tensors, began with ", f.carried_inputs.size());
  std::vector<uint32_t> out;
  for (size_t p = 0; p < f.carried_inputs.size(); ++p) {
    const uint32_t out0 = f.open.carried[1][p];
    if (f.iteration_of[out0] != 0) f.fail("the state carried out of iteration 0 is not made by it");
    for (size_t i = 0; i < f.iterations; ++i) {
      const uint32_t v = i + 1 < f.iterations ? f.open.carried[i + 1][p] : roots_.at(storage_key(carried_final[p])).value;
      if (!f.local_in(v, i, f.ordinal_of[out0])) f.fail("iteration " + std::to_string(i) + " carries out another value");
    }
    out.push_back(out0);
  }
  return out;
}

TracedCall Tracer::stack_into_buffer(LoopFold& f, const std::vector<Tensor>& results) {
  const size_t n = f.iterations;
  EMBER_CHECK(results.size() == n, "export", "a loop of ", n, " iterations stacks ", results.size(), " results");
  std::vector<int64_t> row_of(n, -1);
  int64_t result_ordinal = -1;
  for (size_t j = 0; j < n; ++j) {
    const uint32_t v = roots_.at(storage_key(results[j])).value;
    if (f.iteration_of[v] < 0 || (result_ordinal >= 0 && f.ordinal_of[v] != result_ordinal) ||
        row_of[static_cast<size_t>(f.iteration_of[v])] >= 0)
      f.fail("its stacked results are not one per iteration");
    result_ordinal = f.ordinal_of[v];
    row_of[static_cast<size_t>(f.iteration_of[v])] = static_cast<int64_t>(j);
  }
  const int64_t row_step = row_of[1] - row_of[0];
  for (size_t i = 0; i < n; ++i)
    if (row_of[i] != row_of[0] + row_step * static_cast<int64_t>(i)) f.fail("its stacked results skip rows");
  uint32_t value0 = 0;
  for (uint32_t v = 0; v < f.values_end; ++v)
    if (f.iteration_of[v] == 0 && f.ordinal_of[v] == result_ordinal) value0 = v;
  const TracedValue row = trace_.values[value0];
  std::vector<int64_t> sizes = {static_cast<int64_t>(n)};
  sizes.insert(sizes.end(), row.sizes.begin(), row.sizes.end());
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * sizes[d + 1];
  const int64_t row_numel = strides[0];
  const uint32_t buffer =
      add_value({.kind = TracedValue::Kind::CallOutput, .dtype = row.dtype, .sizes = sizes, .strides = strides});
  const std::vector<int64_t> row_strides(strides.begin() + 1, strides.end());
  const uint32_t dst = stepping_view(f, buffer, row.sizes, row_strides, row_of[0] * row_numel, row_step * row_numel);
  StackedResult s{.buffer = buffer};
  for (const Tensor& t : results) s.storages.push_back(storage_key(t));
  stacked_.push_back(std::move(s));
  return {.op = "copy_", .inputs = {dst, value0}};
}

void Tracer::loop_end(const std::vector<Tensor>& carried_final, const std::vector<std::vector<Tensor>>& stacked) {
  EMBER_CHECK(loop_, "export", "a loop ends that did not begin");
  core::TracePause pause;  // the checks below run ops of their own
  LoopFold f = classify_iterations(std::move(*loop_));
  loop_.reset();
  // The loop's state: values it owns, set before it from the state carried into iteration 0.
  std::vector<TracedCall> prologue;
  for (uint32_t init : f.open.carried[0]) {
    const TracedValue& value = trace_.values[init];
    f.carried_inputs.push_back(add_value(
        {.kind = TracedValue::Kind::CallOutput, .dtype = value.dtype, .sizes = value.sizes, .strides = value.strides}));
    prologue.push_back({.op = "copy_", .inputs = {f.carried_inputs.back(), init}});
  }
  // The body: iteration 0's calls over what their inputs are in every iteration, then the
  // copies of its per-iteration results into the rows of their buffers.
  std::vector<TracedCall> body = fold_body(f);
  std::vector<uint32_t> carried_out = carried_outputs(f, carried_final);
  for (const auto& results : stacked) body.push_back(stack_into_buffer(f, results));
  // The iterations' values leave the trace; the final state is the loop's state values.
  for (auto it = roots_.begin(); it != roots_.end();) {
    const uint32_t v = it->second.value;
    if (v < f.values_end && f.iteration_of[v] >= 0) {
      loop_locals_[it->first] = "the loop that starts at call #" + std::to_string(f.open.first_call);
      retired_.push_back(std::move(it->second.tensor));
      it = roots_.erase(it);
    } else {
      ++it;
    }
  }
  for (size_t p = 0; p < f.carried_inputs.size(); ++p) {
    loop_locals_.erase(storage_key(carried_final[p]));
    roots_[storage_key(carried_final[p])] = {f.carried_inputs[p], carried_final[p]};
  }
  trace_.calls.resize(f.open.first_call);
  for (auto& call : prologue) trace_.calls.push_back(std::move(call));
  auto loop = std::make_shared<TracedLoop>(TracedLoop{.trip_count = f.open.trip_count,
                                                      .ordinal = f.ordinal,
                                                      .body = std::move(body),
                                                      .carried_inputs = f.carried_inputs,
                                                      .carried_outputs = std::move(carried_out)});
  trace_.calls.push_back({.op = "loop", .loop = std::move(loop)});
}

void Tracer::compact() {
  const size_t n = trace_.values.size();
  std::vector<bool> used(n, false);
  std::function<void(uint32_t)> use = [&](uint32_t v) {
    if (used[v]) return;
    used[v] = true;
    if (trace_.values[v].kind == TracedValue::Kind::View) use(trace_.values[v].base);
  };
  std::function<void(const std::vector<TracedCall>&)> use_calls = [&](const std::vector<TracedCall>& calls) {
    for (const auto& c : calls) {
      for (uint32_t v : c.inputs) use(v);
      for (uint32_t v : c.outputs) use(v);
      if (!c.loop) continue;
      use_calls(c.loop->body);
      for (uint32_t v : c.loop->carried_inputs) use(v);
      for (uint32_t v : c.loop->carried_outputs) use(v);
    }
  };
  use_calls(trace_.calls);
  for (uint32_t v : trace_.outputs) use(v);
  for (uint32_t v = 0; v < n; ++v)
    if (trace_.values[v].kind == TracedValue::Kind::Input) use(v);
  std::vector<uint32_t> renumber(n, 0);
  std::vector<TracedValue> kept;
  for (uint32_t v = 0; v < n; ++v) {
    if (!used[v]) continue;
    renumber[v] = static_cast<uint32_t>(kept.size());
    kept.push_back(trace_.values[v]);
  }
  // Inline constants renamed in order of use, so the names agree between traces whose loops
  // made different numbers of them.
  std::map<std::string, Tensor> constants;
  size_t inline_constants = 0;
  for (auto& v : kept) {
    if (v.kind == TracedValue::Kind::View) v.base = renumber[v.base];
    if (v.kind != TracedValue::Kind::Constant) continue;
    Tensor data = trace_.constants.at(v.constant);
    if (v.constant.rfind("constant.", 0) == 0) v.constant = "constant." + std::to_string(inline_constants++);
    constants.emplace(v.constant, std::move(data));
  }
  trace_.constants = std::move(constants);
  std::function<void(std::vector<TracedCall>&)> apply = [&](std::vector<TracedCall>& calls) {
    for (auto& c : calls) {
      for (uint32_t& v : c.inputs) v = renumber[v];
      for (uint32_t& v : c.outputs) v = renumber[v];
      if (!c.loop) continue;
      apply(c.loop->body);
      for (uint32_t& v : c.loop->carried_inputs) v = renumber[v];
      for (uint32_t& v : c.loop->carried_outputs) v = renumber[v];
    }
  };
  apply(trace_.calls);
  for (uint32_t& v : trace_.outputs) v = renumber[v];
  trace_.values = std::move(kept);
}

Trace Tracer::finish(const std::vector<Tensor>& outputs) {
  core::set_trace_listener(nullptr);
  finished_ = true;
  for (const Tensor& t : outputs) {
    EMBER_CHECK(t.defined(), "export", "the forward returned an undefined tensor");
    trace_.outputs.push_back(value_of(t, "output"));
  }
  EMBER_CHECK(!loop_, "export", "the forward returned inside a loop");
  compact();
  return std::move(trace_);
}

}  // namespace ember::export_detail
