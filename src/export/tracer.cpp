// The trace listener of ember::export_program (Note [Export trace] in src/core/trace.h).
#include "export/tracer.h"

#include <sstream>

#include "ember/error.h"

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
               const std::vector<bool>& symbolic_value_inputs)
    : symbolic_value_(symbolic_value_inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].defined(), "export", "example input ", i, " is undefined");
    EMBER_CHECK(!roots_.count(storage_key(inputs[i])), "export", "example input ", i,
                " shares its memory with an earlier input or a parameter");
    add_root(inputs[i], {.kind = TracedValue::Kind::Input, .slot = static_cast<uint32_t>(i)});
  }
  auto add_constants = [&](const OrderedDict<std::string, Tensor>& named) {
    for (const auto& item : named) {
      const Tensor& t = item.value();
      if (!t.defined() || roots_.count(storage_key(t))) continue;  // tied: its first name
      trace_.constants.emplace(item.key(), t);
      add_root(t, {.kind = TracedValue::Kind::Constant, .constant = item.key()});
    }
  };
  add_constants(module.named_parameters());
  add_constants(module.named_buffers());
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
    auto made = unsupported_.find(storage_key(t));
    EMBER_CHECK(made == unsupported_.end(), "export", "op '", reader, "' (", place(), ") reads a tensor ",
                shape_string(t), " made by op '", made->second.op, "' (after call #", made->second.after_call,
                "), which has no export support");
    // Made outside any op (a factory such as zeros, or a Python-like scalar operand): its
    // value is baked in; export_program checks it is the same at every traced size.
    const std::string name = "constant." + std::to_string(inline_constants_++);
    trace_.constants.emplace(name, t.contiguous().clone());
    add_root(t, {.kind = TracedValue::Kind::Constant, .constant = name});
    return roots_[storage_key(t)].value;
  }
  const TracedValue& base = trace_.values[root->second.value];
  const int64_t offset = t.storage_offset() - base.offset;
  // The root's own tensor only: a view with the root's geometry at one size (a narrow to
  // the full length) stays a view, so every traced size records the same values.
  if (t.is_same(root->second.tensor)) return root->second.value;
  EMBER_CHECK(t.scalar_type() == base.dtype, "export", "op '", reader, "' (", place(),
              ") reads a tensor that reinterprets the memory of another as ", dtype_name(t.scalar_type()));
  auto key = std::make_tuple(root->second.value, t.sizes(), t.strides(), offset);
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
    source = made != unsupported_.end() ? "the result of op '" + made->second.op + "'" : "a tensor made outside any op";
  } else if (trace_.values[root->second.value].kind == TracedValue::Kind::CallOutput) {
    for (const auto& call : trace_.calls)
      for (uint32_t out : call.outputs)
        if (out == root->second.value) source = "the result of op '" + call.op + "'";
  }
  EMBER_FAIL("export", "item() at ", place(), " reads ", source,
             ": the recorded graph would depend on the data (control flow or a size computed from values); "
             "declare an int64 input with ExportOptions::symbolic_value instead");
}

Trace Tracer::finish(const std::vector<Tensor>& outputs) {
  core::set_trace_listener(nullptr);
  finished_ = true;
  for (const Tensor& t : outputs) {
    EMBER_CHECK(t.defined(), "export", "the forward returned an undefined tensor");
    trace_.outputs.push_back(value_of(t, "output"));
  }
  return std::move(trace_);
}

}  // namespace ember::export_detail
