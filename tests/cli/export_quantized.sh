#!/usr/bin/env bash
# ember export --model --quantize int8|int4: the program calls quantized_linear over the blocks
# (checked bitwise against the eager quantized model by the command itself), and ember-rt
# continues `ember tokenize`'s ids into the text `ember generate --quantize` prints; a directory
# written by `ember quantize` exports the same program without the flag; bad flags are
# one-line errors naming the value.
#   export_quantized.sh EMBER EMBER_RT FIXTURES_DIR
set -euo pipefail
ember="$1"
ember_rt="$2"
models="$3/models"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# ember-rt prints each token's bytes as they come; ember generate decodes the text, each byte of
# an invalid UTF-8 sequence (the random fixtures' tokens of partial characters) as U+FFFD.
as_generate_prints() { python3 -c 'import sys; sys.stdout.write(sys.stdin.buffer.read().decode("utf-8", "replace"))'; }

prompt="The old man"
for type in int8 int4; do
  for arch in qwen2 gemma; do
    program="$work/$arch-$type.ember"
    "$ember" export --model "$models/$arch" --quantize "$type" --out "$program" --max-seq-len 64 --threads 2 \
      > "$work/export.txt"
    grep -qx "checked: prefill and decode equal the eager model bitwise" "$work/export.txt"
    grep -q "^operators:.* quantized_linear" "$work/export.txt"
    if grep -q "^operators:.* linear\b" "$work/export.txt"; then echo "$arch $type: a float linear is left"; exit 1; fi
    "$ember_rt" "$program" | grep -qx "metadata quantization: $type"
    ids="$("$ember" tokenize --model "$models/$arch" --text "$prompt" --add-special)"
    expected="$("$ember" generate --model "$models/$arch" --quantize "$type" --prompt "$prompt" --greedy \
      --max-new-tokens 12 2>/dev/null)"
    got="$prompt$("$ember_rt" "$program" --ids "$ids" --tokens 12 --temperature 0 --emit text | as_generate_prints)"
    [[ "$got" == "$expected" ]] || { echo "$arch $type: ember-rt printed '$got', ember generate '$expected'"; exit 1; }
  done
done
echo "int8 and int4: ember-rt's text equals ember generate --quantize's"

# A directory written by ember quantize holds the blocks ember export --quantize makes: the same
# program, byte for byte.
"$ember" quantize --model "$models/qwen2" --out "$work/qwen2-int4" --type int4 > /dev/null
"$ember" export --model "$work/qwen2-int4" --out "$work/stored.ember" --max-seq-len 64 --threads 2 |
  grep -qx "checked: prefill and decode equal the eager model bitwise"
cmp "$work/stored.ember" "$work/qwen2-int4.ember"

source "$(dirname "$0")/expect_error.sh"
expect_error 2 "--quantize must be int8 or int4, got 'int3'" \
  export --model "$models/llama" --quantize int3 --out "$work/x.ember"
expect_error 2 "apply to --model only" export --run "$work" --quantize int8 --out "$work/x.ember"
echo "ember export --quantize: ok"
