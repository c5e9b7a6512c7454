// Input shapes and dtypes of a profiled op.
#include "core/record_op.h"

#include <sstream>

namespace ember::core {

void describe_inputs(profiler::Event& event, const std::vector<Tensor>& inputs) {
  std::ostringstream shapes, dtypes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const char* sep = i ? ", " : "";
    shapes << sep << '[';
    if (inputs[i].defined()) {
      const auto sizes = inputs[i].sizes();
      for (size_t d = 0; d < sizes.size(); ++d) shapes << (d ? ", " : "") << sizes[d];
    }
    shapes << ']';
    dtypes << sep << (inputs[i].defined() ? dtype_name(inputs[i].scalar_type()) : "undefined");
  }
  event.input_shapes = shapes.str();
  event.input_dtypes = dtypes.str();
}

}  // namespace ember::core
