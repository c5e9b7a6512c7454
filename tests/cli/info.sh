#!/usr/bin/env bash
# `ember info`: the CPU and the GEMM backends; OpenBLAS's generic kernel (forced with
# OPENBLAS_CORETYPE=Prescott) is reported as not fitting a CPU with AVX2, with the reason;
# `ember tune` fills the autotune table; a bad EMBER_GEMM_BACKEND is a clear error.
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

# ember tune fills the table for a model's products (where two backends run float32, so
# there is something to choose); ember info then lists them.
"$ember" tune --dim 32 --layers 1 --heads 2 --kv-heads 1 --hidden 64 --seq-len 16 --batch-size 2 \
  --dtype float32 > "$work/tune.txt"
if grep -q "^  onednn .*: fits this CPU" "$work/info.txt" && grep -q "^  openblas .*: fits this CPU" "$work/info.txt"; then
  grep -q "^autotune table $XDG_CACHE_HOME/ember/autotune-.*\.json: [1-9][0-9]* entries" "$work/tune.txt"
  grep -q "^  f32 NT 32x32x" "$work/tune.txt"  # the forward product of a linear layer, x @ W^T
  "$ember" info --json > "$work/tuned.json"
  grep -q '"key":"f32 ' "$work/tuned.json"
fi
if "$ember" tune --dtype float64 > "$work/bad_tune.txt" 2>&1; then echo "ember tune --dtype float64 was accepted"; exit 1; fi
grep -q "dtype must be float32, bfloat16 or both" "$work/bad_tune.txt"

if EMBER_GEMM_BACKEND=cublas "$ember" info > "$work/bad.txt" 2>&1; then
  echo "EMBER_GEMM_BACKEND=cublas was accepted"; exit 1
fi
grep -q "\[gemm\] EMBER_GEMM_BACKEND=cublas: expected auto, openblas, onednn or ember" "$work/bad.txt"
echo "ember info: ok"
