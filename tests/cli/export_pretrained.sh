#!/usr/bin/env bash
# ember export --model: each fixture checkpoint (tests/fixtures/pretrained/models) becomes a
# .ember program (checked bitwise against the eager model by the command itself) whose greedy
# ids in ember-rt are transformers' (reference.json) and whose text is `ember generate`'s; bad
# flags and impossible lengths are one-line errors naming the value.
#   export_pretrained.sh EMBER EMBER_RT FIXTURES_DIR
set -euo pipefail
ember="$1"
ember_rt="$2"
models="$3/models"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A reference.json list ("prompt_ids", "greedy_ids") as space-separated ids.
json_ids() { tr -d ' \n' < "$1" | grep -o "\"$2\":\[[0-9,]*\]" | sed 's/.*\[//; s/\]//; s/,/ /g'; }

for arch in llama mistral qwen2 qwen3 gemma phi3 gpt2; do
  "$ember" export --model "$models/$arch" --out "$work/$arch.ember" --max-seq-len 64 --threads 2 > "$work/export.txt"
  grep -q "^method prefill: .* symbols T in \[1, 64\]; arena " "$work/export.txt"
  grep -q "^method decode: .* symbols pos in \[0, 63\]; arena " "$work/export.txt"
  grep -qx "checked: prefill and decode equal the eager model bitwise" "$work/export.txt"
  "$ember_rt" "$work/$arch.ember" > "$work/info.txt"
  grep -q "^metadata max_seq_len: 64$" "$work/info.txt"
  grep -q "^metadata eos_token_ids: [0-9]" "$work/info.txt"
  greedy="$("$ember_rt" "$work/$arch.ember" --ids "$(json_ids "$models/$arch/reference.json" prompt_ids)" --tokens 32 \
    --temperature 0 --ignore-eos)"
  [[ "$greedy" == "$(json_ids "$models/$arch/reference.json" greedy_ids)" ]] || {
    echo "$arch: ember-rt's greedy ids $greedy differ from transformers'"; exit 1; }
done
echo "seven architectures: exported, greedy ids in ember-rt equal transformers'"

# Text: the ids `ember tokenize` prints, continued by ember-rt, print what `ember generate` does
# (for continuations of whole UTF-8 characters: ember-rt prints each token's bytes as they come).
for arch in qwen2 gemma; do
  ids="$("$ember" tokenize --model "$models/$arch" --text "The old man" --add-special)"
  expected="$("$ember" generate --model "$models/$arch" --prompt "The old man" --greedy --max-new-tokens 12 2>/dev/null)"
  got="The old man$("$ember_rt" "$work/$arch.ember" --ids "$ids" --tokens 12 --temperature 0 --emit text)"
  [[ "$got" == "$expected" ]] || { echo "$arch: ember-rt printed '$got', ember generate '$expected'"; exit 1; }
done

# bfloat16 compute exports too.
"$ember" export --model "$models/gpt2" --out "$work/gpt2_bf16.ember" --max-seq-len 32 --dtype bfloat16 --threads 2 |
  grep -qx "checked: prefill and decode equal the eager model bitwise"

# Refusals name the value.
expect_error() {  # expect_error FRAGMENT COMMAND...
  local fragment="$1"
  shift
  if "$@" > "$work/error.txt" 2>&1; then echo "accepted: $*"; exit 1; fi
  grep -q -- "$fragment" "$work/error.txt" || { echo "no '$fragment' in:"; cat "$work/error.txt"; exit 1; }
}
expect_error "exceeds the 128 learned positions" "$ember" export --model "$models/gpt2" --out "$work/x.ember" --max-seq-len 200
expect_error "--max-seq-len must be >= 3, got 2" "$ember" export --model "$models/llama" --out "$work/x.ember" --max-seq-len 2
expect_error "--dtype must be float32 or bfloat16, got 'float16'" \
  "$ember" export --model "$models/llama" --out "$work/x.ember" --dtype float16
expect_error "apply to --model only" "$ember" export --run "$work" --out "$work/x.ember" --max-seq-len 64
expect_error "exactly one of" "$ember" export --model "$models/llama" --run "$work" --out "$work/x.ember"
expect_error "cannot encode text" "$ember_rt" "$work/qwen2.ember" --prompt "The old man"
expect_error "--ids expects integers" "$ember_rt" "$work/qwen2.ember" --ids "1 x 2"
expect_error "--emit expects ids or text" "$ember_rt" "$work/qwen2.ember" --ids "1 2" --emit bytes
echo "ember export --model: ok"
