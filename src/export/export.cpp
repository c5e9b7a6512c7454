// ember::export_program: traces a forward at several sizes and fits one program to them.
//
// Note [Export by fitting]
// A forward is traced at its example inputs and again with each symbol moved to two more
// values inside its bounds (and, with several symbols, once with all of them moved). Every
// trace must record the same ops over the same values; every size, stride, view offset and
// integer attribute is then fitted as constant + sum(coefficient * symbol) from the first
// traces and checked against all of them. A forward whose ops or sizes follow its data or
// its sizes in any other way is refused, naming the call. The fit is exact on the traced
// points; the tests run the program against eager at further sizes inside the bounds.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "ember/autograd.h"
#include "ember/error.h"
#include "ember/export.h"
#include "ember/functions.h"
#include "export/memory_plan.h"
#include "export/tracer.h"

namespace ember {
namespace export_ir {

int64_t Expr::eval(const std::vector<int64_t>& symbols) const {
  int64_t v = constant;
  for (const Term& t : terms) v += t.coefficient * symbols.at(t.symbol);
  return v;
}

int64_t Expr::upper_bound(const std::vector<int64_t>& min, const std::vector<int64_t>& max) const {
  int64_t v = constant;
  for (const Term& t : terms) v += t.coefficient * (t.coefficient > 0 ? max.at(t.symbol) : min.at(t.symbol));
  return v;
}

std::vector<std::string> Program::operators() const {
  std::set<std::string> ops;
  std::function<void(const std::vector<Instruction>&)> collect = [&](const std::vector<Instruction>& instructions) {
    for (const Instruction& i : instructions) {
      if (const auto* call = std::get_if<Call>(&i.op)) ops.insert(call->op);
      else collect(std::get<Loop>(i.op).body);
    }
  };
  for (const Method& m : methods) collect(m.instructions);
  return {ops.begin(), ops.end()};
}

}  // namespace export_ir

const export_ir::Method& ExportedProgram::method(const std::string& name) const {
  for (const auto& m : program_.methods)
    if (m.name == name) return m;
  std::string names;
  for (const auto& m : program_.methods) names += (names.empty() ? "" : ", ") + m.name;
  EMBER_FAIL("ExportedProgram", "no method '", name, "' (the program has: ", names, ")");
}

namespace {

using export_detail::Trace;
using export_detail::TracedCall;
using export_detail::TracedLoop;
using export_detail::TracedValue;
using export_ir::Expr;

// The symbol values of each trace (Note [Export by fitting]).
struct TracePoints {
  std::vector<std::vector<int64_t>> points;
  std::vector<std::string> names;

  std::string describe(size_t k) const {
    std::ostringstream s;
    for (size_t i = 0; i < names.size(); ++i) s << (i ? ", " : "") << names[i] << "=" << points[k][i];
    return s.str();
  }
};

TracePoints choose_points(const std::vector<ExportOptions::Symbolic>& symbols, const std::vector<int64_t>& base) {
  TracePoints p;
  p.points.push_back(base);
  std::vector<int64_t> moved = base;
  for (size_t s = 0; s < symbols.size(); ++s) {
    const Dim& d = symbols[s].symbol;
    p.names.push_back(d.name);
    std::vector<int64_t> values;
    for (int64_t v : {base[s] + 1, d.max, base[s] - 1, d.min, base[s] + 2, base[s] - 2})
      if (v >= d.min && v <= d.max && v != base[s] && std::find(values.begin(), values.end(), v) == values.end())
        values.push_back(v);
    EMBER_CHECK(values.size() >= 2, "export", "symbol ", d.name, " needs at least 3 values in [", d.min, ", ",
                d.max, "] to be traced");
    for (size_t i = 0; i < 2; ++i) {
      std::vector<int64_t> point = base;
      point[s] = values[i];
      p.points.push_back(point);
    }
    moved[s] = values[1];
  }
  if (symbols.size() > 1) p.points.push_back(moved);
  return p;
}

// `sample(k)` for each trace k, as constant + sum(coefficient * symbol).
template <typename Sample>
Expr fit(const TracePoints& p, Sample sample, const std::function<std::string()>& what) {
  const size_t symbols = p.names.size();
  const int64_t n0 = sample(0);
  Expr e{.constant = n0};
  for (size_t s = 0; s < symbols; ++s) {
    const size_t k = 1 + 2 * s;
    const int64_t step = p.points[k][s] - p.points[0][s], diff = sample(k) - n0;
    bool ok = diff % step == 0;
    if (ok && diff != 0) {
      e.terms.push_back({static_cast<uint32_t>(s), diff / step});
      e.constant -= diff / step * p.points[0][s];
    }
    if (!ok) e.constant = INT64_MIN;  // fails the check below
  }
  for (size_t k = 0; k < p.points.size(); ++k) {
    if (e.constant != INT64_MIN && e.eval(p.points[k]) == sample(k)) continue;
    std::ostringstream s;
    for (size_t j = 0; j < p.points.size(); ++j) s << (j ? "; " : "") << p.describe(j) << ": " << sample(j);
    EMBER_FAIL("export", what(), " is not an affine function of the symbols (", s.str(), ")");
  }
  return e;
}

// A list of calls in every trace: the top level, or a loop's body.
using CallList = std::function<const std::vector<TracedCall>&(const Trace&)>;

const std::vector<TracedCall>& top_level(const Trace& t) { return t.calls; }

CallList body_of(CallList parent, size_t c) {
  return [parent, c](const Trace& t) -> const std::vector<TracedCall>& { return parent(t)[c].loop->body; };
}

std::string call_name(const std::vector<Trace>& traces, const CallList& calls, size_t c) {
  const bool nested = &calls(traces[0]) != &traces[0].calls;
  return std::string(nested ? "loop body " : "") + "call #" + std::to_string(c) + " '" + calls(traces[0])[c].op + "'";
}

// Every trace records the same calls over the same values (Note [Export by fitting]).
void check_same_calls(const std::vector<Trace>& traces, const TracePoints& p, const CallList& calls) {
  const auto& c0 = calls(traces[0]);
  for (size_t k = 1; k < traces.size(); ++k) {
    const auto& ck = calls(traces[k]);
    const size_t n = std::min(c0.size(), ck.size());
    for (size_t c = 0; c < n; ++c) {
      const TracedCall &a = c0[c], &b = ck[c];
      bool same = a.op == b.op && a.inputs == b.inputs && a.outputs == b.outputs &&
                  a.attributes.size() == b.attributes.size() && !a.loop == !b.loop;
      for (size_t i = 0; same && i < a.attributes.size(); ++i) {
        const auto &x = a.attributes[i], &y = b.attributes[i];
        same = x.name == y.name && x.kind == y.kind && x.float_value == y.float_value && x.floats == y.floats &&
               x.string_value == y.string_value && x.ints.size() == y.ints.size();
      }
      if (same && a.loop)
        same = a.loop->ordinal == b.loop->ordinal && a.loop->carried_inputs == b.loop->carried_inputs &&
               a.loop->carried_outputs == b.loop->carried_outputs;
      EMBER_CHECK(same, "export", "the forward records different ops at different sizes: ", call_name(traces, calls, c),
                  " at ", p.describe(0), " but '", b.op, "' at ", p.describe(k),
                  (a.op == b.op ? " (with other inputs or attributes)" : ""));
    }
    EMBER_CHECK(c0.size() == ck.size(), "export", "the forward records different ops at different sizes: ", c0.size(),
                " calls at ", p.describe(0), " but ", ck.size(), " at ", p.describe(k), " (the first extra: '",
                (c0.size() > n ? c0[n].op : ck[n].op), "')");
  }
  for (size_t c = 0; c < c0.size(); ++c)
    if (c0[c].loop) check_same_calls(traces, p, body_of(calls, c));
}

void check_same_graph(const std::vector<Trace>& traces, const TracePoints& p) {
  check_same_calls(traces, p, top_level);
  const Trace& t0 = traces[0];
  for (size_t k = 1; k < traces.size(); ++k) {
    const Trace& t = traces[k];
    EMBER_CHECK(t0.values.size() == t.values.size() && t0.outputs == t.outputs, "export",
                "the forward reads different tensors at different sizes (", p.describe(0), " and ", p.describe(k), ")");
    for (size_t v = 0; v < t0.values.size(); ++v) {
      const TracedValue &a = t0.values[v], &b = t.values[v];
      EMBER_CHECK(a.kind == b.kind && a.dtype == b.dtype && a.sizes.size() == b.sizes.size() && a.slot == b.slot &&
                      a.base == b.base && a.constant == b.constant && a.loop == b.loop,
                  "export", "value ", v, " differs in kind, dtype or rank between ", p.describe(0), " and ",
                  p.describe(k));
    }
    for (const auto& [name, tensor] : t0.constants) {
      const Tensor& other = t.constants.at(name);
      EMBER_CHECK(tensor.sizes() == other.sizes() && tensor.scalar_type() == other.scalar_type() &&
                      (tensor.is_same(other) || equal(tensor, other)),
                  "export", "the tensor '", name, "', made by a factory (zeros, arange, rand...) or captured, has ",
                  "other values or sizes at ", p.describe(k), " than at ", p.describe(0),
                  ": make it with ops from the inputs");
    }
  }
}

std::vector<Expr> fit_list(const std::vector<Trace>& traces, const TracePoints& p,
                           const std::function<const std::vector<int64_t>&(const Trace&)>& list,
                           const std::function<std::string()>& what) {
  std::vector<Expr> out;
  for (size_t d = 0; d < list(traces[0]).size(); ++d)
    out.push_back(fit(p, [&](size_t k) { return list(traces[k]).at(d); },
                      [&] { return what() + " [" + std::to_string(d) + "]"; }));
  return out;
}

bool is_static(const std::vector<Expr>& exprs) {
  return std::all_of(exprs.begin(), exprs.end(), [](const Expr& e) { return e.terms.empty(); });
}

std::vector<Tensor> resized_inputs(const std::vector<Tensor>& examples, const std::vector<ExportOptions::Symbolic>& symbols,
                                   const std::vector<int64_t>& point) {
  std::vector<Tensor> out = examples;
  for (size_t s = 0; s < symbols.size(); ++s) {
    const auto& sym = symbols[s];
    Tensor& t = out[sym.input];
    if (sym.dim < 0) {
      t = full({}, point[s], TensorOptions().dtype(kInt64));
      continue;
    }
    // Cyclic copies of the example's entries along the dim keep values valid (token ids).
    std::vector<int64_t> rows(static_cast<size_t>(point[s]));
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i) % t.size(sym.dim);
    const Tensor index = from_blob(rows.data(), {point[s]}, TensorOptions().dtype(kInt64)).clone();
    t = t.index_select(sym.dim, index).contiguous();
  }
  return out;
}

struct MethodBuilder {
  export_ir::Program& program;
  const ExportMethod& spec;
  std::vector<Trace> traces;
  TracePoints points;
  export_ir::Method method;
  std::map<uint32_t, Expr> loop_trip_counts;  // by loop ordinal
  std::map<uint32_t, uint32_t> loop_symbols;
  size_t calls_named = 0;  // call results are named op.N, N counting calls in program order

  uint32_t constant_index(const std::string& name, const Tensor& data) {
    for (size_t i = 0; i < program.constants.size(); ++i)
      if (program.constants[i].name == name) return static_cast<uint32_t>(i);
    program.constants.push_back({name, data.contiguous()});
    return static_cast<uint32_t>(program.constants.size() - 1);
  }

  std::string describe_value(size_t v) const {
    const TracedValue& value = traces[0].values[v];
    switch (value.kind) {
      case TracedValue::Kind::Input: return "input " + std::to_string(value.slot);
      case TracedValue::Kind::Constant: return "constant '" + value.constant + "'";
      case TracedValue::Kind::View: return "a view of " + describe_value(value.base);
      case TracedValue::Kind::CallOutput:
        for (size_t c = 0; c < traces[0].calls.size(); ++c)
          for (uint32_t o : traces[0].calls[c].outputs)
            if (o == v) return "the result of " + call_name(traces, top_level, c);
    }
    return "value " + std::to_string(v);
  }

  void build_symbols() {
    for (const auto& s : spec.options.symbols) {
      export_ir::Symbol sym{.name = s.symbol.name,
                            .source = s.dim < 0 ? export_ir::SymbolSource::InputValue : export_ir::SymbolSource::InputDim,
                            .input = static_cast<uint32_t>(s.input),
                            .dim = static_cast<uint32_t>(std::max<int64_t>(s.dim, 0)),
                            .min = s.symbol.min,
                            .max = s.symbol.max};
      method.symbols.push_back(sym);
    }
  }

  uint64_t max_bytes(const std::vector<Expr>& shape, ScalarType dtype) const {
    std::vector<int64_t> min, max;
    for (const auto& s : method.symbols) {
      min.push_back(s.min);
      max.push_back(s.max);
    }
    uint64_t n = element_size(dtype);
    for (const Expr& e : shape) n *= static_cast<uint64_t>(std::max<int64_t>(e.upper_bound(min, max), 0));
    return n;
  }

  void build_values() {
    const Trace& t0 = traces[0];
    for (size_t v = 0; v < t0.values.size(); ++v) {
      const TracedValue& tv = t0.values[v];
      auto what = [&] { return describe_value(v) + ": size"; };
      export_ir::Value value{.dtype = tv.dtype};
      value.shape = fit_list(traces, points, [v](const Trace& t) -> const std::vector<int64_t>& { return t.values[v].sizes; },
                             what);
      switch (tv.kind) {
        case TracedValue::Kind::Input:
          value.location = export_ir::Location::Input;
          value.slot = tv.slot;
          value.name = "input." + std::to_string(tv.slot);
          break;
        case TracedValue::Kind::Constant: {
          const bool inline_constant = tv.constant.rfind("constant.", 0) == 0;
          value.name = inline_constant ? spec.name + "." + tv.constant : tv.constant;
          EMBER_CHECK(is_static(value.shape), "export", "constant '", tv.constant, "' changes size with the symbols");
          value.location = export_ir::Location::Constant;
          value.constant = constant_index(value.name, t0.constants.at(tv.constant));
          value.max_bytes = max_bytes(value.shape, tv.dtype);
          break;
        }
        case TracedValue::Kind::CallOutput:
          value.location = export_ir::Location::Arena;
          value.max_bytes = max_bytes(value.shape, tv.dtype);
          break;
        case TracedValue::Kind::View:
          value.location = export_ir::Location::View;
          value.base = tv.base;
          value.strides = fit_list(
              traces, points, [v](const Trace& t) -> const std::vector<int64_t>& { return t.values[v].strides; },
              [&] { return describe_value(v) + ": stride"; });
          value.view_offset = fit(points, [&](size_t k) { return traces[k].values[v].offset; },
                                  [&] { return describe_value(v) + ": offset"; });
          if (tv.loop) {
            // Note [Export loops]: the offset steps with the loop's index.
            const Expr step = fit(points, [&](size_t k) { return traces[k].values[v].offset_step; },
                                  [&] { return describe_value(v) + ": offset step per iteration"; });
            EMBER_CHECK(step.terms.empty(), "export", describe_value(v),
                        ": its offset steps by a size that depends on the symbols in a loop");
            if (step.constant != 0) value.view_offset.terms.push_back({loop_symbols.at(tv.loop - 1), step.constant});
          }
          break;
      }
      if (tv.kind == TracedValue::Kind::Constant || tv.kind == TracedValue::Kind::Input) {
        // Method inputs and constants are contiguous buffers.
        const auto& strides = t0.values[v].strides;
        std::vector<int64_t> contiguous(strides.size());
        int64_t stride = 1;
        for (size_t d = strides.size(); d-- > 0;) {
          contiguous[d] = stride;
          stride *= t0.values[v].sizes[d];
        }
        EMBER_CHECK(strides == contiguous || t0.values[v].sizes.empty(), "export", describe_value(v),
                    " must be contiguous");
      }
      method.values.push_back(std::move(value));
    }
  }

  export_ir::Attribute build_attribute(const CallList& calls, size_t c, size_t a) {
    const auto& first = calls(traces[0])[c].attributes[a];
    export_ir::Attribute attr{.name = first.name};
    auto what = [&] { return call_name(traces, calls, c) + " attribute '" + first.name + "'"; };
    using Kind = core::TraceAttribute::Kind;
    switch (first.kind) {
      case Kind::Int: {
        Expr e = fit(points, [&](size_t k) { return calls(traces[k])[c].attributes[a].int_value; }, what);
        if (e.terms.empty()) {
          attr.kind = export_ir::AttributeKind::Int;
          attr.int_value = e.constant;
        } else {
          attr.kind = export_ir::AttributeKind::Exprs;
          attr.exprs = {e};
        }
        break;
      }
      case Kind::Ints: {
        auto exprs = fit_list(
            traces, points,
            [&calls, c, a](const Trace& t) -> const std::vector<int64_t>& { return calls(t)[c].attributes[a].ints; },
            what);
        if (is_static(exprs)) {
          attr.kind = export_ir::AttributeKind::Ints;
          for (const Expr& e : exprs) attr.ints.push_back(e.constant);
        } else {
          attr.kind = export_ir::AttributeKind::Exprs;
          attr.exprs = std::move(exprs);
        }
        break;
      }
      case Kind::Float:
        attr.kind = export_ir::AttributeKind::Float;
        attr.float_value = first.float_value;
        break;
      case Kind::Floats:
        attr.kind = export_ir::AttributeKind::Floats;
        attr.floats = first.floats;
        break;
      case Kind::String:
        attr.kind = export_ir::AttributeKind::String;
        attr.string_value = first.string_value;
        break;
    }
    return attr;
  }

  std::vector<export_ir::Instruction> build_instructions(const CallList& calls) {
    std::vector<export_ir::Instruction> out;
    const auto& c0 = calls(traces[0]);
    for (size_t c = 0; c < c0.size(); ++c) {
      if (c0[c].loop) {
        const TracedLoop& loop = *c0[c].loop;
        out.push_back({export_ir::Loop{.trip_count = loop_trip_counts.at(loop.ordinal),
                                       .index_symbol = loop_symbols.at(loop.ordinal),
                                       .body = build_instructions(body_of(calls, c)),
                                       .carried_inputs = loop.carried_inputs,
                                       .carried_outputs = loop.carried_outputs}});
        continue;
      }
      export_ir::Call call{.op = c0[c].op, .inputs = c0[c].inputs, .outputs = c0[c].outputs};
      for (size_t a = 0; a < c0[c].attributes.size(); ++a) call.attributes.push_back(build_attribute(calls, c, a));
      for (uint32_t o : call.outputs) method.values[o].name = call.op + "." + std::to_string(calls_named++);
      out.push_back({std::move(call)});
    }
    return out;
  }

  // A LoopIndex symbol per loop, bounded by the loop's trip count.
  void build_loop_symbols() {
    const auto& c0 = traces[0].calls;
    for (size_t c = 0; c < c0.size(); ++c) {
      if (!c0[c].loop) continue;
      Expr trip = fit(points, [&](size_t k) { return traces[k].calls[c].loop->trip_count; },
                      [&] { return call_name(traces, top_level, c) + " trip count"; });
      std::vector<int64_t> min, max;
      for (const auto& s : method.symbols) {
        min.push_back(s.min);
        max.push_back(s.max);
      }
      const uint32_t ordinal = c0[c].loop->ordinal;
      loop_trip_counts[ordinal] = trip;
      loop_symbols[ordinal] = static_cast<uint32_t>(method.symbols.size());
      method.symbols.push_back({.name = "step" + std::to_string(ordinal),
                                .source = export_ir::SymbolSource::LoopIndex,
                                .min = 0,
                                .max = trip.upper_bound(min, max) - 1});
    }
  }

  void build_inputs_outputs() {
    for (size_t i = 0; i < spec.example_inputs.size(); ++i)
      for (size_t v = 0; v < method.values.size(); ++v)
        if (method.values[v].location == export_ir::Location::Input && method.values[v].slot == i)
          method.inputs.push_back(static_cast<uint32_t>(v));
    EMBER_CHECK(method.inputs.size() == spec.example_inputs.size(), "export", "method ", spec.name,
                ": every input must be a distinct tensor");
    for (uint32_t o : traces[0].outputs) {
      const uint32_t slot = static_cast<uint32_t>(method.outputs.size());
      export_ir::Value& value = method.values[o];
      if (value.location == export_ir::Location::Arena) {
        value.location = export_ir::Location::Output;
        value.slot = slot;
        value.max_bytes = 0;
        method.outputs.push_back(o);
        continue;
      }
      // An input, constant, view or repeated result: the program copies it into the output.
      export_ir::Value copy{.name = "output." + std::to_string(slot),
                            .dtype = value.dtype,
                            .shape = value.shape,
                            .location = export_ir::Location::Output,
                            .slot = slot};
      method.values.push_back(std::move(copy));
      const uint32_t id = static_cast<uint32_t>(method.values.size() - 1);
      method.instructions.push_back({export_ir::Call{.op = "clone", .inputs = {o}, .outputs = {id}}});
      method.outputs.push_back(id);
    }
  }
};

export_ir::Method export_method(export_ir::Program& program, const nn::Module& module, const ExportMethod& spec,
                                const NamedConstants& constants) {
  EMBER_CHECK(static_cast<bool>(spec.forward), "export", "method ", spec.name, " has no forward");
  std::vector<Tensor> examples;
  for (const Tensor& t : spec.example_inputs) {
    EMBER_CHECK(t.defined(), "export", "method ", spec.name, ": an example input is undefined");
    examples.push_back(t.detach().contiguous());
  }
  std::vector<bool> symbolic_value(examples.size(), false);
  std::vector<int64_t> base;
  for (const auto& s : spec.options.symbols) {
    EMBER_CHECK(s.input < examples.size(), "export", "symbol ", s.symbol.name, " names input ", s.input, " of ",
                examples.size());
    const Tensor& t = examples[s.input];
    EMBER_CHECK(s.symbol.min <= s.symbol.max && s.symbol.min >= 0, "export", "symbol ", s.symbol.name,
                " has bounds [", s.symbol.min, ", ", s.symbol.max, "]");
    if (s.dim < 0) {
      EMBER_CHECK(t.dim() == 0 && t.scalar_type() == kInt64, "export", "symbolic value ", s.symbol.name,
                  " needs a 0-d int64 input, got ", t.sizes(), " ", dtype_name(t.scalar_type()));
      symbolic_value[s.input] = true;
      base.push_back(t.item<int64_t>());
    } else {
      EMBER_CHECK(s.dim < t.dim(), "export", "dynamic dim ", s.symbol.name, " names dim ", s.dim, " of input ",
                  s.input, " with shape ", t.sizes());
      base.push_back(t.size(s.dim));
    }
    EMBER_CHECK(base.back() >= s.symbol.min && base.back() <= s.symbol.max, "export", "the example's ",
                s.symbol.name, " = ", base.back(), " is outside [", s.symbol.min, ", ", s.symbol.max, "]");
  }
  MethodBuilder builder{program, spec};
  builder.points = choose_points(spec.options.symbols, base);
  NoGradGuard no_grad;
  for (const auto& point : builder.points.points) {
    std::vector<Tensor> inputs = resized_inputs(examples, spec.options.symbols, point);
    export_detail::Tracer tracer(module, inputs, symbolic_value, constants);
    std::vector<Tensor> outputs = spec.forward(inputs);
    builder.traces.push_back(tracer.finish(outputs));
  }
  check_same_graph(builder.traces, builder.points);
  builder.method.name = spec.name;
  builder.build_symbols();
  builder.build_loop_symbols();
  builder.build_values();
  builder.method.instructions = builder.build_instructions(top_level);
  builder.build_inputs_outputs();
  export_detail::plan_memory(builder.method);
  return std::move(builder.method);
}

}  // namespace

ExportedProgram export_program(const nn::Module& module, std::vector<ExportMethod> methods,
                               const NamedConstants& constants) {
  EMBER_CHECK(!methods.empty(), "export", "no methods to export");
  export_ir::Program program;
  for (const ExportMethod& spec : methods) {
    for (const auto& m : program.methods)
      EMBER_CHECK(m.name != spec.name, "export", "two methods are named '", spec.name, "'");
    program.methods.push_back(export_method(program, module, spec, constants));
  }
  return ExportedProgram(std::move(program));
}

ExportedProgram export_program(const nn::Module& module, const ExportFunction& forward,
                               std::vector<Tensor> example_inputs, const ExportOptions& options) {
  return export_program(module, {{"forward", forward, std::move(example_inputs), options}});
}

}  // namespace ember
