// The inverse frequencies of the rotary embedding for a pretrained config, with its rope
// scaling, in float64 (transformers computes them in float32; float64 rounded once is the
// exact value they approximate).
#include <cmath>
#include <numbers>

#include "ember/models/pretrained_config.h"

namespace ember::models {

std::vector<double> rope_inverse_frequencies(const PretrainedConfig& config) {
  const int64_t rotary = config.rotary_dim();
  std::vector<double> inverse(static_cast<size_t>(rotary / 2));
  for (int64_t i = 0; i < rotary / 2; ++i)
    inverse[static_cast<size_t>(i)] = std::pow(config.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(rotary));
  const RopeScaling& s = config.rope_scaling;
  if (s.type == "linear") {
    for (double& f : inverse) f /= s.factor;
  } else if (s.type == "llama3") {
    // Llama 3.1: wavelengths longer than original / low_freq_factor are stretched by factor,
    // shorter than original / high_freq_factor kept, and those between interpolated smoothly.
    const double original = static_cast<double>(s.original_max_position_embeddings);
    const double low_freq_wavelength = original / s.low_freq_factor;
    const double high_freq_wavelength = original / s.high_freq_factor;
    for (double& f : inverse) {
      const double wavelength = 2 * std::numbers::pi / f;
      if (wavelength > low_freq_wavelength) {
        f /= s.factor;
      } else if (wavelength >= high_freq_wavelength) {
        const double smooth = (original / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
  }
  return inverse;
}

}  // namespace ember::models
