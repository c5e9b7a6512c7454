#!/usr/bin/env bash
# `ember info`: the CPU and the GEMM backends; OpenBLAS's generic kernel (forced with
# OPENBLAS_CORETYPE=Prescott) is reported as not fitting a CPU with AVX2, with the reason;
# a bad EMBER_GEMM_BACKEND is a clear error.
set -euo pipefail
ember="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME="$work/cache"

"$ember" info > "$work/info.txt"
grep -q "^cpu: " "$work/info.txt"
grep -q "GEMM backends (EMBER_GEMM_BACKEND=auto)" "$work/info.txt"
for backend in openblas onednn ember; do grep -q "^  $backend " "$work/info.txt"; done
"$ember" info --json > "$work/info.json"
grep -q '"gemm_backends":\[' "$work/info.json"
grep -q '"autotune":{"entries":\[' "$work/info.json"

if grep -qw avx2 /proc/cpuinfo; then
  OPENBLAS_CORETYPE=Prescott "$ember" info > "$work/prescott.txt"
  grep -q "^  openblas .*: DOES NOT FIT this CPU" "$work/prescott.txt"
  grep -q "core Prescott (sse kernels) .*generic fallback.*not used by auto" "$work/prescott.txt"
fi

if EMBER_GEMM_BACKEND=cublas "$ember" info > "$work/bad.txt" 2>&1; then
  echo "EMBER_GEMM_BACKEND=cublas was accepted"; exit 1
fi
grep -q "\[gemm\] EMBER_GEMM_BACKEND=cublas: expected auto, openblas, onednn or ember" "$work/bad.txt"
echo "ember info: ok"
