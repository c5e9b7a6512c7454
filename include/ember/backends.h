// The CPU ember runs on and the GEMM backends behind every product (matmul, linear, the fused
// loss): what each runs here, which one a product uses, and the autotune table; the algorithm
// of float32 3x3 convolutions.
//
// Products run on OpenBLAS, oneDNN or ember's own kernels. With the default "auto", the
// first product of each shape key (dtype, transposes, bucketed sizes, threads) times every
// backend whose kernel fits this CPU and keeps the fastest, in a table persisted at
// autotune_table_path(). EMBER_GEMM_BACKEND=auto|openblas|onednn|ember sets the starting
// choice. ember-specific: libtorch has no counterpart (its nearest are the
// torch.backends.* flags of PyTorch).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ember/dtype.h"

namespace ember::backends {

struct CpuInfo {
  std::string vendor;                   // "GenuineIntel", "AuthenticAMD"
  std::string model;                    // the brand string
  std::vector<std::string> extensions;  // "avx2", "avx512f", "avx512_bf16", "amx_bf16", ...
  std::string vector_isa;               // the widest the CPU has: "avx512", "avx2", "avx", "sse"
  std::string dispatch_isa;             // what ember's kernels use: avx512_amx, avx512_bf16, avx512_vnni, avx512, avx2_vnni, avx2 or baseline (lowered by EMBER_CPU_CAPABILITY)
  int logical_cpus = 0;                 // CPUs this process may run on
  int64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
};
CpuInfo cpu_info();

struct GemmBackendInfo {
  std::string name;        // "openblas", "onednn", "ember"
  bool available = false;  // runs at least one dtype here
  std::string version;
  std::string kernel;      // OpenBLAS's core name; oneDNN's implementation per dtype
  std::string kernel_isa;  // the instruction set of that kernel
  bool fits_cpu = false;   // false: a generic fallback kernel, never chosen by "auto"
  std::string why;         // one line explaining fits_cpu
  std::vector<ScalarType> dtypes;
};
std::vector<GemmBackendInfo> gemm_backends();

// "auto" or the forced backend's name.
std::string gemm_backend();
// name: "auto", "openblas", "onednn" or "ember"; throws ember::Error otherwise. A forced
// backend that cannot run a product (oneDNN and float64) leaves that product to "auto".
void set_gemm_backend(const std::string& name);

// Whether `backend` takes a contiguous product of this dtype and shape.
bool gemm_backend_can_run(const std::string& backend, ScalarType dtype, int64_t m, int64_t k, int64_t n,
                          bool trans_a = false, bool trans_b = false);
// The backend a contiguous product of this dtype and shape runs on now (the forced one, or
// the autotuned one: tuning its key now, on scratch operands, if the table has no entry).
std::string gemm_backend_for(ScalarType dtype, int64_t m, int64_t k, int64_t n, bool trans_a = false,
                             bool trans_b = false);

// The algorithm of float32 2-d 3x3 convolutions with stride 1: "direct" (the default:
// oneDNN's direct kernels, which PyTorch's CPU convolution runs) or "winograd" (oneDNN's
// Winograd F(4x4, 3x3) kernels where it has them, on AVX-512 CPUs: forward and both gradients
// 1.7-2.5x faster at ResNet's shapes, with about ten times the direct kernels' rounding error,
// ~5e-7 of the sum of the terms' magnitudes). Shapes without a Winograd kernel stay direct.
// EMBER_CONV_ALGORITHM=direct|winograd sets the starting choice. Set it before running
// convolutions, not while another thread runs one.
std::string conv_algorithm();
// name: "direct" or "winograd"; throws ember::Error otherwise.
void set_conv_algorithm(const std::string& name);
// What a convolution (ember::convolution's arguments, by sizes, and its dtype) runs here, pass
// by pass: oneDNN's implementations and the activations' layout, e.g. "forward
// brgconv:avx512_core channels-last, input gradient jit:avx512_core oneDNN's layout, weight
// gradient jit:avx512_core channels-last"; "im2col + GEMM" where oneDNN has no kernel (and for
// float64), "GEMM (pointwise: ...)" for 1x1 stride-1 unpadded ones; for float16, and bfloat16
// without oneDNN's bf16 kernels, "float32 copies: " and the float32 answer. stride, padding
// and dilation: one value for every spatial dim or one per dim. input_sizes are batched
// ([N, C, *spatial]). Invalid sizes throw ember::Error as the convolution would.
std::string conv_kernels_for(const std::vector<int64_t>& input_sizes, const std::vector<int64_t>& weight_sizes,
                             const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
                             const std::vector<int64_t>& dilation = {1}, int64_t groups = 1,
                             ScalarType dtype = kFloat32);

struct AutotuneEntry {
  std::string key;      // "bf16 NT 2048x192x576 t2": dtype, transposes, M x K x N buckets, threads
  std::string backend;  // the choice
  std::vector<std::pair<std::string, double>> gflops;  // each candidate's measured GFLOP/s
};
// $XDG_CACHE_HOME/ember/autotune-<cpu>-<versions>.json ("" without XDG_CACHE_HOME and HOME).
std::string autotune_table_path();
std::vector<AutotuneEntry> autotune_table();

}  // namespace ember::backends
