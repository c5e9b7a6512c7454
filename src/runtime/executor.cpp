// Running a method: bind the symbols from the inputs, check what depends on the caller's
// buffers, then run the Calls and Loops. Nothing here allocates: the loader sized every
// buffer, and a value's pointer, sizes and strides are computed into preallocated views
// right before the Call that uses it.
#include <cstring>

#include "runtime/program.h"

namespace ember::rt {

using program::Location;

namespace {

template <typename T>
uint32_t length(const flatbuffers::Vector<T>* vector) {
  return vector == nullptr ? 0 : vector->size();
}

bool bind_inputs(Method& m, const EmberRtTensor* inputs, size_t num_inputs, Error& error) {
  const program::Method& fm = *m.method;
  const char* name = fm.name()->c_str();
  if (num_inputs != length(fm.inputs()))
    return error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT, "[run] method '%s' takes %u inputs, got %zu", name,
                      length(fm.inputs()), num_inputs);
  for (uint32_t slot = 0; slot < num_inputs; ++slot) {
    const program::Value& v = *fm.values()->Get(fm.inputs()->Get(slot));
    const EmberRtTensor& t = inputs[slot];
    if (t.dtype != static_cast<int32_t>(v.dtype()))
      return error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT, "[run] method '%s': input %u is dtype %d, expected %s", name,
                        slot, t.dtype, dtype_name(v.dtype()));
    if (t.ndim != static_cast<int32_t>(length(v.shape())))
      return error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT, "[run] method '%s': input %u has %d dims, expected %u", name,
                        slot, t.ndim, length(v.shape()));
    for (int32_t d = 0; d < t.ndim; ++d)
      if (t.sizes[d] < 0)
        return error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT, "[run] method '%s': input %u has size %lld at dim %d",
                          name, slot, static_cast<long long>(t.sizes[d]), d);
    if (t.data == nullptr)
      return error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT, "[run] method '%s': input %u has no data", name, slot);
    m.input_data[slot] = t.data;
  }
  // Every symbol first, then every input's shape against its expressions.
  for (uint32_t s = 0; s < length(fm.symbols()); ++s) {
    const program::Symbol& symbol = *fm.symbols()->Get(s);
    int64_t value = symbol.min();
    const char* what = "a loop index";
    if (symbol.source() == program::SymbolSource::InputDim) {
      value = inputs[symbol.input()].sizes[symbol.dim()];
      what = "an input's size";
    } else if (symbol.source() == program::SymbolSource::InputValue) {
      std::memcpy(&value, inputs[symbol.input()].data, sizeof(value));
      what = "an input's value";
    }
    if (value < symbol.min() || value > symbol.max())
      return error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT,
                        "[run] method '%s': symbol '%s' (%s, input %u) is %lld, outside its bounds [%lld, %lld]", name,
                        symbol.name()->c_str(), what, symbol.input(), static_cast<long long>(value),
                        static_cast<long long>(symbol.min()), static_cast<long long>(symbol.max()));
    m.symbols[s] = value;
  }
  for (uint32_t slot = 0; slot < num_inputs; ++slot) {
    const program::Value& v = *fm.values()->Get(fm.inputs()->Get(slot));
    for (uint32_t d = 0; d < length(v.shape()); ++d) {
      const int64_t expected = evaluate(v.shape()->Get(d), m.symbols.data());
      if (inputs[slot].sizes[d] != expected)
        return error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT,
                          "[run] method '%s': input %u has size %lld at dim %u, the method's shape gives %lld", name,
                          slot, static_cast<long long>(inputs[slot].sizes[d]), d, static_cast<long long>(expected));
    }
    // The sizes are the shape's, whose element count the loader bounded at the symbols' bounds.
    m.input_numel[slot] = 1;
    for (uint32_t d = 0; d < length(v.shape()); ++d) m.input_numel[slot] *= inputs[slot].sizes[d];
  }
  return true;
}

bool bind_outputs(Method& m, EmberRtTensor* outputs, size_t num_outputs, Error& error) {
  const program::Method& fm = *m.method;
  const char* name = fm.name()->c_str();
  if (num_outputs != length(fm.outputs()))
    return error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT, "[run] method '%s' has %u outputs, got %zu", name,
                      length(fm.outputs()), num_outputs);
  for (uint32_t slot = 0; slot < num_outputs; ++slot) {
    const program::Value& v = *fm.values()->Get(fm.outputs()->Get(slot));
    EmberRtTensor& t = outputs[slot];
    t.dtype = static_cast<int32_t>(v.dtype());
    t.ndim = static_cast<int32_t>(length(v.shape()));
    m.output_numel[slot] = 1;
    for (int32_t d = 0; d < t.ndim; ++d) {
      t.sizes[d] = evaluate(v.shape()->Get(d), m.symbols.data());
      m.output_numel[slot] *= t.sizes[d];  // bounded by the loader's check of the value's extent
    }
    const uint64_t bytes = static_cast<uint64_t>(m.output_numel[slot] * element_size(v.dtype()));
    if (bytes > t.capacity_bytes || (bytes > 0 && t.data == nullptr))
      return error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT,
                        "[run] method '%s': output %u needs %llu bytes, its buffer holds %llu", name, slot,
                        static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(t.capacity_bytes));
    m.output_data[slot] = t.data;
  }
  return true;
}

// Copies src into dst element by element (same sizes, any strides).
void copy_view(const TensorView& src, const TensorView& dst) {
  const int64_t element = element_size(src.dtype);
  const int64_t numel = src.numel();
  if (numel == 0 || src.data == dst.data) return;
  int64_t index[kMaxDims] = {};
  for (int64_t n = 0; n < numel; ++n) {
    int64_t from = 0, to = 0;
    for (int d = 0; d < src.dim; ++d) {
      from += index[d] * src.strides[d];
      to += index[d] * dst.strides[d];
    }
    std::memcpy(static_cast<char*>(dst.data) + to * element, static_cast<const char*>(src.data) + from * element,
                static_cast<size_t>(element));
    for (int d = src.dim - 1; d >= 0 && ++index[d] == src.sizes[d]; --d) index[d] = 0;
  }
}

bool run_instructions(Method& m, const flatbuffers::Vector<flatbuffers::Offset<program::Instruction>>* instructions,
                      Error& error);

bool run_call(Method& m, const program::Call& call, Error& error) {
  const uint32_t num_inputs = length(call.inputs()), num_outputs = length(call.outputs());
  TensorView* views = m.operand_views.data();
  for (uint32_t k = 0; k < num_inputs; ++k)
    if (!resolve_value(m, call.inputs()->Get(k), &views[k], error)) return false;
  for (uint32_t k = 0; k < num_outputs; ++k)
    if (!resolve_value(m, call.outputs()->Get(k), &views[num_inputs + k], error)) return false;
  const Kernel& kernel = *m.program->kernels[call.op()];
  KernelCall kernel_call{kernel.name, std::span<const TensorView>(views, num_inputs),
                         std::span<const TensorView>(views + num_inputs, num_outputs), &call, m.symbols.data(),
                         m.scratch.get(), m.scratch_bytes};
  return kernel.run(kernel_call, error);
}

bool run_loop(Method& m, const program::Loop& loop, Error& error) {
  const int64_t trips = evaluate(loop.trip_count(), m.symbols.data());
  const uint32_t carried = length(loop.carried_inputs());
  for (int64_t i = 0; i < trips; ++i) {
    m.symbols[loop.index_symbol()] = i;
    if (!run_instructions(m, loop.body(), error)) return false;
    for (uint32_t c = 0; c < carried; ++c) {
      TensorView from, to;
      if (!resolve_value(m, loop.carried_outputs()->Get(c), &from, error) ||
          !resolve_value(m, loop.carried_inputs()->Get(c), &to, error))
        return false;
      for (int d = 0; d < from.dim; ++d)
        if (from.sizes[d] != to.sizes[d])
          return error.fail(EMBER_RT_ERROR_KERNEL, "[loop] carried state %u: size %lld at dim %d, the state has %lld",
                            c, static_cast<long long>(from.sizes[d]), d, static_cast<long long>(to.sizes[d]));
      copy_view(from, to);
    }
  }
  return true;
}

bool run_instructions(Method& m, const flatbuffers::Vector<flatbuffers::Offset<program::Instruction>>* instructions,
                      Error& error) {
  for (uint32_t i = 0; i < length(instructions); ++i) {
    const program::Instruction& instruction = *instructions->Get(i);
    const bool ok = instruction.instruction_type() == program::Instruction_::Call
                        ? run_call(m, *instruction.instruction_as_Call(), error)
                        : run_loop(m, *instruction.instruction_as_Loop(), error);
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool TensorView::is_contiguous() const {
  int64_t expected = 1;
  for (int d = dim - 1; d >= 0; --d) {
    if (sizes[d] != 1 && strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool resolve_value(const Method& m, uint32_t index, TensorView* view, Error& error) {
  const program::Method& fm = *m.method;
  const program::Value& v = *fm.values()->Get(index);
  const int64_t* symbols = m.symbols.data();
  view->dtype = v.dtype();
  view->dim = static_cast<int32_t>(length(v.shape()));
  for (int d = 0; d < view->dim; ++d) view->sizes[d] = evaluate(v.shape()->Get(d), symbols);
  if (v.strides() != nullptr) {
    for (int d = 0; d < view->dim; ++d) view->strides[d] = evaluate(v.strides()->Get(d), symbols);
  } else {
    int64_t stride = 1;
    for (int d = view->dim - 1; d >= 0; --d) {
      view->strides[d] = stride;
      stride *= view->sizes[d];
    }
  }
  int64_t offset = 0;
  const program::Value* root = &v;
  while (root->location() == Location::View) {
    offset += evaluate(root->view_offset(), symbols);
    root = fm.values()->Get(root->base());
  }
  const Program& program = *m.program;
  char* base = nullptr;
  switch (root->location()) {
    case Location::Arena: base = reinterpret_cast<char*>(m.arena.get()) + root->arena_offset(); break;
    case Location::Constant:
      base = const_cast<char*>(reinterpret_cast<const char*>(program.file)) +
             program.root->segments()->Get(root->segment())->offset() + root->offset();
      break;
    case Location::Input: base = static_cast<char*>(m.input_data[root->slot()]); break;
    default: base = static_cast<char*>(m.output_data[root->slot()]); break;
  }
  if (root != &v && (root->location() == Location::Input || root->location() == Location::Output)) {
    // A view into the caller's buffer: its extent is known once the sizes are bound (the
    // loader proved every other view inside its base, and this one's bytes below 2^63).
    int64_t last = offset;
    for (int d = 0; d < view->dim; ++d) last += (view->sizes[d] - 1) * view->strides[d];
    const int64_t root_numel =
        root->location() == Location::Input ? m.input_numel[root->slot()] : m.output_numel[root->slot()];
    if (view->numel() > 0 && last >= root_numel)
      return error.fail(EMBER_RT_ERROR_INVALID_ARGUMENT,
                        "[run] method '%s': view value %u reaches element %lld of %s %u, which has %lld at these sizes",
                        fm.name()->c_str(), index, static_cast<long long>(last),
                        root->location() == Location::Input ? "input" : "output", root->slot(),
                        static_cast<long long>(root_numel));
  }
  view->data = base + offset * element_size(v.dtype());
  return true;
}

bool run_method(Method& m, const EmberRtTensor* inputs, size_t num_inputs, EmberRtTensor* outputs, size_t num_outputs,
                Error& error) {
  if (!bind_inputs(m, inputs, num_inputs, error) || !bind_outputs(m, outputs, num_outputs, error)) return false;
  return run_instructions(m, m.method->instructions(), error);
}

}  // namespace ember::rt
