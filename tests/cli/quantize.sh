#!/usr/bin/env bash
# ember quantize on pretrained fixtures: the written directory (blocks in model.safetensors with
# the type in its metadata, config and tokenizer copied) loads back quantized, and ember
# perplexity and greedy generation on it give what --quantize gives on the original; the int8 and
# int4 perplexities stay near the float model's; --mmap (weights used as mapped) changes no
# result; bad flags are one-line errors.
set -euo pipefail
ember="$1"
fixtures="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
heldout="$fixtures/heldout.txt"

perplexity() { "$ember" perplexity --file "$heldout" --ctx 64 --json "$@" |
               python3 -c 'import json, sys; print(json.load(sys.stdin)["perplexity"])'; }
close() { python3 -c 'import sys; a, b, t = map(float, sys.argv[1:]); sys.exit(abs(a - b) > t * abs(b))' "$1" "$2" "$3"; }

for arch in llama gpt2; do
  base="$fixtures/models/$arch"
  float=$(perplexity --model "$base")
  close "$(perplexity --model "$base" --mmap)" "$float" 1e-12  # weights mapped, not copied
  for type in int8 int4; do
    out="$work/$arch-$type"
    "$ember" quantize --model "$base" --out "$out" --type "$type" | grep -q "^wrote $out ($type, "
    for file in config.json generation_config.json tokenizer.json tokenizer_config.json model.safetensors; do
      if [[ -e "$base/$file" ]]; then [[ -s "$out/$file" ]]; fi
    done
    "$ember" inspect "$out/model.safetensors" > "$work/inspect.txt"
    grep -q "quantization" "$work/inspect.txt"
    grep -q "$type" "$work/inspect.txt"
    grep -q "lm_head.qweight" "$work/inspect.txt"
    stored=$(perplexity --model "$out")
    at_load=$(perplexity --model "$base" --quantize "$type")
    close "$stored" "$at_load" 1e-9
    close "$(perplexity --model "$out" --mmap)" "$stored" 1e-12  # the blocks used as mapped
    close "$stored" "$float" 0.2  # random fixtures: a loose bound, the trained figures are in docs/QUANTIZATION.md
    [[ "$("$ember" generate --model "$out" --prompt "The old man" --greedy --max-new-tokens 8 2>/dev/null)" == \
       "$("$ember" generate --model "$base" --quantize "$type" --prompt "The old man" --greedy --max-new-tokens 8 2>/dev/null)" ]]
  done
done

source "$(dirname "$0")/expect_error.sh"
expect_error 2 "--type must be int8 or int4, got 'q4_k'" quantize --model "$fixtures/models/llama" --out "$work/x" --type q4_k
expect_error 2 "--out is required" quantize --model "$fixtures/models/llama" --type int8
expect_error 1 "is the model's own directory" quantize --model "$work/llama-int8" --out "$work/llama-int8" --type int8
expect_error 1 "stored quantized to int4; quantize 'int8'" perplexity --model "$work/llama-int4" --file "$heldout" --quantize int8
echo "ember quantize: ok"
