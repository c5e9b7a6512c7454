#!/usr/bin/env bash
# ember-rt runs the program `ember export` writes as `ember generate` runs the checkpoint:
# on tiny trained runs, the text ember-rt prints with --prompt is byte for byte the text
# ember generate prints with the same prompt, token count, sampling flags and seed. Covers
# the byte tokenizer (token 0, a NUL byte, included) and the char tokenizer (its alphabet travels in the program's metadata), a
# sliding window, greedy and non-default sampling, an empty prompt, a prompt longer than
# max_seq_len (both keep its last max_seq_len tokens) and a generation past max_seq_len
# (both restart the cache from the latest half of the context).
#   export_generate.sh EMBER EMBER_RT
set -euo pipefail
ember="$1"
rt="$2"
source "$(dirname "$0")/common.sh"

train_and_export() {  # NAME FLAGS...: a run trained for 3 steps and its program
  local name="$1"
  shift
  "$ember" train --out "$work/$name" "${tiny_model[@]}" --batch-size 2 --max-steps 3 --eval-every 1000 \
    --ckpt-every 3 --eval-batches 1 --threads 2 "$@" 2>/dev/null >/dev/null
  "$ember" export --run "$work/$name" --out "$work/$name.ember" --threads 2 >/dev/null
}

# The metadata ember-rt generates from, as `ember-rt PROGRAM` lists it.
expect_metadata() {  # NAME KIND STATE
  "$rt" "$work/$1.ember" > "$work/$1.listing"
  grep -qx "metadata max_seq_len: 256" "$work/$1.listing"
  grep -qx "metadata tokenizer_kind: $2" "$work/$1.listing"
  grep -qxF "metadata tokenizer_state: $3" "$work/$1.listing"
}

same_text() {  # NAME PROMPT TOKENS FLAGS...: ember-rt and ember generate print the same bytes
  local name="$1" prompt="$2" tokens="$3"
  shift 3
  "$ember" generate --run "$work/$name" --prompt "$prompt" --tokens "$tokens" --threads 2 "$@" > "$work/eager.txt"
  "$rt" "$work/$name.ember" --prompt "$prompt" --tokens "$tokens" "$@" > "$work/rt.txt"
  if ! cmp "$work/eager.txt" "$work/rt.txt"; then
    echo "ember-rt differs from ember generate on run $name, --tokens $tokens $*"
    diff <(od -c "$work/eager.txt") <(od -c "$work/rt.txt") | head -20
    exit 1
  fi
  # The prompt, one byte per token and a newline: the continuation is all there.
  local bytes
  bytes=$(wc -c < "$work/rt.txt")
  if (( bytes != ${#prompt} + tokens + 1 )); then
    echo "ember-rt printed $bytes bytes for $tokens tokens after '$prompt'"; exit 1
  fi
}

train_and_export byte
expect_metadata byte byte ""
same_text byte "The " 100 --seed 1
same_text byte "The " 100 --seed 1 --temperature 1.3 --top-k 0 --top-p 0.9
same_text byte "The " 100 --seed 5 --temperature 0
same_text byte "" 40 --seed 2 --top-k 3
# 4 + 300 tokens pass max_seq_len 256: the cache restarts from the latest 128 tokens.
same_text byte "The " 300 --seed 3
# Token 0 of the byte tokenizer is a NUL byte, printed like any other: a near-uniform sampler
# meets it within a few runs.
nul_seen=0
for seed in $(seq 10 29); do
  same_text byte "The " 200 --seed "$seed" --temperature 3 --top-k 0 --top-p 1
  if ! tr -d '\000' < "$work/rt.txt" | cmp -s - "$work/rt.txt"; then nul_seen=1; break; fi
done
(( nul_seen )) || { echo "no run sampled token 0 (a NUL byte): nothing checked that it is printed"; exit 1; }
long_prompt="$(printf 'the lazy dog %.0s' {1..25})"  # 325 bytes > 256
same_text byte "$long_prompt" 20 --seed 4

# The char tokenizer: 'T' is not in the corpus's alphabet (it encodes as id 0, as in ember).
train_and_export char --tokenizer char --window 8
expect_metadata char char '\n %abcdefghijklmnopqrstuvwxyz'
same_text char "The " 100 --seed 1
same_text char "the quick " 280 --seed 6 --temperature 1.1 --top-k 5 --top-p 0.8

# A char alphabet with a NUL byte cannot travel in the metadata (C strings): export refuses it.
printf 'a\000b\n%%\nab\n%%\n%.0s' {1..100} > "$work/nul_corpus.txt"
"$ember" train --out "$work/nul" --data "$work/nul_corpus.txt" --tokenizer char --dim 32 --layers 1 --heads 2 \
  --kv-heads 1 --hidden 64 --seq-len 8 --batch-size 2 --max-steps 1 --eval-every 1000 --ckpt-every 1 --eval-batches 1 \
  --threads 2 2>/dev/null >/dev/null
if "$ember" export --run "$work/nul" --out "$work/nul.ember" 2>"$work/err" >/dev/null; then
  echo "export accepted an alphabet with a NUL byte"; exit 1
fi
grep -q "alphabet holds a NUL byte" "$work/err"

# Flags that are not numbers are refused, as ember generate refuses them.
if "$rt" "$work/byte.ember" --prompt "The " --tokens 10x 2>"$work/err" >/dev/null; then
  echo "ember-rt accepted --tokens 10x"; exit 1
fi
grep -qF "ember-rt: --tokens expects a number, got '10x'" "$work/err"
if "$rt" "$work/byte.ember" --prompt "The " --top-p 2 2>"$work/err" >/dev/null; then
  echo "ember-rt accepted --top-p 2"; exit 1
fi
grep -qF -- "--top-p in (0, 1]" "$work/err"
echo "ember-rt --prompt = ember generate: ok"
