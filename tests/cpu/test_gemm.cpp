// cpu::gemm and cpu::gemm_batched against a float64 triple loop, for every dtype,
// transpose combination, odd and block-crossing sizes, padded and broadcast strides.
#include <gtest/gtest.h>


#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cpu/dispatch.h"
#include "cpu/capabilities.h"
#include "cpu/gemm.h"
#include "cpu/gemm_backend.h"
#include "cpu/gemm_packed.h"
#include "cpu/parallel.h"
#include "ember/error.h"
#include "ember/parallel.h"
#include "ember/profiler.h"

namespace ember::cpu {
namespace {

// A row-major matrix stored in `dtype`, rows x cols with row stride ld (ld may be < cols
// only when it is 0: every row is the same memory).
struct Matrix {
  ScalarType dtype;
  int64_t rows, cols, ld;
  std::vector<unsigned char> bytes;

  Matrix(ScalarType dtype_, int64_t rows_, int64_t cols_, int64_t ld_)
      : dtype(dtype_), rows(rows_), cols(cols_), ld(ld_) {
    const int64_t span = rows == 0 ? 0 : (rows - 1) * ld + cols;
    bytes.resize(static_cast<size_t>(std::max<int64_t>(span, 1)) * element_size(dtype));
  }
  void* data() { return bytes.data(); }

  double get(int64_t r, int64_t c) const { return load(r * ld + c); }
  void set(int64_t r, int64_t c, double v) { store(r * ld + c, v); }
  double load(int64_t i) const {
    const unsigned char* p = bytes.data() + i * element_size(dtype);
    switch (dtype) {
      case kFloat32: { float v; std::memcpy(&v, p, 4); return v; }
      case kFloat64: { double v; std::memcpy(&v, p, 8); return v; }
      case kBFloat16: { BFloat16 v; std::memcpy(&v.bits, p, 2); return static_cast<float>(v); }
      default: { Half v; std::memcpy(&v.bits, p, 2); return static_cast<float>(v); }
    }
  }
  void store(int64_t i, double value) {
    unsigned char* p = bytes.data() + i * element_size(dtype);
    switch (dtype) {
      case kFloat32: { float v = static_cast<float>(value); std::memcpy(p, &v, 4); break; }
      case kFloat64: std::memcpy(p, &value, 8); break;
      case kBFloat16: { BFloat16 v(static_cast<float>(value)); std::memcpy(p, &v.bits, 2); break; }
      default: { Half v(static_cast<float>(value)); std::memcpy(p, &v.bits, 2); break; }
    }
  }
  void fill_random(std::mt19937& rng) {
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) set(r, c, dist(rng));
  }
  void fill(double value) {
    for (int64_t i = 0; i * static_cast<int64_t>(element_size(dtype)) < static_cast<int64_t>(bytes.size()); ++i)
      store(i, value);
  }
};

struct Case {
  ScalarType dtype;
  bool trans_a, trans_b;
  int64_t m, n, k;
  double alpha = 1.0, beta = 0.0;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0;  // extra elements per row
  bool broadcast_a = false;                 // lda = 0: every stored row of A is the same

  std::string name() const {
    std::ostringstream out;
    out << dtype << (trans_a ? " T" : " N") << (trans_b ? "T" : "N") << " m=" << m << " n=" << n << " k=" << k
        << " alpha=" << alpha << " beta=" << beta << " pads=" << pad_a << "," << pad_b << "," << pad_c
        << (broadcast_a ? " lda=0" : "");
    return out.str();
  }
};

// Relative accuracy of one float32 (or float64) multiply-add, and of the final rounding.
double accumulation_eps(ScalarType dtype) { return dtype == kFloat64 ? 0x1p-52 : 0x1p-23; }
double output_eps(ScalarType dtype) {
  switch (dtype) {
    case kBFloat16: return 0x1p-8;
    case kFloat16: return 0x1p-11;
    default: return 0.0;
  }
}

Matrix make_a(const Case& t) {
  const int64_t rows = t.trans_a ? t.k : t.m, cols = t.trans_a ? t.m : t.k;
  return Matrix(t.dtype, rows, cols, t.broadcast_a ? 0 : cols + t.pad_a);
}
Matrix make_b(const Case& t) {
  const int64_t rows = t.trans_b ? t.n : t.k, cols = t.trans_b ? t.k : t.n;
  return Matrix(t.dtype, rows, cols, cols + t.pad_b);
}

// Checks c (the result) against alpha * op(a) op(b) + beta * c0 computed in float64.
void expect_matches(const Case& t, const Matrix& a, const Matrix& b, const Matrix& c0, const Matrix& c) {
  const double acc_eps = accumulation_eps(t.dtype) * static_cast<double>(t.k + 2);
  const double out_eps = output_eps(t.dtype);
  int64_t failures = 0;
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < t.n; ++j) {
      double sum = 0.0, magnitude = 0.0;
      for (int64_t p = 0; p < t.k; ++p) {
        const double x = t.trans_a ? a.get(p, i) : a.get(i, p);
        const double y = t.trans_b ? b.get(j, p) : b.get(p, j);
        sum += x * y;
        magnitude += std::abs(x * y);
      }
      double expected = t.alpha * sum;
      magnitude *= std::abs(t.alpha);
      if (t.beta != 0.0) {
        expected += t.beta * c0.get(i, j);
        magnitude += std::abs(t.beta * c0.get(i, j));
      }
      const double got = c.get(i, j);
      const double tolerance = out_eps * std::abs(expected) + acc_eps * magnitude + 1e-30 + (out_eps > 0 ? 1e-7 : 0);
      if (!(std::abs(got - expected) <= tolerance) && failures++ < 5) {
        ADD_FAILURE() << t.name() << " at (" << i << ", " << j << "): got " << got << ", expected " << expected
                      << " (tolerance " << tolerance << ")";
      }
    }
  }
  EXPECT_EQ(failures, 0) << t.name();
}

void run_case(const Case& t, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  Matrix a = make_a(t), b = make_b(t);
  if (t.broadcast_a) {
    Matrix row(t.dtype, 1, a.cols, a.cols);
    row.fill_random(rng);
    a.bytes = row.bytes;
  } else {
    a.fill_random(rng);
  }
  b.fill_random(rng);
  Matrix c(t.dtype, t.m, t.n, t.n + t.pad_c);
  if (t.beta == 0.0) {
    c.fill(std::numeric_limits<double>::quiet_NaN());  // must not be read
  } else {
    c.fill_random(rng);
  }
  const Matrix c0 = c;
  gemm(t.dtype, t.trans_a, t.trans_b, t.m, t.n, t.k, t.alpha, a.data(), a.ld, b.data(), b.ld, t.beta, c.data(), c.ld);
  expect_matches(t, a, b, c0, c);
  // Padding between rows of C is not written.
  for (int64_t i = 0; i + 1 < t.m; ++i)
    for (int64_t j = t.n; j < c.ld; ++j) ASSERT_TRUE(c.get(i, j) == c0.get(i, j) || std::isnan(c0.get(i, j)));
}

const ScalarType kDtypes[] = {kFloat32, kFloat64, kBFloat16, kFloat16};

TEST(Gemm, OddSizesAllTransposes) {
  for_each_capability([] {
    for (ScalarType dtype : kDtypes)
      for (int trans = 0; trans < 4; ++trans)
        for (int64_t m : {1, 7, 33})
          for (int64_t n : {1, 8, 65})
            for (int64_t k : {1, 17, 64}) {
              run_case({dtype, (trans & 1) != 0, (trans & 2) != 0, m, n, k, 1.0, 0.0});
            }
  });
}

TEST(Gemm, AlphaBetaAndPaddedStrides) {
  for_each_capability([] {
    for (ScalarType dtype : kDtypes)
      for (int trans = 0; trans < 4; ++trans)
        for (double beta : {0.0, 1.0, 0.5})
          for (int64_t m : {3, 37})  // bf16/f16: few-rows and blocked paths
            run_case({dtype, (trans & 1) != 0, (trans & 2) != 0, m, 45, 29, -1.5, beta, 3, 5, 7});
  });
}

// Each backend on the products it takes, forced: every dtype whose kernel fits this CPU.
TEST(Gemm, EveryBackendMatchesFloat64) {
  const std::optional<GemmBackend> forced = forced_gemm_backend();
  for (GemmBackend backend : kGemmBackends) {
    const GemmBackendReport& report = gemm_backend_report(backend);
    SCOPED_TRACE(gemm_backend_name(backend));
    set_forced_gemm_backend(backend);
    for (ScalarType dtype : report.dtypes)
      for (int trans = 0; trans < 4; ++trans)
        for (double beta : {0.0, 0.5})
          for (int64_t m : {1, 3, 37, 130}) {
            const Case t{dtype, (trans & 1) != 0, (trans & 2) != 0, m, 45, 29, -1.5, beta, 3, 5, 7};
            const GemmArgs args{dtype,   t.trans_a, t.trans_b, m,    45,  29, -1.5, nullptr, (t.trans_a ? m : 29) + 3,
                                nullptr, (t.trans_b ? 29 : 45) + 5, beta, nullptr, 45 + 7};
            if (!gemm_can_run(backend, args)) continue;
            EXPECT_EQ(choose_gemm_backend(args), backend) << t.name();
            run_case(t);
          }
  }
  set_forced_gemm_backend(forced);
}

// OpenBLAS's bf16/f16 products tile by tile (Note [Low-precision tiles]): tiles spanning every
// column (each widens its own rows of A), tiles splitting the columns (A widened once), k in
// several spans, and more rows or columns than one block, in every layout, against float64.
// gemm_float32_out for case t (bf16/f16 operands) against float64, C float32 throughout.
void expect_float32_output_matches(const Case& t) {
  SCOPED_TRACE(t.name() + " into float32");
  std::mt19937 rng(7);
  Matrix a = make_a(t), b = make_b(t), c(kFloat32, t.m, t.n, t.n + 7);
  a.fill_random(rng);
  b.fill_random(rng);
  if (t.beta == 0.0) c.fill(std::numeric_limits<double>::quiet_NaN());  // C must not be read
  else c.fill_random(rng);
  const Matrix c0 = c;
  gemm_float32_out(t.dtype, t.trans_a, t.trans_b, t.m, t.n, t.k, t.alpha, a.data(), a.ld, b.data(), b.ld, t.beta,
                   static_cast<float*>(c.data()), c.ld);
  Case as_float32 = t;
  as_float32.dtype = kFloat32;
  expect_matches(as_float32, a, b, c0, c);
}

TEST(Gemm, OpenBLASLowPrecisionTilesMatchFloat64) {
  const std::optional<GemmBackend> forced = forced_gemm_backend();
  set_forced_gemm_backend(GemmBackend::OpenBLAS);
  for (int trans = 0; trans < 4; ++trans) {
    for (ScalarType dtype : {kBFloat16, kFloat16})
      for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{700, 90, 200}, {260, 130, 1100}, {2100, 40, 64},
                             {40, 2100, 64}})
        for (double beta : {0.0, 0.5}) {  // beta 0: C is NaN and must not be read
          const Case t{dtype, (trans & 1) != 0, (trans & 2) != 0, m, n, k, -1.5, beta, 3, 5, 7};
          run_case(t);
          expect_float32_output_matches(t);  // the sums go straight into a float32 C
        }
    // Enough work for tiles that split the rows and the columns: A widened once, before them.
    run_case({kBFloat16, (trans & 1) != 0, (trans & 2) != 0, 520, 520, 500, -1.5, 0.0, 3, 5, 7});
  }
  // Tiles of several bands of rows: k in two spans, and k in one with A widened before tiles
  // that split the columns; tiles follow the pool, so at 1 and 2 threads. (260 x 130 x 1100
  // above: a tile of one band, which widens its spans of B itself.)
  const int threads = num_threads();
  for (int count : {1, 2}) {
    set_num_threads(count);
    run_case({kBFloat16, false, false, 700, 300, 600, -1.5, 0.5, 3, 5, 7});
    run_case({kBFloat16, true, true, 700, 300, 600, -1.5, 0.0, 3, 5, 7});
    run_case({kFloat16, false, true, 300, 1200, 256, -1.5, 0.0, 3, 5, 7});
    run_case({kFloat16, true, false, 300, 1200, 256, -1.5, 0.5, 3, 5, 7});
  }
  set_num_threads(threads);
  set_forced_gemm_backend(forced);
}

// The tiles' float32 sums are kept in a buffer that reads zero between products (narrowing
// clears it): a product whose sums hold NaN and infinities, through rows of A, leaves nothing
// behind for the products after it, of other shapes, at 1 and 2 threads.
TEST(Gemm, OpenBLASLowPrecisionSumsLeaveNothingBehind) {
  const std::optional<GemmBackend> forced = forced_gemm_backend();
  set_forced_gemm_backend(GemmBackend::OpenBLAS);
  const int threads = num_threads();
  for (int count : {1, 2}) {
    set_num_threads(count);
    for (ScalarType dtype : {kBFloat16, kFloat16}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " at " + std::to_string(count) + " threads");
      std::mt19937 rng(11);
      Matrix a(dtype, 300, 64, 64), b(dtype, 64, 100, 100), c(dtype, 300, 100, 100);
      a.fill_random(rng);
      b.fill_random(rng);
      for (int64_t r = 0; r < a.rows; r += 7) a.set(r, r % a.cols, r % 2 ? std::numeric_limits<double>::infinity()
                                                                          : std::numeric_limits<double>::quiet_NaN());
      gemm(dtype, false, false, a.rows, b.cols, a.cols, 1.0, a.data(), a.ld, b.data(), b.ld, 0.0, c.data(), c.ld);
      ASSERT_TRUE(std::isnan(c.get(0, 0)));
      run_case({dtype, false, false, 290, 110, 64, 1.0, 0.0, 0, 0, 0});
      run_case({dtype, true, false, 500, 120, 300, -1.5, 0.5, 3, 5, 7});
    }
  }
  set_num_threads(threads);
  set_forced_gemm_backend(forced);
}

// The tile grid (Note [GEMM tiles]): one tile per pool thread where the shape alone would make
// more, the squarest cut; the whole product from inside a parallel region; the shape-only
// grid (halving the longer side to 6 tiles or more) in deterministic mode at any thread count.
TEST(Gemm, TilesFollowThePoolOutsideDeterministicMode) {
  const int threads = num_threads();
  auto tiles = [](int64_t m, int64_t n, int64_t k) {
    const GemmTileShape t = gemm_tile_shape(m, n, k);
    return std::pair<int64_t, int64_t>{t.rows, t.cols};
  };
  using Tiles = std::pair<int64_t, int64_t>;
  set_num_threads(1);
  EXPECT_EQ(tiles(2048, 192, 512), Tiles(2048, 192));
  set_num_threads(2);
  EXPECT_EQ(tiles(2048, 192, 512), Tiles(1024, 192));
  EXPECT_EQ(tiles(192, 2048, 512), Tiles(192, 1024));
  EXPECT_EQ(tiles(512, 192, 2048), Tiles(256, 192));
  EXPECT_EQ(tiles(300, 200, 700), Tiles(160, 200));  // shape wants 2 tiles: its own grid
  set_num_threads(3);
  EXPECT_EQ(tiles(2048, 192, 512), Tiles(688, 192));   // ceil(2048 / 3) = 683, in rows of 16
  EXPECT_EQ(tiles(1000, 1000, 1000), Tiles(336, 1000));
  std::vector<Tiles> nested(2);
  parallel_for(0, 2, 1, [&](int64_t lo, int64_t) { nested[static_cast<size_t>(lo)] = tiles(2048, 192, 512); });
  EXPECT_EQ(nested[0], Tiles(2048, 192));
  EXPECT_EQ(nested[1], Tiles(2048, 192));
  use_deterministic_algorithms(true);
  for (int count : {1, 2, 3}) {
    set_num_threads(count);
    EXPECT_EQ(tiles(2048, 192, 512), Tiles(256, 192)) << count;  // 6 wanted: 8 tiles
    EXPECT_EQ(tiles(1000, 1000, 1000), Tiles(128, 256)) << count;  // 29 wanted: 32 tiles
  }
  use_deterministic_algorithms(false);
  set_num_threads(threads);
}

// ember's few-rows bf16/f16 product on every instruction set: every row count it takes
// (passes of 4, 2 and 1 rows), k across the unrolled step (4 or 2 vectors), single vectors
// and scalar tails, B transposed (a weight read row after row) or not, padded rows.
TEST(Gemm, FewRowsMatchFloat64) {
  const std::optional<GemmBackend> forced = forced_gemm_backend();
  set_forced_gemm_backend(GemmBackend::Ember);
  for_each_capability([] {
    for (ScalarType dtype : {kBFloat16, kFloat16})
      for (bool trans_b : {false, true})
        for (int64_t m = 1; m <= (trans_b ? 8 : 4); ++m)
          for (int64_t n : {1, 9, 33})
            for (int64_t k : {1, 16, 31, 64, 100, 130, 257})
              run_case({dtype, false, trans_b, m, n, k, -1.5, 0.5, 3, 5, 7});
  });
  set_forced_gemm_backend(forced);
}

// gemm for case t (alpha 1, beta 0) at 1, 2 and 3 threads: the same bits each time.
void expect_same_bits_at_1_2_3_threads(const Case& t) {
  std::mt19937 rng(11);
  Matrix a = make_a(t), b = make_b(t);
  a.fill_random(rng);
  b.fill_random(rng);
  std::vector<Matrix> results;
  for (int count : {1, 2, 3}) {
    set_num_threads(count);
    results.emplace_back(t.dtype, t.m, t.n, t.n);
    gemm(t.dtype, t.trans_a, t.trans_b, t.m, t.n, t.k, 1.0, a.data(), a.ld, b.data(), b.ld, 0.0,
         results.back().data(), t.n);
  }
  EXPECT_EQ(results[0].bytes, results[1].bytes) << t.name();
  EXPECT_EQ(results[0].bytes, results[2].bytes) << t.name();
}

// ember's bf16/f16 products of many rows on every instruction set (the packed kernel where it
// runs, Note [Packed low-precision GEMM]): sizes that cross its strips and panels (6 rows, 16
// or 32 columns), its row and column blocks (96, 512; 4096 rows a call) and its k blocks (one
// block up to 384, else 256 each, the float32 C buffer between them), every transpose, alpha
// and beta, padded rows; float32 C; and results bitwise the same at 1, 2 and 3 threads.
TEST(Gemm, PackedLowPrecisionMatchesFloat64) {
  const std::optional<GemmBackend> forced = forced_gemm_backend();
  const int threads = num_threads();
  set_forced_gemm_backend(GemmBackend::Ember);
  struct Size { int64_t m, n, k; };
  for_each_capability([] {
    for (ScalarType dtype : {kBFloat16, kFloat16})
      for (int trans = 0; trans < 4; ++trans)
        for (Size s : {Size{9, 17, 5}, Size{13, 47, 385}, Size{101, 33, 300}, Size{97, 530, 40}, Size{7, 1, 700},
                       Size{12, 64, 512}, Size{4100, 2, 400}})
          for (double beta : {0.0, 0.5}) run_case({dtype, (trans & 1) != 0, (trans & 2) != 0, s.m, s.n, s.k, -1.5, beta, 3, 5, 7});
  });
  for_each_capability([] {
    for (ScalarType dtype : {kBFloat16, kFloat16})
      for (int trans = 0; trans < 4; ++trans)
        expect_float32_output_matches({dtype, (trans & 1) != 0, (trans & 2) != 0, 37, 45, 400, -1.5, 0.5, 3, 5, 7});
  });
  for_each_capability([] {
    for (ScalarType dtype : {kBFloat16, kFloat16}) {
      expect_same_bits_at_1_2_3_threads({dtype, false, true, 300, 200, 700, 1.0, 0.0});  // several tiles, 3 k blocks
    }
  });
  set_num_threads(threads);
  set_forced_gemm_backend(forced);
}

// The AMX level and ember's backend forced for a test's lifetime (where the CPU has AMX-BF16);
// the level, backend and thread count restored after.
struct AmxEmberBackend {
  Capability original = cpu_capability();
  std::optional<GemmBackend> forced = forced_gemm_backend();
  int threads = num_threads();
  bool available = set_cpu_capability(Capability::AMX) == Capability::AMX;
  AmxEmberBackend() { set_forced_gemm_backend(GemmBackend::Ember); }
  ~AmxEmberBackend() {
    set_num_threads(threads);
    set_forced_gemm_backend(forced);
    set_cpu_capability(original);
  }
};

// ember's bf16 products on AMX tiles (Note [AMX GEMM]), where the CPU has them: sizes that cross
// its 32 x 32 blocks (one or two row tiles, short last blocks), its kAmxMc row blocks, kAmxNc
// column packs and kAmxKc k blocks (the float32 sums kept between them), k past whole chunks of
// 32, every transpose, alpha and beta, padded rows, float32 C; B of one column pack packed in
// slices of k on several threads, rows split in tasks of 96; results bitwise the same at 1, 2
// and 3 threads.
TEST(Gemm, AmxMatchesFloat64) {
  const AmxEmberBackend amx;
  if (!amx.available) GTEST_SKIP() << "no AMX-BF16 tiles on this CPU";
  struct Size { int64_t m, n, k; };
  const Size sizes[] = {{9, 17, 5},   {16, 32, 32}, {17, 33, 64}, {33, 300, 70}, {kAmxMc + 1, kAmxNc + 3, kAmxKc + 40},
                        {192, 70, 2 * kAmxKc + 45}, {40, kAmxNc + 40, kAmxSpanK + 100}};
  for (Size s : sizes)
    for (int trans = 0; trans < 4; ++trans)
      for (double beta : {0.0, 0.5}) run_case({kBFloat16, (trans & 1) != 0, (trans & 2) != 0, s.m, s.n, s.k, -1.5, beta, 3, 5, 7});
  for (int trans = 0; trans < 4; ++trans)
    expect_float32_output_matches({kBFloat16, (trans & 1) != 0, (trans & 2) != 0, 40, 70, 100, -1.5, 0.5, 3, 5, 7});
  // A read where it lies (rows on cache lines, whole chunks of k): buffers aligned here, as
  // tensors are; rows of 16-100, one column pack or two, and the float64 sums of the stored
  // values.
  struct InPlace { int64_t k, n; };
  for (InPlace s : {InPlace{32, 70}, InPlace{96, kAmxNc + 44}, InPlace{544, 70}, InPlace{kAmxSpanK + 64, 70}}) {
    const int64_t m = 100, n = s.n, k = s.k;  // the last in two spans of k
    std::vector<uint16_t> storage(static_cast<size_t>(m * k + k * n + 64));
    uint16_t* a = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) / 2;
    uint16_t* b = a + m * k;
    std::mt19937 values(static_cast<uint32_t>(k));
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t i = 0; i < m * k + k * n; ++i) a[i] = BFloat16(dist(values)).bits;
    std::vector<uint16_t> c(static_cast<size_t>(m * n));
    gemm(kBFloat16, false, false, m, n, k, 1.0, a, k, b, n, 0.0, c.data(), n);
    int64_t wrong = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double x = BFloat16::to_float(a[i * k + p]) * double(BFloat16::to_float(b[p * n + j]));
          sum += x;
          magnitude += std::abs(x);
        }
        wrong += std::abs(BFloat16::to_float(c[i * n + j]) - sum) > 0x1p-8 * std::abs(sum) + 1e-6 * magnitude;
      }
    EXPECT_EQ(wrong, 0) << "A in place, k " << k;
  }
  expect_same_bits_at_1_2_3_threads({kBFloat16, false, true, 300, 600, 300, 1.0, 0.0});  // several tasks of C
  expect_same_bits_at_1_2_3_threads({kBFloat16, true, false, 192, 192, 4 * kAmxKc + 40, 1.0, 0.0});  // B in k slices
  expect_same_bits_at_1_2_3_threads({kBFloat16, false, false, 600, 300, kAmxSpanK + 100, 1.0, 0.0});  // k in spans
}

// float16 products on the bf16 tiles, each operand split into bf16 high and low parts (Note
// [float16 on AMX-BF16]): the sizes, transposes, alpha/beta and thread counts of the bf16
// test, k below and above kSplitThreeTermsMinK (four terms, then three), within the float32
// summation bound; with a float32 C (four terms) float32 accuracy; values that bf16 cannot hold
// come out exact; non-finite values take another path and propagate.
TEST(Gemm, AmxFloat16MatchesFloat64) {
  const AmxEmberBackend amx;
  if (!amx.available) GTEST_SKIP() << "no AMX-BF16 tiles on this CPU";
  struct Size { int64_t m, n, k; };
  const Size sizes[] = {{9, 17, 5}, {17, 33, 64}, {33, 300, 70}, {kAmxMc + 1, kAmxNc + 3, kAmxKc + 40}, {40, 50, 700}};
  for (Size s : sizes)
    for (int trans = 0; trans < 4; ++trans)
      for (double beta : {0.0, 0.5}) run_case({kFloat16, (trans & 1) != 0, (trans & 2) != 0, s.m, s.n, s.k, -1.5, beta, 3, 5, 7});
  for (int trans = 0; trans < 4; ++trans)
    for (int64_t k : {100, 300, 600})  // 600: four terms over two spans of k (amx_k_span)
      expect_float32_output_matches({kFloat16, (trans & 1) != 0, (trans & 2) != 0, 40, 70, k, -1.5, 0.5, 3, 5, 7});
  expect_same_bits_at_1_2_3_threads({kFloat16, false, true, 300, 600, 300, 1.0, 0.0});
  // 1 + 2^-10 (11 significant bits; bf16 holds 8): (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 exactly in
  // float32, and 1 + 2^-9 in float16; a bf16 operand would give 1.
  const int64_t m = 20, n = 20;
  Matrix a(kFloat16, m, 1, 1), b(kFloat16, 1, n, n), c32(kFloat32, m, n, n), c16(kFloat16, m, n, n);
  a.fill(1.0 + 0x1p-10);
  b.fill(1.0 + 0x1p-10);
  gemm_float32_out(kFloat16, false, false, m, n, 1, 1.0, a.data(), 1, b.data(), n, 0.0, static_cast<float*>(c32.data()),
                   n);
  gemm(kFloat16, false, false, m, n, 1, 1.0, a.data(), 1, b.data(), n, 0.0, c16.data(), n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_EQ(c32.get(i, j), 1.0 + 0x1p-9 + 0x1p-20) << i << ", " << j;
      ASSERT_EQ(c16.get(i, j), 1.0 + 0x1p-9) << i << ", " << j;
    }
  // An infinity in A or B, a NaN: as the float32 product of the same values.
  for (int operand = 0; operand < 2; ++operand) {
    Matrix x(kFloat16, m, 40, 40), y(kFloat16, 40, n, n), out(kFloat16, m, n, n);
    x.fill(1.0);
    y.fill(1.0);
    (operand == 0 ? x : y).set(3, 3, std::numeric_limits<double>::infinity());
    (operand == 0 ? x : y).set(5, 5, std::numeric_limits<double>::quiet_NaN());
    gemm(kFloat16, false, false, m, n, 40, 1.0, x.data(), 40, y.data(), n, 0.0, out.data(), n);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const bool nan = operand == 0 ? i == 5 : j == 5, inf = operand == 0 ? i == 3 : j == 3;
        const double got = out.get(i, j);
        if (nan) EXPECT_TRUE(std::isnan(got)) << operand << ": " << i << ", " << j;
        else EXPECT_EQ(got, inf ? std::numeric_limits<double>::infinity() : 40.0) << operand << ": " << i << ", " << j;
      }
  }
}

// Products sharing one packed B (Note [Products sharing B on AMX]): against float64, A plain
// and transposed, edges of blocks and packs, k in one span and in two (amx_k_span), rows in
// one group and in two; with
// `accumulate`, k cut at multiples of 32 into calls gives the same bits as one call.
TEST(Gemm, AmxProductsSharingPackedB) {
  const AmxEmberBackend amx;
  if (!amx.available) GTEST_SKIP() << "no AMX-BF16 tiles on this CPU";
  ASSERT_TRUE(amx_products_available());
  // k in one span, in two (amx_k_span), and in two with rows in two groups (kAmxSpanRows).
  struct Size { int64_t m, n, k; };
  for (Size size :
       {Size{70, 300, 200}, Size{70, 300, kAmxSpanK + 200}, Size{kAmxSpanRows + 70, 100, kAmxSpanK + 200}}) {
    const int64_t m = size.m, n = size.n, k = size.k;
    for (bool trans_a : {false, true}) {
      SCOPED_TRACE(testing::Message() << (trans_a ? "A transposed" : "A plain") << ", m " << m << ", k " << k);
      const Case t{kBFloat16, trans_a, false, m, n, k};
      std::mt19937 rng(9);
      Matrix a = make_a(t), b = make_b(t), zero(kFloat32, m, n, n + 3);
      a.fill_random(rng);
      b.fill_random(rng);
      zero.fill(0.0);
      std::vector<uint16_t> storage(static_cast<size_t>(amx_packed_b_size(k, n) + 32));
      uint16_t* packed = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64 / 2;
      amx_pack_b(false, k, n, b.data(), b.ld, packed);
      Matrix whole(kFloat32, m, n, n + 3);
      whole.fill(std::numeric_limits<double>::quiet_NaN());  // not read without accumulate
      amx_product_packed_b(trans_a, m, n, k, a.data(), a.ld, packed, false, static_cast<float*>(whole.data()),
                           whole.ld);
      Case as_float32 = t;
      as_float32.dtype = kFloat32;
      expect_matches(as_float32, a, b, zero, whole);
      // The same k in calls of 64, 96 and the rest, each from its own packed rows of B.
      Matrix pieces = zero;
      const auto* a_values = static_cast<const uint16_t*>(a.data());
      const auto* b_values = static_cast<const uint16_t*>(b.data());
      for (auto [p0, depth] : {std::pair<int64_t, int64_t>{0, 64}, {64, 96}, {160, k - 160}}) {
        amx_pack_b(false, depth, n, b_values + p0 * b.ld, b.ld, packed);
        amx_product_packed_b(trans_a, m, n, depth, a_values + (trans_a ? p0 * a.ld : p0), a.ld, packed, true,
                             static_cast<float*>(pieces.data()), pieces.ld);
      }
      int64_t different = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) different += pieces.get(i, j) != whole.get(i, j);
      EXPECT_EQ(different, 0);
    }
  }
}

// C stored transposed (the fused loss's logits, the weight as A): against float64, with A
// packed and read in place (rows 2 KB apart), columns past one pack and edges of blocks; the
// same bits as the product with the operands' roles swapped; nothing written past C's rows.
TEST(Gemm, AmxProductTransposedC) {
  const AmxEmberBackend amx;
  if (!amx.available) GTEST_SKIP() << "no AMX-BF16 tiles on this CPU";
  struct Shape {
    int64_t m, n, k, lda;
  };
  for (const Shape& s : {Shape{70, 300, 200, 203}, Shape{96, 40, 256, 1024}, Shape{33, 17, 64, 64},
                         Shape{40, 70, kAmxSpanK + 64, kAmxSpanK + 64}}) {
    SCOPED_TRACE(testing::Message() << s.m << "x" << s.n << "x" << s.k << " lda " << s.lda);
    std::mt19937 rng(11);
    Matrix a(kBFloat16, s.m, s.k, s.lda), b_rows(kBFloat16, s.n, s.k, s.k), zero(kFloat32, s.m, s.n, s.n);
    a.fill_random(rng);
    b_rows.fill_random(rng);  // B stored [n, k], as the fused loss's chunk of x
    zero.fill(0.0);
    auto aligned = [](std::vector<uint16_t>& storage, size_t values) {
      storage.assign(values + 32, 0);
      return storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64 / 2;
    };
    std::vector<uint16_t> a_storage, b_storage, swapped_storage;
    uint16_t* a_values = aligned(a_storage, a.bytes.size() / 2);
    std::memcpy(a_values, a.data(), a.bytes.size());
    uint16_t* packed = aligned(b_storage, static_cast<size_t>(amx_packed_b_size(s.k, s.n)));
    amx_pack_b(true, s.k, s.n, b_rows.data(), b_rows.ld, packed);
    Matrix out(kFloat32, s.n, s.m, s.m + 5);
    out.fill(std::numeric_limits<double>::quiet_NaN());
    amx_product_packed_b_transposed_c(s.m, s.n, s.k, a_values, s.lda, packed, static_cast<float*>(out.data()), out.ld);
    Matrix b(kBFloat16, s.k, s.n, s.n), c(kFloat32, s.m, s.n, s.n);
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) c.set(i, j, out.get(j, i));
    for (int64_t p = 0; p < s.k; ++p)
      for (int64_t j = 0; j < s.n; ++j) b.set(p, j, b_rows.get(j, p));
    expect_matches({kFloat32, false, false, s.m, s.n, s.k}, a, b, zero, c);
    int64_t written_past = 0;
    for (int64_t j = 0; j + 1 < s.n; ++j)
      for (int64_t i = s.m; i < out.ld; ++i) written_past += !std::isnan(out.get(j, i));
    EXPECT_EQ(written_past, 0);
    // Bᵀ Aᵀ: A packed as the B of the swapped product, B's rows its A.
    uint16_t* a_packed = aligned(swapped_storage, static_cast<size_t>(amx_packed_b_size(s.k, s.m)));
    amx_pack_b(true, s.k, s.m, a_values, s.lda, a_packed);
    Matrix swapped(kFloat32, s.n, s.m, s.m + 5);
    amx_product_packed_b(false, s.n, s.m, s.k, b_rows.data(), b_rows.ld, a_packed, false,
                         static_cast<float*>(swapped.data()), swapped.ld);
    int64_t different = 0;
    for (int64_t j = 0; j < s.n; ++j)
      for (int64_t i = 0; i < s.m; ++i) different += std::memcmp(&swapped.bytes[(j * swapped.ld + i) * 4],
                                                                  &out.bytes[(j * out.ld + i) * 4], 4) != 0;
    EXPECT_EQ(different, 0);
  }
}

// bf16/f16 operands into a float32 C on every backend that takes them: float32 accuracy,
// C never rounded to the operands' type.
TEST(Gemm, Float32OutputOfLowPrecisionOperands) {
  const std::optional<GemmBackend> forced = forced_gemm_backend();
  std::vector<std::optional<GemmBackend>> choices = {std::nullopt};
  for (GemmBackend backend : kGemmBackends) choices.push_back(backend);
  for (const std::optional<GemmBackend>& choice : choices) {
    set_forced_gemm_backend(choice);
    for (ScalarType dtype : {kBFloat16, kFloat16})
      for (int trans = 0; trans < 4; ++trans)
        for (double beta : {0.0, 0.5})
          for (int64_t m : {2, 37}) {
            const Case t{dtype, (trans & 1) != 0, (trans & 2) != 0, m, 45, 29, -1.5, beta, 3, 5, 7};
            SCOPED_TRACE(t.name() + " on " + (choice ? gemm_backend_name(*choice) : "auto"));
            std::mt19937 rng(5);
            Matrix a = make_a(t), b = make_b(t), c(kFloat32, m, 45, 45 + 7);
            a.fill_random(rng);
            b.fill_random(rng);
            if (beta == 0.0) c.fill(std::numeric_limits<double>::quiet_NaN());
            else c.fill_random(rng);
            const Matrix c0 = c;
            gemm_float32_out(dtype, t.trans_a, t.trans_b, m, 45, 29, -1.5, a.data(), a.ld, b.data(), b.ld, beta,
                             static_cast<float*>(c.data()), c.ld);
            Case as_float32 = t;
            as_float32.dtype = kFloat32;  // tolerance of float32 accumulation, no output rounding
            expect_matches(as_float32, a, b, c0, c);
          }
  }
  set_forced_gemm_backend(forced);
  float c[1] = {2.0f};
  gemm_float32_out(kBFloat16, false, false, 1, 1, 0, 1.0, nullptr, 0, nullptr, 1, 0.5, c, 1);
  EXPECT_EQ(c[0], 1.0f);  // k == 0: C = beta * C
  EXPECT_THROW(gemm_float32_out(kFloat64, false, false, 1, 1, 1, 1.0, c, 1, c, 1, 0.0, c, 1), Error);
}

TEST(Gemm, BlockCrossingSizes) {
  // The low-precision path works in 2048-wide blocks: cross each boundary alone and together.
  for (ScalarType dtype : kDtypes) {
    run_case({dtype, false, false, 3, 5, 4500, 1.0, 0.5});
    run_case({dtype, true, true, 2100, 3, 9, 1.0, 0.0});
    run_case({dtype, false, true, 5, 2051, 7, 2.0, 1.0});
    run_case({dtype, true, false, 2050, 3, 2050, 1.0, 0.0});
    run_case({dtype, false, true, 2050, 2049, 3, 1.0, 0.0});
    // The few-rows path splits columns into chunks: 1024 wide, or ~2^17 elements of B.
    run_case({dtype, false, false, 4, 2100, 30, 1.0, 0.5});
    run_case({dtype, true, true, 3, 301, 2000, 1.0, 0.0});
  }
}

TEST(Gemm, BroadcastAndSingleRowStrides) {
  for (ScalarType dtype : kDtypes) {
    // lda = 0 with several rows: BLAS rejects it, the copy path takes it.
    Case broadcast{dtype, false, false, 9, 11, 13, 1.0, 0.5};
    broadcast.broadcast_a = true;
    run_case(broadcast);
    Case broadcast_t{dtype, true, false, 9, 11, 13, 1.0, 0.0};
    broadcast_t.broadcast_a = true;
    run_case(broadcast_t);
    // One stored row: any lda is valid, even 0.
    Case single_row{dtype, false, true, 1, 19, 23, 1.0, 0.0};
    single_row.broadcast_a = true;
    run_case(single_row);
  }
}

TEST(Gemm, ZeroSizes) {
  for (ScalarType dtype : kDtypes) {
    for (double beta : {0.0, 1.0, 0.5}) {
      run_case({dtype, false, false, 6, 5, 0, 1.0, beta});  // C = beta * C
      run_case({dtype, true, true, 6, 5, 0, 1.0, beta});
      run_case({dtype, false, false, 6, 5, 4, 0.0, beta});  // alpha == 0 behaves like k == 0
    }
    // Empty outputs touch nothing, whatever the (unused) pointers.
    gemm(dtype, false, false, 0, 5, 3, 1.0, nullptr, 3, nullptr, 5, 0.0, nullptr, 5);
    gemm(dtype, false, false, 4, 0, 3, 1.0, nullptr, 3, nullptr, 0, 0.0, nullptr, 0);
    gemm_batched(dtype, false, false, 3, 0, 4, 2, 1.0, nullptr, 2, 0, nullptr, 4, 8, 0.0, nullptr, 4, 0);
  }
}

TEST(Gemm, LowPrecisionAccumulatesInFloat32) {
  // 1000 ones: bf16/f16 running sums would stall at 256 / 2048; float32 sums are exact.
  for (ScalarType dtype : {kBFloat16, kFloat16}) {
    const int64_t k = 1000;
    Matrix a(dtype, 2, k, k), b(dtype, k, 3, 3), c(dtype, 2, 3, 3);
    a.fill(1.0);
    b.fill(1.0);
    gemm(dtype, false, false, 2, 3, k, 1.0, a.data(), a.ld, b.data(), b.ld, 0.0, c.data(), c.ld);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(c.get(i, j), 1000.0) << dtype;
  }
}

TEST(Gemm, RoundsToNearestEvenOnce) {
  // 1 + 2^-8 + 2^-12 is exact in float32 and rounds up to 1 + 2^-7 in bf16, while a running
  // sum rounded to bf16 would give 1; 1 + 2^-8 alone is a tie that goes to even (1).
  // 21 columns alternate the two, so vector bodies and scalar tails both see them.
  const int64_t n = 21;
  Matrix a(kBFloat16, 1, 3, 3), b(kBFloat16, 3, n, n), c(kBFloat16, 1, n, n);
  a.set(0, 0, 1.0), a.set(0, 1, 0x1p-8), a.set(0, 2, 0x1p-12);
  for (int64_t j = 0; j < n; ++j) b.set(0, j, 1.0), b.set(1, j, 1.0), b.set(2, j, j % 2 ? 0.0 : 1.0);
  for_each_capability([&] {
    gemm(kBFloat16, false, false, 1, n, 3, 1.0, a.data(), 3, b.data(), n, 0.0, c.data(), n);
    for (int64_t j = 0; j < n; ++j) EXPECT_EQ(c.get(0, j), j % 2 ? 1.0 : 1.0 + 0x1p-7) << "column " << j;
  });
}

TEST(Gemm, NonFiniteValuesPropagate) {
  for (ScalarType dtype : {kBFloat16, kFloat16, kFloat32}) {
    for (int64_t m : {2, 12}) {  // bf16/f16: few-rows and blocked paths
      for_each_capability([&] {
        Matrix a(dtype, m, 2, 2), b(dtype, 2, 20, 20), c(dtype, m, 20, 20);
        a.fill(1.0);
        b.fill(1.0);
        a.set(0, 0, std::numeric_limits<double>::quiet_NaN());
        a.set(1, 0, std::numeric_limits<double>::infinity());
        gemm(dtype, false, false, m, 20, 2, 1.0, a.data(), 2, b.data(), 20, 0.0, c.data(), 20);
        for (int64_t j = 0; j < 20; ++j) {
          EXPECT_TRUE(std::isnan(c.get(0, j))) << dtype << " col " << j;
          EXPECT_EQ(c.get(1, j), std::numeric_limits<double>::infinity()) << dtype << " col " << j;
          if (m > 2) {
            EXPECT_EQ(c.get(m - 1, j), 2.0) << dtype << " col " << j;
          }
        }
      });
    }
  }
}

// Calls from pool threads run their tiles on the calling thread (Note [OpenBLAS threads] in
// gemm_openblas.cpp); they must stay correct while concurrent, and top-level calls afterwards too.
TEST(Gemm, CallsFromInsideParallelRegions) {
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    const Case t{dtype, false, true, 90, 70, 80, 1.0, 0.5};
    const int64_t count = 6;
    std::vector<Matrix> as, bs, cs;
    std::mt19937 rng(11);
    for (int64_t i = 0; i < count; ++i) {
      as.push_back(make_a(t));
      bs.push_back(make_b(t));
      cs.emplace_back(dtype, t.m, t.n, t.n);
      as.back().fill_random(rng);
      bs.back().fill_random(rng);
      cs.back().fill_random(rng);
    }
    std::vector<Matrix> outs = cs;
    parallel_for(0, count, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        gemm(dtype, t.trans_a, t.trans_b, t.m, t.n, t.k, t.alpha, as[i].data(), as[i].ld, bs[i].data(), bs[i].ld,
             t.beta, outs[i].data(), outs[i].ld);
    });
    for (int64_t i = 0; i < count; ++i) expect_matches(t, as[i], bs[i], cs[i], outs[i]);
    run_case({dtype, false, false, 300, 200, 100, 1.0, 0.0});
  }
}

TEST(Gemm, BadArgumentsThrow) {
  float x[4] = {};
  EXPECT_THROW(gemm(kInt64, false, false, 1, 1, 1, 1.0, x, 1, x, 1, 0.0, x, 1), Error);
  EXPECT_THROW(gemm(kFloat32, false, false, -1, 1, 1, 1.0, x, 1, x, 1, 0.0, x, 1), Error);
  EXPECT_THROW(gemm(kFloat32, false, false, 1, 1, 1, 1.0, x, -1, x, 1, 0.0, x, 1), Error);
  EXPECT_THROW(gemm(kFloat32, false, false, 2, 2, 1, 1.0, x, 1, x, 2, 0.0, x, 1), Error);  // rows of C overlap
  EXPECT_THROW(gemm_batched(kFloat32, false, false, 2, 1, 1, 1, 1.0, x, 1, 1, x, 1, 1, 0.0, x, 1, 0), Error);
  try {
    gemm(kInt32, false, false, 1, 1, 1, 1.0, x, 1, x, 1, 0.0, x, 1);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[gemm]", 0), 0u) << e.what();
  }
}

uint32_t float_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bits;
}
float bits_float(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

// The vector conversions agree bit for bit with the scalar BFloat16 / Half of ember/dtype.h
// (f16 NaNs only as NaN: F16C keeps payloads differently).
TEST(GemmKernels, WidenMatchesScalarForEveryPattern) {
  std::vector<uint16_t> patterns(65536);
  std::iota(patterns.begin(), patterns.end(), uint16_t{0});
  for_each_capability([&] {
    for (int64_t offset : {0, 3}) {  // offset 3 leaves a scalar tail
      const int64_t count = 65536 - offset;
      std::vector<float> bf16(count), f16(count);
      EMBER_KERNEL(gemm_widen_bf16)(patterns.data() + offset, count, 1, count, bf16.data(), count);
      EMBER_KERNEL(gemm_widen_f16)(patterns.data() + offset, count, 1, count, f16.data(), count);
      for (int64_t i = 0; i < count; ++i) {
        const uint16_t p = patterns[offset + i];
        ASSERT_EQ(float_bits(bf16[i]), float_bits(BFloat16::to_float(p))) << std::hex << p;
        const float expected = Half::to_float(p);
        if (std::isnan(expected)) {
          ASSERT_TRUE(std::isnan(f16[i])) << std::hex << p;
        } else {
          ASSERT_EQ(float_bits(f16[i]), float_bits(expected)) << std::hex << p;
        }
      }
    }
  });
}

TEST(GemmKernels, NarrowMatchesScalarRounding) {
  std::vector<uint32_t> bits = {
      0x00000000, 0x80000000, 0x00000001, 0x807fffff, 0x3f808000, 0x3f818000, 0x3f808001, 0x7f7fffff,
      0xff7fffff, 0x7f800000, 0xff800000, 0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fffffff, 0xffffffff,
      0x477fefff, 0x477ff000, 0x33000000, 0x33000001, 0x33c00000, 0x38800000, 0x387fffff, 0x3f800fff};
  std::mt19937 rng(5);
  while (bits.size() < 100003) bits.push_back(static_cast<uint32_t>(rng()));
  const int64_t count = static_cast<int64_t>(bits.size());
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = bits_float(bits[i]);
  for_each_capability([&] {
    std::vector<uint16_t> bf16(count), f16(count);
    EMBER_KERNEL(gemm_narrow_bf16)(values.data(), count, 1, count, 0.0f, bf16.data(), count);
    EMBER_KERNEL(gemm_narrow_f16)(values.data(), count, 1, count, 0.0f, f16.data(), count);
    // The clearing forms give the same bits and leave their source zero (a buffer kept zeroed).
    for (bool brain : {true, false}) {
      std::vector<float> source = values;
      std::vector<uint16_t> cleared(count);
      (brain ? EMBER_KERNEL(gemm_narrow_clearing_bf16) : EMBER_KERNEL(gemm_narrow_clearing_f16))(
          source.data(), count, 1, count, 0.0f, cleared.data(), count);
      ASSERT_EQ(cleared, brain ? bf16 : f16);
      ASSERT_EQ(std::count(source.begin(), source.end(), 0.0f), count);
    }
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(bf16[i], BFloat16::from_float(values[i])) << std::hex << bits[i];
      if (std::isnan(values[i])) {
        ASSERT_TRUE(std::isnan(Half::to_float(f16[i]))) << std::hex << bits[i];
      } else {
        ASSERT_EQ(f16[i], Half::from_float(values[i])) << std::hex << bits[i];
      }
    }
  });
}

TEST(GemmKernels, NarrowAddsBetaTimesOutput) {
  // beta = 0.5 keeps beta * old exact, so every instruction set must give round(src + old / 2).
  const int64_t rows = 3, cols = 37, ld_src = 40, ld_dst = 41;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> src(rows * ld_src);
  for (float& x : src) x = dist(rng);
  for (ScalarType dtype : {kBFloat16, kFloat16}) {
    std::vector<uint16_t> old(rows * ld_dst);
    for (uint16_t& x : old) x = dtype == kBFloat16 ? BFloat16::from_float(dist(rng)) : Half::from_float(dist(rng));
    for_each_capability([&] {
      std::vector<uint16_t> out = old;
      auto narrow = dtype == kBFloat16 ? EMBER_KERNEL(gemm_narrow_bf16) : EMBER_KERNEL(gemm_narrow_f16);
      narrow(src.data(), ld_src, rows, cols, 0.5f, out.data(), ld_dst);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < ld_dst; ++j) {
          const uint16_t before = old[r * ld_dst + j];
          if (j >= cols) {
            EXPECT_EQ(out[r * ld_dst + j], before);  // row padding untouched
            continue;
          }
          const float sum = src[r * ld_src + j] +
                            0.5f * (dtype == kBFloat16 ? BFloat16::to_float(before) : Half::to_float(before));
          EXPECT_EQ(out[r * ld_dst + j], dtype == kBFloat16 ? BFloat16::from_float(sum) : Half::from_float(sum))
              << dtype << " at " << r << ", " << j;
        }
      }
    });
  }
}

// ember's float32 rows product (the OpenBLAS backend's one-row products, and all its float32
// products where OpenBLAS's kernel is generic) on every instruction set: passes of 4, 2 and 1
// rows, vector bodies and scalar tails of n and k, padded rows of A, B and C, B transposed or
// not, alpha scaling, and C overwritten (a NaN there must not survive).
TEST(GemmKernels, FloatRowsMatchFloat64) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for_each_capability([&] {
    for (bool trans_b : {false, true})
      for (int64_t m : {1, 2, 3, 7})
        for (int64_t n : {1, 7, 8, 9, 33, 70})
          for (int64_t k : {1, 15, 16, 17, 100}) {
            const int64_t lda = k + 2, ldb = (trans_b ? k : n) + 3, ldc = n + 1;
            std::vector<float> a(m * lda), b((trans_b ? n : k) * ldb);
            std::vector<float> c(m * ldc, std::numeric_limits<float>::quiet_NaN());
            for (float& x : a) x = dist(rng);
            for (float& x : b) x = dist(rng);
            EMBER_KERNEL(gemm_rows_f32)(m, n, k, -1.5f, a.data(), lda, trans_b, b.data(), ldb, c.data(), ldc);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < ldc; ++j) {
                if (j == n) {
                  ASSERT_TRUE(std::isnan(c[i * ldc + j])) << "row padding written at row " << i;
                  continue;
                }
                double expected = 0.0, magnitude = 0.0;
                for (int64_t p = 0; p < k; ++p) {
                  const double term = double(a[i * lda + p]) * (trans_b ? b[j * ldb + p] : b[p * ldb + j]);
                  expected += term;
                  magnitude += std::abs(term);
                }
                ASSERT_NEAR(c[i * ldc + j], -1.5 * expected, 1.5 * magnitude * 1e-6 + 1e-30)
                    << capability_name(cpu_capability()) << " trans_b " << trans_b << " m " << m << " n " << n
                    << " k " << k << " at " << i << ", " << j;
              }
          }
  });
}

// Products sharing A (Note [Grouped products]): each member matches float64, and is bitwise
// the member's own gemm on the backend that ran it (grouped on ember's few-rows kernel or on
// OpenBLAS's low-precision tiles: its own product on that backend; one gemm each otherwise: its
// own gemm), at every row count around the few-rows limit, in bands of rows, and every level.
TEST(GemmGroup, MembersMatchFloat64AndTheirOwnProducts) {
  const std::optional<GemmBackend> forced = forced_gemm_backend();
  std::vector<std::optional<GemmBackend>> choices = {std::nullopt};
  for (GemmBackend backend : kGemmBackends) choices.push_back(backend);
  for (const std::optional<GemmBackend>& choice : choices) {
    SCOPED_TRACE(choice ? gemm_backend_name(*choice) : "auto");
    set_forced_gemm_backend(choice);
    for_each_capability([] {
      for (ScalarType dtype : {kBFloat16, kFloat16, kFloat32})
        for (int64_t m : {1, 3, 8, 9, 700})
          for (int64_t k : {16, 31, 257}) {
            // Members of unequal widths (one empty), each with its own padding.
            const int64_t widths[] = {33, 0, 9, 100, 1};
            std::mt19937 rng(static_cast<uint32_t>(m * 1000 + k));
            const Case shape{dtype, false, true, m, 1, k, 1.0, 0.0, 3, 0, 0};
            Matrix a = make_a(shape);
            a.fill_random(rng);
            std::vector<Matrix> bs, cs, own;
            std::vector<GemmGroupMember> members;
            for (int64_t i = 0; i < 5; ++i) {
              bs.emplace_back(dtype, widths[i], k, k + i);
              bs.back().fill_random(rng);
              cs.emplace_back(dtype, m, widths[i], widths[i] + 2);
              cs.back().fill(std::numeric_limits<double>::quiet_NaN());
              own.push_back(cs.back());
            }
            for (int64_t i = 0; i < 5; ++i)
              members.push_back({bs[i].data(), widths[i], bs[i].ld, cs[i].data(), cs[i].ld});
            gemm_group_nt(dtype, m, k, a.data(), a.ld, members);
            for (int64_t i = 0; i < 5; ++i) {
              Case t = shape;
              t.n = widths[i];
              SCOPED_TRACE("member " + std::to_string(i) + " " + t.name());
              expect_matches(t, a, bs[i], own[i], cs[i]);
              if (widths[i] == 0) continue;
              auto own_product = [&](std::optional<GemmBackend> backend) {
                const std::optional<GemmBackend> before = forced_gemm_backend();
                set_forced_gemm_backend(backend);
                Matrix c = own[i];
                gemm(dtype, false, true, m, widths[i], k, 1.0, a.data(), a.ld, bs[i].data(), bs[i].ld, 0.0, c.data(),
                     c.ld);
                set_forced_gemm_backend(before);
                return c;
              };
              // The group's backend: the choice for its largest member.
              const GemmBackend group_backend = choose_gemm_backend(
                  GemmArgs{dtype, false, true, m, widths[3], k, 1.0, a.data(), a.ld, bs[3].data(), bs[3].ld, 0.0,
                           cs[3].data(), cs[3].ld});
              const Matrix own_gemm = own_product(forced_gemm_backend());
              const Matrix own_on_group_backend = own_product(group_backend);
              ASSERT_TRUE(cs[i].bytes == own_gemm.bytes || cs[i].bytes == own_on_group_backend.bytes)
                  << "neither its own gemm nor its own product on " << gemm_backend_name(group_backend);
            }
          }
    });
  }
  set_forced_gemm_backend(forced);
}

// Where OpenBLAS runs the bf16/f16 products and every member's own product would cut A's rows
// alike (Note [Grouped low-precision tiles]: the GPT's query, key and value widths), the group
// runs as one product (one profiler event) and each member is bitwise its own product on
// OpenBLAS: bands of rows at one and two threads, and a second block of rows past kBlock.
TEST(GemmGroup, OpenBLASGroupIsBitwiseTheMembersOwnProducts) {
  const std::optional<GemmBackend> forced = forced_gemm_backend();
  set_forced_gemm_backend(GemmBackend::OpenBLAS);
  const int threads = num_threads();
  for (int count : {1, 2})
    for (ScalarType dtype : {kBFloat16, kFloat16})
      for (int64_t m : {1200, 2648}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " m=" + std::to_string(m) + " at " + std::to_string(count) +
                     " threads");
        set_num_threads(count);
        const int64_t k = 192, widths[] = {192, 64, 64};
        std::mt19937 rng(static_cast<uint32_t>(m + count));
        Matrix a(dtype, m, k, k + 3);
        a.fill_random(rng);
        std::vector<Matrix> bs, cs;
        std::vector<GemmGroupMember> members;
        for (int64_t n : widths) {
          bs.emplace_back(dtype, n, k, k);
          bs.back().fill_random(rng);
          cs.emplace_back(dtype, m, n, n + 1);
          cs.back().fill(std::numeric_limits<double>::quiet_NaN());
        }
        for (size_t i = 0; i < bs.size(); ++i) members.push_back({bs[i].data(), widths[i], bs[i].ld, cs[i].data(), cs[i].ld});
        profiler::ProfilerOptions options;
        options.record_shapes = true;
        profiler::Profile profile(options);
        gemm_group_nt(dtype, m, k, a.data(), a.ld, members);
        profile.stop();
        int64_t products = 0;
        for (const profiler::Event& e : profile.trace().events) products += e.name == "gemm";
        ASSERT_EQ(products, 1) << "the members ran as separate products";
        for (size_t i = 0; i < bs.size(); ++i) {
          Matrix own(dtype, m, widths[i], widths[i] + 1);
          own.fill(std::numeric_limits<double>::quiet_NaN());
          const Matrix c0 = own;
          gemm(dtype, false, true, m, widths[i], k, 1.0, a.data(), a.ld, bs[i].data(), bs[i].ld, 0.0, own.data(), own.ld);
          ASSERT_TRUE(cs[i].bytes == own.bytes) << "member " << i;
          expect_matches({dtype, false, true, m, widths[i], k, 1.0, 0.0, 3, 0, 1}, a, bs[i], c0, cs[i]);
        }
      }
  set_num_threads(threads);
  set_forced_gemm_backend(forced);
}

TEST(GemmGroup, BadMembersThrow) {
  float a[4] = {}, b[4] = {}, c[4] = {};
  const GemmGroupMember fine[] = {{b, 2, 2, c, 2}};
  EXPECT_THROW(gemm_group_nt(kInt64, 1, 2, a, 2, fine), Error);
  const GemmGroupMember overlapping[] = {{b, 2, 2, c, 1}};  // rows of C overlap
  EXPECT_THROW(gemm_group_nt(kFloat32, 2, 2, a, 2, overlapping), Error);
  const GemmGroupMember negative[] = {{b, -1, 2, c, 2}};
  EXPECT_THROW(gemm_group_nt(kFloat32, 1, 2, a, 2, negative), Error);
}

// Batches of small products run on the pool, larger ones one by one; stride 0 broadcasts.
TEST(GemmBatched, MatchesPerMatrixReference) {
  struct Shape { int64_t batch, m, n, k; };
  for (ScalarType dtype : kDtypes) {
    for (Shape s : {Shape{37, 5, 6, 7}, Shape{3, 70, 65, 66}, Shape{0, 4, 4, 4}}) {
      for (bool broadcast_b : {false, true}) {
        for (double beta : {0.0, 0.5}) {
          Case t{dtype, true, false, s.m, s.n, s.k, 0.5, beta, 1, 2, 3};
          std::mt19937 rng(3);
          std::vector<Matrix> as, bs, cs;
          for (int64_t i = 0; i < s.batch; ++i) {
            as.push_back(make_a(t));
            bs.push_back(make_b(t));
            cs.emplace_back(dtype, t.m, t.n, t.n + t.pad_c);
            as.back().fill_random(rng);
            bs.back().fill_random(rng);
            cs.back().fill_random(rng);
          }
          if (broadcast_b)
            for (int64_t i = 1; i < s.batch; ++i) bs[i] = bs[0];
          // Pack the matrices back to back, as a batched tensor would hold them.
          auto pack = [&](const std::vector<Matrix>& ms, int64_t count) {
            std::vector<unsigned char> out;
            for (int64_t i = 0; i < count; ++i) out.insert(out.end(), ms[i].bytes.begin(), ms[i].bytes.end());
            return out;
          };
          const int64_t item = static_cast<int64_t>(element_size(dtype));
          const int64_t stride_a = s.batch ? static_cast<int64_t>(as[0].bytes.size()) / item : 0;
          const int64_t stride_b = broadcast_b || !s.batch ? 0 : static_cast<int64_t>(bs[0].bytes.size()) / item;
          const int64_t stride_c = s.batch ? static_cast<int64_t>(cs[0].bytes.size()) / item : 1;
          std::vector<unsigned char> a = pack(as, s.batch), c = pack(cs, s.batch);
          std::vector<unsigned char> b = pack(bs, broadcast_b ? std::min<int64_t>(s.batch, 1) : s.batch);
          if (beta == 0.0) std::fill(c.begin(), c.end(), 0xff);  // NaN in every dtype; must not be read
          const int64_t lda = as.empty() ? 1 : as[0].ld, ldb = bs.empty() ? 1 : bs[0].ld;
          gemm_batched(dtype, t.trans_a, t.trans_b, s.batch, t.m, t.n, t.k, t.alpha, a.data(), lda, stride_a, b.data(),
                       ldb, stride_b, beta, c.data(), t.n + t.pad_c, stride_c);
          for (int64_t i = 0; i < s.batch; ++i) {
            Matrix result = cs[i];
            std::memcpy(result.bytes.data(), c.data() + i * stride_c * item, result.bytes.size());
            SCOPED_TRACE("batch index " + std::to_string(i));
            expect_matches(t, as[i], bs[i], cs[i], result);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember::cpu
