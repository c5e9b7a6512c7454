// The contract between the header templates that apply user mods (nn/attention) and the
// precompiled attention kernels (cpu/attention): plain data and a function pointer, so that
// neither side includes the other (Note [Mods over tiles]).
#pragma once
#include <cstdint>

namespace ember::detail {

// Note [Mods over tiles]
// score_mod and mask_mod are user lambdas compiled with the user's flags, while the tile
// arithmetic (q·k products, exp, p·v products) runs in library kernels chosen per
// instruction set. The kernel hands the mods one score tile at a time through a plain
// function pointer; the function (a template instantiated for the user's lambda) loops
// over the tile with the lambda inlined. So there is one indirect call per tile, never per
// score. Row r of a tile is query q_start + r % rows_per_head of head h + r / rows_per_head
// (the decode path packs the query heads of a GQA group into one tile).
// The most captured-tensor elements one score may read in a backward pass (the partials an
// attention::Dual holds); reading more sets ScoreTile::overflow.
inline constexpr int kMaxScoreParams = 2;

enum class TilePass {
  Forward,     // scores <- mod(scores)
  Derivative,  // scores <- mod(scores), dscore <- d mod / d score
  ParamGrad,   // scores hold the unmodified scores; param_grads += grad * d mod / d param
};

struct ScoreTile {
  int32_t b = 0, h = 0, q_start = 0, kv_start = 0;
  int64_t rows = 0, cols = 0, rows_per_head = 1;
  bool f64 = false;  // scores, dscore and grad are double (else float)
  void* scores = nullptr;
  int64_t ld = 0;
  void* dscore = nullptr;
  const void* grad = nullptr;
  double* const* param_grads = nullptr;  // one buffer per captured tensor, in registration order
  bool* overflow = nullptr;              // set when a score reads more captured values than a Dual holds

  int32_t head(int64_t r) const { return h + static_cast<int32_t>(r / rows_per_head); }
  int32_t query(int64_t r) const { return q_start + static_cast<int32_t>(r % rows_per_head); }
};

// A type-erased tile function and the object it applies.
struct TileFunction {
  void (*fn)(const void* self, const ScoreTile& tile, TilePass pass) = nullptr;
  const void* self = nullptr;
  explicit operator bool() const { return fn != nullptr; }
  void operator()(const ScoreTile& tile, TilePass pass) const { fn(self, tile, pass); }
};

}  // namespace ember::detail
