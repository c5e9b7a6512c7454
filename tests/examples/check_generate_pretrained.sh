#!/usr/bin/env bash
# Runs examples/generate_pretrained.cpp (the README's C++ snippet) on fixture checkpoints and
# checks it prints exactly what `ember generate --greedy` prints for the same prompt.
set -euo pipefail
example=$1 ember=$2 fixtures=$3
for arch in llama qwen2 gpt2; do
  dir="$fixtures/models/$arch"
  expected=$("$ember" generate --model "$dir" --prompt "We hold these truths" --greedy --max-new-tokens 24 2>/dev/null)
  got=$("$example" "$dir" "We hold these truths" 24)
  if [[ "$got" != "$expected" ]]; then
    echo "$arch: the example printed" >&2; printf '%s\n' "$got" >&2
    echo "ember generate --greedy printed" >&2; printf '%s\n' "$expected" >&2
    exit 1
  fi
done
echo "the example matches ember generate --greedy on llama, qwen2, gpt2"
