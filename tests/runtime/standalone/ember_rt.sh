#!/usr/bin/env bash
# ember-rt (built with the GPT's op set) end to end on the sample program add.ember
# (x + bias, T in [1, 16]): listing, a run on a file's inputs against values computed here,
# and the errors, among them add_relu.ember, whose relu kernel ember-rt does not link.
#   ember_rt.sh EMBER_RT PROGRAMS_DIR
set -euo pipefail
rt="$1"
dir="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
listing="$("$rt" "$dir/add.ember")"
grep -q "input 0 'x': float32 \[1..16, 4\]" <<<"$listing" || { echo "unexpected listing: $listing"; exit 1; }
python3 - "$work/x.bin" <<'PY'
import struct, sys
open(sys.argv[1], "wb").write(struct.pack("12f", *[(i - 6) * 0.5 for i in range(12)]))
PY
"$rt" "$dir/add.ember" --method forward --input "3x4=$work/x.bin" --output "$work/y" | grep -q "output 0: float32 \[3, 4\]"
python3 - "$work/y0.bin" <<'PY'
import struct, sys
bias = [0.5, -1.0, 2.0, -3.0]
y = struct.unpack("12f", open(sys.argv[1], "rb").read())
expected = [(i - 6) * 0.5 + bias[i % 4] for i in range(12)]
assert list(y) == expected, (y, expected)
PY
# Errors: a size outside the bounds, an op without a kernel in this build, a file that is no
# program, a missing file; exit 1 with the runtime's message.
python3 -c "import sys; open(sys.argv[1], 'wb').write(bytes(17 * 16))" "$work/x17.bin"
if "$rt" "$dir/add.ember" --method forward --input "17x4=$work/x17.bin" 2>"$work/err"; then exit 1; fi
grep -q "outside its bounds \[1, 16\]" "$work/err"
if "$rt" "$dir/add_relu.ember" 2>"$work/err"; then exit 1; fi
grep -q "operator 1 'relu' has no kernel in this build" "$work/err"
if "$rt" "$dir/bad_magic.ember" 2>"$work/err"; then exit 1; fi
grep -q "wrong magic" "$work/err"
if "$rt" "$work/none.ember" 2>"$work/err"; then exit 1; fi
grep -q "cannot open" "$work/err"
echo "ember-rt: all checks passed"
