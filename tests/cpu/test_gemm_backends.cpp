// The GEMM backend choice: the autotune table (persisted, corrupt or foreign files ignored
// with a warning, the same table giving the same choice), determinism across thread counts
// for every backend, and OpenBLAS's generic kernel kept out of "auto".
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "cpu/cpu_info.h"
#include "cpu/gemm.h"
#include "cpu/gemm_backend.h"
#include "cpu/parallel.h"
#include "ember/backends.h"
#include "ember/error.h"
#include "ember/parallel.h"

namespace ember::cpu {
namespace {

// Points the table at a fresh directory for the test's lifetime.
class AutotuneTable : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("XDG_CACHE_HOME");
    saved_ = old ? std::optional<std::string>(old) : std::nullopt;
    dir_ = std::filesystem::temp_directory_path() /
           ("ember-autotune-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
    forced_ = forced_gemm_backend();
    set_forced_gemm_backend(std::nullopt);
    reload_autotune_table();
  }
  void TearDown() override {
    if (saved_) setenv("XDG_CACHE_HOME", saved_->c_str(), 1);
    else unsetenv("XDG_CACHE_HOME");
    set_forced_gemm_backend(forced_);  // as EMBER_GEMM_BACKEND set it for this run
    reload_autotune_table();
    std::filesystem::remove_all(dir_);
  }
  static void write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
  }
  static std::string read(const std::string& path) {
    std::stringstream text;
    text << std::ifstream(path).rdbuf();
    return text.str();
  }
  // A float32 product with more than one eligible backend, or nullopt on CPUs with one.
  static bool has_two_candidates(const GemmArgs& args) {
    int count = 0;
    for (GemmBackend backend : kGemmBackends)
      count += gemm_backend_report(backend).fits_cpu && gemm_can_run(backend, args);
    return count >= 2;
  }

  std::filesystem::path dir_;
  std::optional<std::string> saved_;
  std::optional<GemmBackend> forced_;
};

struct Product {
  int64_t m, n, k;
  std::vector<float> a, b, c;
  Product(int64_t m_, int64_t n_, int64_t k_) : m(m_), n(n_), k(k_), a(m * k), b(k * n), c(m * n) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
  }
  GemmArgs args() { return {kFloat32, false, false, m, n, k, 1.0, a.data(), k, b.data(), n, 0.0, c.data(), n}; }
  void run() { gemm(kFloat32, false, false, m, n, k, 1.0, a.data(), k, b.data(), n, 0.0, c.data(), n); }
};

TEST_F(AutotuneTable, TunedChoiceIsPersistedAndReused) {
  Product p(256, 192, 160);
  if (!has_two_candidates(p.args())) GTEST_SKIP() << "one backend runs float32 here: nothing to tune";
  p.run();
  const std::string path = autotune_table_path();
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  EXPECT_NE(path.find(dir_.string() + "/ember/autotune-"), std::string::npos) << path;
  const nlohmann::json doc = nlohmann::json::parse(read(path));
  ASSERT_EQ(doc["entries"].size(), 1u) << doc.dump();
  const std::string key = doc["entries"].begin().key();
  EXPECT_EQ(key.substr(0, 16), "f32 NN 256x192x1") << key;  // 160 -> bucket 192
  EXPECT_GE(doc["entries"][key]["gflops"].size(), 2u);
  // Another process (here: a reload) takes the stored choice without tuning again.
  reload_autotune_table();
  const std::vector<AutotuneEntry> entries = autotune_entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(choose_gemm_backend(p.args()), entries[0].backend);
}

TEST_F(AutotuneTable, SameTableGivesSameChoice) {
  Product p(256, 192, 160);
  if (!has_two_candidates(p.args())) GTEST_SKIP() << "one backend runs float32 here: nothing to tune";
  p.run();
  const std::string path = autotune_table_path();
  nlohmann::json doc = nlohmann::json::parse(read(path));
  const std::string key = doc["entries"].begin().key();
  for (GemmBackend wanted : {GemmBackend::OpenBLAS, GemmBackend::OneDNN}) {
    if (!gemm_backend_report(wanted).fits_cpu) continue;
    doc["entries"][key]["backend"] = gemm_backend_name(wanted);
    write(path, doc.dump());
    reload_autotune_table();
    for (int repeat = 0; repeat < 3; ++repeat) EXPECT_EQ(choose_gemm_backend(p.args()), wanted);
  }
}

TEST_F(AutotuneTable, CorruptFileIsIgnoredWithAWarning) {
  const std::string path = autotune_table_path();
  for (const std::string& bad : {std::string("{\"format\": \"ember-gemm-autotune\", \"entr"), std::string("[1, 2]"),
                                 std::string("\x00\x01garbage", 9)}) {
    write(path, bad);
    reload_autotune_table();
    ::testing::internal::CaptureStderr();
    EXPECT_TRUE(autotune_entries().empty());
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("ignoring the GEMM autotune table " + path), std::string::npos) << err;
  }
  // A product still runs, correctly, and the next tuning rewrites the file whole.
  Product p(64, 48, 40);
  p.run();
  double expected = 0;
  for (int64_t q = 0; q < p.k; ++q) expected += double(p.a[q]) * p.b[q * p.n];
  EXPECT_NEAR(p.c[0], expected, 1e-4);
  if (has_two_candidates(p.args())) {
    EXPECT_NO_THROW(nlohmann::json::parse(read(path)));
  }
}

TEST_F(AutotuneTable, ForeignFileIsIgnoredWithAWarning) {
  Product p(256, 192, 160);
  if (!has_two_candidates(p.args())) GTEST_SKIP() << "one backend runs float32 here: nothing to tune";
  p.run();
  const std::string path = autotune_table_path();
  for (const char* field : {"cpu", "libraries"}) {
    nlohmann::json doc = nlohmann::json::parse(read(path));
    doc[field] = "something else";
    write(path, doc.dump());
    reload_autotune_table();
    ::testing::internal::CaptureStderr();
    EXPECT_TRUE(autotune_entries().empty()) << field;
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("written for another CPU or other library versions"), std::string::npos) << err;
    p.run();  // tunes again and rewrites the file for this CPU
  }
  // An entry naming an unknown backend makes the whole file untrusted.
  nlohmann::json doc = nlohmann::json::parse(read(path));
  doc["entries"][doc["entries"].begin().key()]["backend"] = "cublas";
  write(path, doc.dump());
  reload_autotune_table();
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(autotune_entries().empty());
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("unknown backend"), std::string::npos);
}

TEST_F(AutotuneTable, DeterministicModeGivesBitwiseSameResultsForAnyThreadCount) {
  const int threads = num_threads();
  use_deterministic_algorithms(true);
  for (ScalarType dtype : {kFloat32, kBFloat16}) {
    for (int64_t m : {3, 1000}) {  // few rows (ember's kernel), and several tiles (Note [GEMM tiles])
      const int64_t n = 700, k = 300;
      std::vector<uint16_t> a16(m * k), b16(k * n);
      Product p(m, n, k);
      for (size_t i = 0; i < a16.size(); ++i) a16[i] = static_cast<uint16_t>(0x3c00 + (i * 7919) % 0x3ff);
      for (size_t i = 0; i < b16.size(); ++i) b16[i] = static_cast<uint16_t>(0xbc00 + (i * 104729) % 0x3ff);
      const void* a = dtype == kFloat32 ? static_cast<const void*>(p.a.data()) : a16.data();
      const void* b = dtype == kFloat32 ? static_cast<const void*>(p.b.data()) : b16.data();
      std::vector<std::optional<GemmBackend>> choices = {std::nullopt};
      for (GemmBackend backend : kGemmBackends) choices.push_back(backend);
      for (const std::optional<GemmBackend>& choice : choices) {
        set_forced_gemm_backend(choice);
        std::vector<std::vector<char>> results;
        for (int t : {1, 2, 3}) {
          set_num_threads(t);
          std::vector<char> c(m * n * element_size(dtype));
          gemm(dtype, false, true, m, n, k, 1.0, a, k, b, k, 0.0, c.data(), n);
          results.push_back(c);
        }
        const char* name = choice ? gemm_backend_name(*choice) : "auto";
        EXPECT_EQ(results[0], results[1]) << dtype << " m=" << m << " " << name;
        EXPECT_EQ(results[0], results[2]) << dtype << " m=" << m << " " << name;
      }
    }
  }
  set_forced_gemm_backend(std::nullopt);
  // One key for every thread count.
  for (const AutotuneEntry& entry : autotune_entries())
    EXPECT_EQ(entry.key.substr(entry.key.size() - 3), "any") << entry.key;
  use_deterministic_algorithms(false);
  set_num_threads(threads);
}

TEST(GemmBackendChoice, ForcedBackendThatCannotRunLeavesTheProductToAuto) {
  double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, c[4];
  const std::optional<GemmBackend> forced = forced_gemm_backend();
  set_forced_gemm_backend(GemmBackend::OneDNN);
  const GemmArgs args{kFloat64, false, false, 2, 2, 3, 1.0, a, 3, b, 2, 0.0, c, 2};
  EXPECT_FALSE(gemm_can_run(GemmBackend::OneDNN, args));
  EXPECT_EQ(choose_gemm_backend(args), GemmBackend::OpenBLAS);
  gemm(kFloat64, false, false, 2, 2, 3, 1.0, a, 3, b, 2, 0.0, c, 2);
  EXPECT_EQ(c[0], 4.0);
  EXPECT_EQ(c[3], 11.0);
  set_forced_gemm_backend(forced);
}

TEST(GemmBackendChoice, PublicNamesAndErrors) {
  const std::string starting = backends::gemm_backend();
  EXPECT_THROW(backends::set_gemm_backend("cublas"), Error);
  try {
    backends::set_gemm_backend("mkl");
    ADD_FAILURE() << "an unknown backend was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[gemm_backend] unknown backend 'mkl'"), std::string::npos) << e.what();
  }
  backends::set_gemm_backend("onednn");
  EXPECT_EQ(backends::gemm_backend(), "onednn");
  backends::set_gemm_backend("auto");
  EXPECT_EQ(backends::gemm_backend(), "auto");
  backends::set_gemm_backend(starting);
  EXPECT_THROW(backends::gemm_backend_for(kFloat32, 0, 4, 4), Error);
  EXPECT_THROW(backends::gemm_backend_for(kInt64, 4, 4, 4), Error);
  EXPECT_THROW(backends::gemm_backend_for(kFloat32, int64_t{1} << 40, int64_t{1} << 40, 4), Error);
  EXPECT_FALSE(backends::gemm_backend_can_run("onednn", kFloat64, 8, 8, 8));
  EXPECT_TRUE(backends::gemm_backend_can_run("openblas", kFloat64, 8, 8, 8));
  EXPECT_TRUE(backends::gemm_backend_can_run("ember", kBFloat16, 1, 64, 64));
  EXPECT_TRUE(backends::gemm_backend_can_run("ember", kBFloat16, 64, 64, 64));
  EXPECT_FALSE(backends::gemm_backend_can_run("ember", kFloat32, 64, 64, 64));
}

// ctest runs this with OPENBLAS_CORETYPE=Prescott (cpu.gemm_openblas_fallback): OpenBLAS's
// generic SSE3 kernel on a CPU with AVX2 or better must be reported and kept out of "auto".
TEST(GemmFallback, AutoAvoidsOpenBLASGenericKernel) {
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  if (!core || std::strcmp(core, "Prescott") != 0) GTEST_SKIP() << "run by ctest with OPENBLAS_CORETYPE=Prescott";
  if (cpu_features().best_vector_isa() < Isa::AVX2) GTEST_SKIP() << "Prescott's kernel fits a CPU without AVX2";
  const GemmBackendReport& report = gemm_backend_report(GemmBackend::OpenBLAS);
  if (report.kernel != "Prescott") GTEST_SKIP() << "this OpenBLAS (" << report.kernel << ") ignores OPENBLAS_CORETYPE";
  EXPECT_FALSE(report.fits_cpu);
  EXPECT_NE(report.why.find("generic fallback"), std::string::npos) << report.why;
  // Forced anyway, its float32 products run on ember's rows kernel (Note [OpenBLAS generic
  // kernel]): bit for bit that kernel's result, here on one tile.
  {
    const int64_t m = 5, n = 7, k = 9;
    std::vector<float> a(m * k), b(n * k), c(m * n), expected(m * n);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float& x : a) x = dist(rng);
    for (float& x : b) x = dist(rng);
    const std::optional<GemmBackend> forced = forced_gemm_backend();
    set_forced_gemm_backend(GemmBackend::OpenBLAS);
    gemm(kFloat32, false, true, m, n, k, 1.0, a.data(), k, b.data(), k, 0.0, c.data(), n);
    set_forced_gemm_backend(forced);
    EMBER_KERNEL(gemm_rows_f32)(m, n, k, 1.0f, a.data(), k, true, b.data(), k, expected.data(), n);
    EXPECT_EQ(std::memcmp(c.data(), expected.data(), c.size() * sizeof(float)), 0);
  }
  Product p(512, 512, 512);
  if (!gemm_backend_report(GemmBackend::OneDNN).fits_cpu) GTEST_SKIP() << "no other float32 backend fits here";
  EXPECT_NE(choose_gemm_backend(p.args()), GemmBackend::OpenBLAS);
  EXPECT_NE(backends::gemm_backend_for(kFloat32, 2048, 2048, 2048), "openblas");
}

}  // namespace
}  // namespace ember::cpu
