#!/usr/bin/env bash
# core_bytes (the stripped runtime core, no kernel) and runtime_bytes (stripped ember-rt with
# the GPT's op set) against the limits: 50 KB and 300 KB.
#   sizes.sh CORE_STRIPPED RUNTIME_STRIPPED
set -euo pipefail
core=$(stat -c %s "$1")
runtime=$(stat -c %s "$2")
echo "core_bytes $core (limit 50000): $1"
echo "runtime_bytes $runtime (limit 300000): $2"
[ "$core" -le 50000 ] || { echo "core_bytes over the limit"; exit 1; }
[ "$runtime" -le 300000 ] || { echo "runtime_bytes over the limit"; exit 1; }
