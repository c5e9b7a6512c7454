// What ember's oneDNN users (the GEMM backend, convolution) share: one engine and the
// single-threaded call of Note [oneDNN threads] (gemm_onednn.cpp).
#pragma once
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace ember::cpu {

// The CPU engine, capped by EMBER_CPU_CAPABILITY; created on first use, never destroyed.
dnnl::engine& onednn_engine();

// The calling thread's stream on onednn_engine().
dnnl::stream& onednn_stream();

// Runs oneDNN on the calling thread only while alive (Note [oneDNN threads]); the caller's
// own OpenMP setting is restored after.
class OneDnnSingleThreaded {
 public:
  OneDnnSingleThreaded() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneDnnSingleThreaded() { omp_set_num_threads(saved_); }
  OneDnnSingleThreaded(const OneDnnSingleThreaded&) = delete;
  OneDnnSingleThreaded& operator=(const OneDnnSingleThreaded&) = delete;

 private:
  int saved_;
};

}  // namespace ember::cpu
