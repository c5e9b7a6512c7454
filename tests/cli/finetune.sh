#!/usr/bin/env bash
# ember train --init and ember export-hf on a pretrained fixture: 200 LoRA steps lower the
# held-out perplexity; the exported directory loads and gives the run's fine-tuned figure; a
# run split by --stop-at and --resume equals a straight one byte for byte; a full fine-tune
# exports too; bad flags are one-line errors.
set -euo pipefail
ember="$1"
fixtures="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
base="$fixtures/models/llama"
heldout="$fixtures/heldout.txt"
common=(--init "$base" --data "$fixtures/corpus.txt" --seq-len 64 --batch-size 8 --threads 2)

# The value of `key` in the last line of metrics.jsonl that has it.
metric() { python3 -c 'import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
print([l for l in lines if sys.argv[2] in l][int(sys.argv[3])][sys.argv[2]])' "$1/metrics.jsonl" "$2" "${3:--1}"; }
# Whether |a - b| <= tolerance * |b|.
close() { python3 -c 'import sys; a, b, t = map(float, sys.argv[1:]); sys.exit(abs(a - b) > t * abs(b))' "$1" "$2" "$3"; }
less() { python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))' "$1" "$2"; }

"$ember" train "${common[@]}" --out "$work/lora" --lora-rank 8 --max-steps 200 --lr 1e-2 --eval-every 100 \
  --eval-file "$heldout" 2>/dev/null
before=$(metric "$work/lora" eval_perplexity 0)
after=$(metric "$work/lora" eval_perplexity -1)
echo "held-out perplexity: $before before, $after after 200 LoRA steps"
less "$after" "$before"
less "$(metric "$work/lora" val_loss -1)" "$(metric "$work/lora" val_loss 0)"
for file in adapter_model.safetensors adapter_config.json run.json checkpoint.safetensors loss.svg; do
  [[ -s "$work/lora/$file" ]]
done
grep -q '"peft_type": "LORA"' "$work/lora/adapter_config.json"
grep -q "\"base_model_name_or_path\": \"$(cd "$base" && pwd)\"" "$work/lora/adapter_config.json"

# The exported directory loads (from_pretrained, its tokenizer) and scores the held-out text as
# the adapters did; ember perplexity gives the same figure where it exists.
"$ember" export-hf --run "$work/lora" --out "$work/export" >/dev/null
for file in config.json model.safetensors generation_config.json tokenizer.json tokenizer_config.json; do
  [[ -s "$work/export/$file" ]]
done
"$ember" train --init "$work/export" --data "$fixtures/corpus.txt" --seq-len 64 --max-steps 1 --eval-file "$heldout" \
  --out "$work/reload" 2>/dev/null >/dev/null
close "$(metric "$work/reload" eval_perplexity 0)" "$after" 1e-5
if "$ember" perplexity --help >/dev/null 2>&1; then
  exported=$("$ember" perplexity --model "$work/export" --file "$heldout" --ctx 64 --json |
             python3 -c 'import json, sys; print(json.load(sys.stdin)["perplexity"])')
  original=$("$ember" perplexity --model "$base" --file "$heldout" --ctx 64 --json |
             python3 -c 'import json, sys; print(json.load(sys.stdin)["perplexity"])')
  close "$exported" "$after" 1e-5
  close "$original" "$before" 1e-5
fi

# --stop-at then --resume equals the straight run byte for byte (adapters and optimizer state).
short=("${common[@]}" --lora-rank 4 --lora-targets q_proj,o_proj,down_proj --max-steps 20 --ckpt-every 5 --lr 5e-3)
"$ember" train "${short[@]}" --out "$work/straight" 2>/dev/null >/dev/null
"$ember" train "${short[@]}" --out "$work/split" --stop-at 10 2>/dev/null >/dev/null
"$ember" train "${short[@]}" --out "$work/split" --resume 2>/dev/null >/dev/null
cmp "$work/straight/checkpoint.safetensors" "$work/split/checkpoint.safetensors"
cmp "$work/straight/adapter_model.safetensors" "$work/split/adapter_model.safetensors"
[[ $(grep -c '"loss"' "$work/split/metrics.jsonl") -eq 20 ]]

# A full fine-tune (every weight) in bfloat16 compute, exported.
"$ember" train "${common[@]}" --out "$work/full" --max-steps 5 --dtype bfloat16 2>/dev/null >/dev/null
[[ -s "$work/full/model.safetensors" && ! -e "$work/full/adapter_model.safetensors" ]]
"$ember" export-hf --run "$work/full" --out "$work/full_export" >/dev/null
[[ -s "$work/full_export/model.safetensors" && -s "$work/full_export/tokenizer.json" ]]

# Bad input: one line naming the problem.
source "$(dirname "$0")/expect_error.sh"
expect_error 1 "target module 'c_attn' is no projection of LlamaForCausalLM" train "${common[@]}" --out "$work/bad" \
  --lora-rank 4 --lora-targets c_attn
expect_error 2 "need --lora-rank" train "${common[@]}" --out "$work/bad" --lora-alpha 4
expect_error 2 "--init needs --data" train --init "$base"
expect_error 1 "no run.json" export-hf --run "$work" --out "$work/bad"
echo OK
