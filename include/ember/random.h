// Counter-based random numbers (Philox 4x32-10): element i of a draw depends only on the
// seed, the generator's offset and i, so results do not depend on the thread count.
#pragma once
#include <cstdint>

namespace ember {

struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;  // counter blocks consumed so far
};

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : state_{seed, 0} {}
  void manual_seed(uint64_t seed) { state_ = {seed, 0}; }
  uint64_t current_seed() const { return state_.seed; }
  GeneratorState get_state() const { return state_; }
  void set_state(const GeneratorState& state) { state_ = state; }
  // Reserves `count` counter values; returns the first offset of the reservation.
  uint64_t reserve(uint64_t count) {
    uint64_t first = state_.offset;
    state_.offset += count;
    return first;
  }

 private:
  GeneratorState state_;
};

// A uniform 64-bit value for counter `index` of the stream `seed`: the same Philox draw as
// the tensor generators, for code that needs a few reproducible numbers and no tensor
// (data order, sampling).
uint64_t random_bits(uint64_t seed, uint64_t index);

// The default generator used by rand/randn/randint/dropout.
Generator& default_generator();
void manual_seed(uint64_t seed);

}  // namespace ember
