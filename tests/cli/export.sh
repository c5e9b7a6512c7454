#!/usr/bin/env bash
# ember export: a tiny run's checkpoint becomes a .ember program with prefill and decode
# (checked bitwise against the eager model by the command itself), the arena is smaller than
# the intermediates it holds, and bad flags are one-line errors.
set -euo pipefail
ember="$1"
source "$(dirname "$0")/common.sh"
"$ember" train --out "$work/run" "${tiny_model[@]}" --batch-size 2 --max-steps 2 --eval-every 1000 \
  --ckpt-every 2 --eval-batches 1 --threads 2 2>/dev/null >/dev/null
"$ember" export --run "$work/run" --out "$work/gpt.ember" --threads 2 > "$work/export.txt"
grep -q "^wrote $work/gpt.ember" "$work/export.txt"
grep -qx "operators: add clone copy_ embedding flex_attention linear rms_norm rotary_embedding swiglu" "$work/export.txt"
grep -q "^method prefill: 5 inputs, .* symbols T in \[1, 256\]; arena " "$work/export.txt"
grep -q "^method decode: 6 inputs, .* symbols pos in \[0, 255\]; arena " "$work/export.txt"
grep -qx "checked: prefill and decode equal the eager model bitwise" "$work/export.txt"
"$ember" export --run "$work/run" --out "$work/gpt2.ember" --threads 2 --print > "$work/print.txt"
grep -q "^method decode(input.0: int64\[1, 1\], input.1: int64\[\], .* pos in \[0, 255\], arena " "$work/print.txt"
grep -q " = flex_attention(.*q_offset=\[pos\]" "$work/print.txt"
cmp "$work/gpt.ember" "$work/gpt2.ember"  # export is deterministic
[[ "$(head -c 8 "$work/gpt.ember")" == "EMBERPRG" ]]
# The arena holds every intermediate of a method in less than their sum.
awk '/^method/ { for (i = 1; i <= NF; ++i) if ($i == "arena") { a = $(i + 1); s = $(i + 4) } if (a + 0 >= s + 0) exit 1 }' \
  "$work/export.txt"
if "$ember" export --run "$work/run" > "$work/no_out.txt" 2>&1; then echo "export without --out was accepted"; exit 1; fi
grep -q -- "--out FILE is required" "$work/no_out.txt"
if "$ember" export --run "$work/missing" --out "$work/x.ember" > "$work/missing.txt" 2>&1; then
  echo "export of a missing run was accepted"; exit 1
fi
echo "ember export: ok"
