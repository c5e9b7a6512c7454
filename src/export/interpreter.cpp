// ExportedProgram::run: executes a method's instructions through ember's own ops, each result
// copied into its place in the static memory plan's arena (so a wrong plan shows as wrong
// outputs), views made over their base's memory.
#include <functional>
#include <map>

#include "ember/autograd.h"
#include "ember/detail/op_table.h"
#include "ember/error.h"
#include "ember/export.h"
#include "ember/functions.h"
#include "ember/nn/attention/flex_attention.h"
#include "ember/nn/functional.h"
#include "ember/quantized.h"
#include "export/interpreter.h"

namespace ember {
namespace {

namespace F = nn::functional;
using export_ir::Attribute;
using export_ir::AttributeKind;
using export_ir::Call;

// A call's attributes, with Exprs evaluated at the bound symbols.
class Attributes {
 public:
  Attributes(const Call& call, const std::vector<int64_t>& symbols) : call_(call), symbols_(symbols) {}

  const Attribute* find(const std::string& name) const {
    for (const auto& a : call_.attributes)
      if (a.name == name) return &a;
    return nullptr;
  }
  int64_t integer(const std::string& name, std::optional<int64_t> fallback = std::nullopt) const {
    const Attribute* a = find(name);
    if (!a && fallback) return *fallback;
    EMBER_CHECK(a && (a->kind == AttributeKind::Int || (a->kind == AttributeKind::Exprs && a->exprs.size() == 1)),
                call_.op.c_str(), "needs the integer attribute '", name, "'");
    return a->kind == AttributeKind::Int ? a->int_value : a->exprs[0].eval(symbols_);
  }
  std::vector<int64_t> ints(const std::string& name) const {
    const Attribute* a = find(name);
    EMBER_CHECK(a && (a->kind == AttributeKind::Ints || a->kind == AttributeKind::Exprs), call_.op.c_str(),
                "needs the integer list attribute '", name, "'");
    if (a->kind == AttributeKind::Ints) return a->ints;
    std::vector<int64_t> out;
    for (const auto& e : a->exprs) out.push_back(e.eval(symbols_));
    return out;
  }
  double real(const std::string& name, std::optional<double> fallback = std::nullopt) const {
    const Attribute* a = find(name);
    if (!a && fallback) return *fallback;
    EMBER_CHECK(a && a->kind == AttributeKind::Float, call_.op.c_str(), "needs the float attribute '", name, "'");
    return a->float_value;
  }
  std::string string(const std::string& name) const {
    const Attribute* a = find(name);
    EMBER_CHECK(a && a->kind == AttributeKind::String, call_.op.c_str(), "needs the string attribute '", name, "'");
    return a->string_value;
  }

 private:
  const Call& call_;
  const std::vector<int64_t>& symbols_;
};

using Kernel = std::function<std::vector<Tensor>(const std::vector<Tensor>&, const Attributes&)>;

Tensor input_or_undefined(const std::vector<Tensor>& in, size_t i) { return i < in.size() ? in[i] : Tensor(); }

const std::map<std::string, Kernel>& kernels() {
  static const std::map<std::string, Kernel> table = [] {
    std::map<std::string, Kernel> k;
    // The op table's elementwise rows that programs may call (ember/detail/op_table.def).
#define EMBER_CALL_Unary(name) ember::name(in.at(0))
#define EMBER_CALL_UnaryInplace(name) ember::name(in.at(0))
#define EMBER_CALL_UnaryFree(name) ember::name(in.at(0))
#define EMBER_CALL_Binary(name) ember::name(in.at(0), in.at(1))
#define EMBER_CALL_BinaryInplace(name) ember::name(in.at(0), in.at(1))
#define EMBER_CALL_BinaryScalar(name) ember::name(in.at(0), in.at(1))
#define EMBER_CALL_BinaryScalarAlpha(name) ember::name(in.at(0), in.at(1), a.real("alpha", 1.0))
#define EMBER_ELEMENTWISE_ENTRY(name, program, api)                                     \
  if (detail::OpProgram::program != detail::OpProgram::NotExported)                    \
    k[#name] = [](const std::vector<Tensor>& in, [[maybe_unused]] const Attributes& a) { \
      return std::vector<Tensor>{EMBER_CALL_##api(name)};                               \
    };
#define EMBER_UNARY(name, program, Kernel, dtype, api, ...) EMBER_ELEMENTWISE_ENTRY(name, program, api)
#define EMBER_BINARY(name, program, Kernel, dtype, api, ...) EMBER_ELEMENTWISE_ENTRY(name, program, api)
#include "ember/detail/op_table.def"
    // The rows with parameters. pow's one-input form (x.pow(exponent)) shares the binary
    // row's name: one entry takes both.
    k["gelu"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      return std::vector<Tensor>{gelu(in.at(0), a.string("approximate"))};
    };
    k["clamp"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      std::optional<Scalar> low, high;
      if (a.find("min")) low = a.real("min");
      if (a.find("max")) high = a.real("max");
      return std::vector<Tensor>{clamp(in.at(0), low, high)};
    };
    k["pow"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      return std::vector<Tensor>{in.size() == 2 ? in[0].pow(in[1]) : pow(in.at(0), Scalar(a.real("exponent")))};
    };
    k["clone"] = [](const std::vector<Tensor>& in, const Attributes&) { return std::vector<Tensor>{in.at(0).clone()}; };
    k["to"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      return std::vector<Tensor>{in.at(0).to(static_cast<ScalarType>(a.integer("dtype")), false, true)};
    };
    k["copy_"] = [](const std::vector<Tensor>& in, const Attributes&) {
      in.at(0).copy_(in.at(1));
      return std::vector<Tensor>{};
    };
    k["linear"] = [](const std::vector<Tensor>& in, const Attributes&) {
      return std::vector<Tensor>{linear(in.at(0), in.at(1), input_or_undefined(in, 2))};
    };
    k["quantized_linear"] = [](const std::vector<Tensor>& in, const Attributes&) {
      const Tensor& values = in.at(1);
      const quantized::Format format = values.scalar_type() == kUInt8 ? quantized::Format::kInt4 : quantized::Format::kInt8;
      return std::vector<Tensor>{
          quantized::linear(in.at(0), quantized::quantized_weight(format, values, in.at(2)), input_or_undefined(in, 3))};
    };
    k["embedding"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      return std::vector<Tensor>{embedding(in.at(0), in.at(1), a.integer("padding_idx", -1))};
    };
    k["layer_norm"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      return std::vector<Tensor>{F::layer_norm(in.at(0), nn::LayerNormFuncOptions(a.ints("normalized_shape"))
                                                              .weight(input_or_undefined(in, 1))
                                                              .bias(input_or_undefined(in, 2))
                                                              .eps(a.real("eps")))};
    };
    k["rms_norm"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      const std::vector<int64_t> width = a.ints("normalized_shape");
      const Tensor& x = in.at(0);
      std::vector<int64_t> rows_shape = {-1};
      rows_shape.insert(rows_shape.end(), width.begin(), width.end());
      Tensor y = F::rms_norm(x.reshape(rows_shape),
                             nn::RMSNormFuncOptions(width).weight(input_or_undefined(in, 1)).eps(a.real("eps")));
      return std::vector<Tensor>{y.view(x.sizes())};
    };
    k["rotary_embedding"] = [](const std::vector<Tensor>& in, const Attributes&) {
      return std::vector<Tensor>{F::rotary_embedding(in.at(0), in.at(1), in.at(2))};
    };
    auto softmax_kernel = [&](const char* name, bool log) {
      k[name] = [log](const std::vector<Tensor>& in, const Attributes& a) {
        std::optional<ScalarType> dtype;
        if (a.find("dtype")) dtype = static_cast<ScalarType>(a.integer("dtype"));
        const int64_t dim = a.integer("dim");
        return std::vector<Tensor>{log ? log_softmax(in.at(0), dim, dtype) : softmax(in.at(0), dim, dtype)};
      };
    };
    softmax_kernel("softmax", false);
    softmax_kernel("log_softmax", true);
    k["sum"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      std::optional<ScalarType> dtype;
      if (a.find("dtype")) dtype = static_cast<ScalarType>(a.integer("dtype"));
      return std::vector<Tensor>{in.at(0).sum(a.ints("dim"), a.integer("keepdim") != 0, dtype)};
    };
    k["cat"] = [](const std::vector<Tensor>& in, const Attributes& a) { return std::vector<Tensor>{cat(in, a.integer("dim"))}; };
    k["stack"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      return std::vector<Tensor>{stack(in, a.integer("dim"))};
    };
    k["swiglu"] = [](const std::vector<Tensor>& in, const Attributes&) {
      return std::vector<Tensor>{F::swiglu(in.at(0), in.at(1))};
    };
    k["flex_attention"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      const Tensor &q = in.at(0), &key = in.at(1), &value = in.at(2);
      auto options = nn::attention::FlexAttentionOptions()
                         .set_scale(a.real("scale"))
                         .set_enable_gqa(a.integer("enable_gqa") != 0);
      std::optional<nn::attention::BlockMask> mask;
      const std::string kind = a.string("mask");
      if (kind == "causal") {
        mask = nn::attention::causal_block_mask(q.size(2), key.size(2), a.integer("q_offset"), a.integer("window"),
                                                nn::attention::BlockSize(a.integer("block_q"), a.integer("block_kv")));
      } else {
        EMBER_CHECK(kind == "none", "flex_attention", "unknown mask '", kind, "'");
      }
      return std::vector<Tensor>{nn::attention::flex_attention(q, key, value, mask, options).output};
    };
    k["conv1d"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      return std::vector<Tensor>{conv1d(in.at(0), in.at(1), input_or_undefined(in, 2), a.ints("stride"),
                                        a.ints("padding"), a.ints("dilation"), a.integer("groups"))};
    };
    k["conv2d"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      return std::vector<Tensor>{conv2d(in.at(0), in.at(1), input_or_undefined(in, 2), a.ints("stride"),
                                        a.ints("padding"), a.ints("dilation"), a.integer("groups"))};
    };
    k["conv3d"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      return std::vector<Tensor>{conv3d(in.at(0), in.at(1), input_or_undefined(in, 2), a.ints("stride"),
                                        a.ints("padding"), a.ints("dilation"), a.integer("groups"))};
    };
    using MaxPool = std::tuple<Tensor, Tensor> (*)(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef,
                                                   bool);
    auto max_pool = [&](const char* name, MaxPool fn) {
      k[name] = [fn](const std::vector<Tensor>& in, const Attributes& a) {
        auto [out, indices] = fn(in.at(0), a.ints("kernel_size"), a.ints("stride"), a.ints("padding"),
                                 a.ints("dilation"), a.integer("ceil_mode") != 0);
        return a.integer("return_indices") ? std::vector<Tensor>{out, indices} : std::vector<Tensor>{out};
      };
    };
    max_pool("max_pool1d", &max_pool1d_with_indices);
    max_pool("max_pool2d", &max_pool2d_with_indices);
    max_pool("max_pool3d", &max_pool3d_with_indices);
    k["avg_pool1d"] = [](const std::vector<Tensor>& in, const Attributes& a) {
      return std::vector<Tensor>{avg_pool1d(in.at(0), a.ints("kernel_size"), a.ints("stride"), a.ints("padding"),
                                            a.integer("ceil_mode") != 0, a.integer("count_include_pad") != 0)};
    };
    using AvgPool = Tensor (*)(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool, std::optional<int64_t>);
    auto avg_pool = [&](const char* name, AvgPool fn) {
      k[name] = [fn](const std::vector<Tensor>& in, const Attributes& a) {
        const int64_t divisor = a.integer("divisor_override");
        return std::vector<Tensor>{fn(in.at(0), a.ints("kernel_size"), a.ints("stride"), a.ints("padding"),
                                      a.integer("ceil_mode") != 0, a.integer("count_include_pad") != 0,
                                      divisor ? std::optional<int64_t>(divisor) : std::nullopt)};
      };
    };
    avg_pool("avg_pool2d", &avg_pool2d);
    avg_pool("avg_pool3d", &avg_pool3d);
    return k;
  }();
  return table;
}

}  // namespace

std::set<std::string> export_detail::interpreter_ops() {
  std::set<std::string> names;
  for (const auto& entry : kernels()) names.insert(entry.first);
  return names;
}

std::set<std::string> export_detail::program_ops() {
  std::set<std::string> names;
#define EMBER_PROGRAM_OP(name, program) \
  if (detail::OpProgram::program != detail::OpProgram::NotExported) names.insert(#name);
#define EMBER_UNARY(name, program, ...) EMBER_PROGRAM_OP(name, program)
#define EMBER_UNARY_WITH_PARAMS(name, program, ...) EMBER_PROGRAM_OP(name, program)
#define EMBER_BINARY(name, program, ...) EMBER_PROGRAM_OP(name, program)
#define EMBER_PROGRAM(name, program, ...) EMBER_PROGRAM_OP(name, program)
#include "ember/detail/op_table.def"
  return names;
}

namespace {

// The symbols' values from the inputs, checked against their bounds.
std::vector<int64_t> bind_symbols(const export_ir::Method& m, const std::vector<Tensor>& inputs) {
  std::vector<int64_t> symbols;
  for (const auto& s : m.symbols) {
    if (s.source == export_ir::SymbolSource::LoopIndex) {
      symbols.push_back(0);  // set by its loop
      continue;
    }
    const Tensor& t = inputs.at(s.input);
    int64_t v = 0;
    if (s.source == export_ir::SymbolSource::InputValue) {
      EMBER_CHECK(t.dim() == 0 && t.scalar_type() == kInt64, m.name.c_str(), "input ", s.input, " (symbol ", s.name,
                  ") must be a 0-d int64 tensor, got ", t.sizes(), " ", dtype_name(t.scalar_type()));
      v = t.item<int64_t>();
    } else {
      EMBER_CHECK(s.dim < static_cast<uint32_t>(t.dim()), m.name.c_str(), "input ", s.input, " has shape ", t.sizes(),
                  ": no dim ", s.dim, " for symbol ", s.name);
      v = t.size(s.dim);
    }
    EMBER_CHECK(v >= s.min && v <= s.max, m.name.c_str(), "symbol ", s.name, " = ", v, " (input ", s.input,
                s.source == export_ir::SymbolSource::InputValue ? "'s value" : " dim " + std::to_string(s.dim),
                ") is outside its bounds [", s.min, ", ", s.max, "]");
    symbols.push_back(v);
  }
  return symbols;
}

std::vector<int64_t> evaluate(const std::vector<export_ir::Expr>& exprs, const std::vector<int64_t>& symbols) {
  std::vector<int64_t> out;
  for (const auto& e : exprs) out.push_back(e.eval(symbols));
  return out;
}

}  // namespace

std::vector<Tensor> ExportedProgram::run(const std::vector<Tensor>& inputs, const std::string& name) const {
  const export_ir::Method& m = method(name);
  EMBER_CHECK(inputs.size() == m.inputs.size(), m.name.c_str(), "expects ", m.inputs.size(), " inputs, got ", inputs.size());
  for (const Tensor& t : inputs) EMBER_CHECK(t.defined(), m.name.c_str(), "an input is undefined");
  std::vector<int64_t> symbols = bind_symbols(m, inputs);
  NoGradGuard no_grad;
  Tensor arena = empty({static_cast<int64_t>(m.arena_bytes) + 64}, TensorOptions().dtype(kUInt8));
  std::vector<Tensor> values(m.values.size()), outputs(m.outputs.size());
  // Memory of every value but views, which are made from their base when read.
  for (size_t v = 0; v < m.values.size(); ++v) {
    const export_ir::Value& value = m.values[v];
    const std::vector<int64_t> shape = evaluate(value.shape, symbols);
    switch (value.location) {
      case export_ir::Location::Input: {
        const Tensor& t = inputs[value.slot];
        EMBER_CHECK(t.sizes() == shape && t.scalar_type() == value.dtype, m.name.c_str(), "input ", value.slot, " must be ",
                    shape, " ", dtype_name(value.dtype), ", got ", t.sizes(), " ", dtype_name(t.scalar_type()));
        values[v] = t.is_contiguous() ? t : t.contiguous();
        break;
      }
      case export_ir::Location::Constant: values[v] = program_.constants.at(value.constant).data; break;
      case export_ir::Location::Output: values[v] = empty(shape, TensorOptions().dtype(value.dtype)); break;
      case export_ir::Location::Arena:
        values[v] = from_blob(arena.data_ptr<uint8_t>() + value.arena_offset, shape, TensorOptions().dtype(value.dtype));
        break;
      case export_ir::Location::View: break;
    }
  }
  auto read = [&](uint32_t v) {
    const export_ir::Value& value = m.values[v];
    if (value.location != export_ir::Location::View) return values[v];
    const Tensor& base = values[value.base];
    return base.as_strided(evaluate(value.shape, symbols), evaluate(value.strides, symbols),
                           base.storage_offset() + value.view_offset.eval(symbols));
  };
  auto call_op = [&](const Call& call) {
    auto kernel = kernels().find(call.op);
    EMBER_CHECK(kernel != kernels().end(), m.name.c_str(), "op '", call.op, "' has no kernel in the interpreter");
    std::vector<Tensor> in;
    for (uint32_t v : call.inputs) in.push_back(read(v));
    std::vector<Tensor> results = kernel->second(in, Attributes(call, symbols));
    EMBER_CHECK(results.size() == call.outputs.size(), call.op.c_str(), "gave ", results.size(),
                " results, the program expects ", call.outputs.size());
    for (size_t i = 0; i < results.size(); ++i) {
      const Tensor& slot = values[call.outputs[i]];
      EMBER_CHECK(results[i].sizes() == slot.sizes() && results[i].scalar_type() == slot.scalar_type(), call.op.c_str(),
                  "result ", i, " is ", results[i].sizes(), " ", dtype_name(results[i].scalar_type()),
                  ", the program planned ", slot.sizes(), " ", dtype_name(slot.scalar_type()));
      slot.copy_(results[i]);
    }
  };
  std::function<void(const std::vector<export_ir::Instruction>&)> execute =
      [&](const std::vector<export_ir::Instruction>& instructions) {
        for (const export_ir::Instruction& instruction : instructions) {
          if (const auto* call = std::get_if<Call>(&instruction.op)) {
            call_op(*call);
            continue;
          }
          const export_ir::Loop& loop = std::get<export_ir::Loop>(instruction.op);
          const int64_t trips = loop.trip_count.eval(symbols);
          for (int64_t t = 0; t < trips; ++t) {
            symbols[loop.index_symbol] = t;
            execute(loop.body);
            for (size_t p = 0; p < loop.carried_inputs.size(); ++p)
              values[loop.carried_inputs[p]].copy_(read(loop.carried_outputs[p]));
          }
        }
      };
  execute(m.instructions);
  for (size_t i = 0; i < m.outputs.size(); ++i) outputs[i] = values[m.outputs[i]];
  // Inputs the program wrote (a KV cache) that were copied to be contiguous go back.
  for (size_t v = 0; v < m.values.size(); ++v)
    if (m.values[v].location == export_ir::Location::Input && !values[v].is_same(inputs[m.values[v].slot]))
      inputs[m.values[v].slot].copy_(values[v]);
  return outputs;
}

}  // namespace ember
