// gelu: elementwise GELU, exact (erf) or with transformers' tanh approximation as attribute
// approximate says ("none" | "tanh"), as ember::gelu (ember's unary_op).
#include <cstring>

#include "runtime/kernels/support.h"

namespace ember::rt::kernels {
namespace {

// The attribute's form: true for "tanh"; false for "none" (or absent, ember::gelu's default).
bool read_approximate(const program::Call* call, bool* tanh) {
  const program::Attribute* a = find_attribute(call, "approximate");
  *tanh = false;
  if (a == nullptr) return true;
  if (a->kind() != program::AttributeKind::String || a->string_value() == nullptr) return false;
  const char* value = a->string_value()->c_str();
  *tanh = std::strcmp(value, "tanh") == 0;
  return *tanh || std::strcmp(value, "none") == 0;
}

bool check(const KernelSignature& s, Error& error) {
  bool tanh = false;
  if (!check_unary(s, error)) return false;
  if (!read_approximate(s.call, &tanh))
    return error.fail(EMBER_RT_ERROR_INVALID_PROGRAM, "[gelu] attribute approximate must be the String none or tanh");
  return true;
}

bool run(const KernelCall& c, Error& error) {
  bool tanh = false;
  read_approximate(c.call, &tanh);
  for (int d = 0; d < c.outputs[0].dim; ++d)
    if (c.inputs[0].sizes[d] != c.outputs[0].sizes[d]) return fail(error, "gelu", "input and output sizes differ");
  // gelu's own lookup: unary_loop would link every unary op into ember-rt.
  return run_elementwise("gelu", EMBER_KERNEL(gelu_loop)(tanh, to_ember(c.outputs[0].dtype)), {}, c.outputs[0],
                         c.inputs, error);
}

}  // namespace
}  // namespace ember::rt::kernels

EMBER_RT_KERNEL(gelu, check, run)
