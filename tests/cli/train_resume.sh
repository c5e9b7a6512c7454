#!/usr/bin/env bash
# ember train: a run split as 10 + 10 steps (stop, then --resume) must equal 20 straight
# steps bit for bit, in float32 and bfloat16, and so must a run killed with SIGKILL at some
# step and resumed from its last checkpoint, and one command run twice with --auto-resume
# (a fresh start, then a resume); the final checkpoints are compared byte for byte. Also
# checks the one-line errors for bad input.
set -euo pipefail
ember="$1"
source "$(dirname "$0")/common.sh"
flags=("${tiny_model[@]}" --batch-size 4 --max-steps 20 --eval-every 10 --eval-batches 2 --ckpt-every 5 --threads 2)
"$ember" train --out "$work/straight" "${flags[@]}" 2>/dev/null
"$ember" train --out "$work/split" "${flags[@]}" --stop-at 10 2>/dev/null
"$ember" train --out "$work/split" "${flags[@]}" --resume 2>/dev/null
cmp "$work/straight/checkpoint.safetensors" "$work/split/checkpoint.safetensors"
[[ $(grep -c '"loss"' "$work/split/metrics.jsonl") -eq 20 ]]
"$ember" train --out "$work/auto" "${flags[@]}" --auto-resume --stop-at 10 2>"$work/auto.log"
if grep -q resuming "$work/auto.log"; then echo "--auto-resume resumed in a fresh directory"; exit 1; fi
"$ember" train --out "$work/auto" "${flags[@]}" --auto-resume 2>"$work/auto.log"
grep -qx "resuming from $work/auto/checkpoint.safetensors at step 10" "$work/auto.log"
cmp "$work/straight/checkpoint.safetensors" "$work/auto/checkpoint.safetensors"

"$ember" train --out "$work/straight16" "${flags[@]}" --dtype bfloat16 2>/dev/null
"$ember" train --out "$work/split16" "${flags[@]}" --dtype bfloat16 --stop-at 10 2>/dev/null
"$ember" train --out "$work/split16" "${flags[@]}" --dtype bfloat16 --resume 2>/dev/null
cmp "$work/straight16/checkpoint.safetensors" "$work/split16/checkpoint.safetensors"

long=("${flags[@]}" --max-steps 300 --ckpt-every 7)
"$ember" train --out "$work/long" "${long[@]}" 2>/dev/null
"$ember" train --out "$work/killed" "${long[@]}" 2>/dev/null &
pid=$!
until grep -q '"step":100,' "$work/killed/metrics.jsonl" 2>/dev/null; do
  kill -0 "$pid" 2>/dev/null || { echo "the run to kill ended before step 100"; exit 1; }
  sleep 0.02
done
{ kill -9 "$pid" && wait "$pid"; } 2>/dev/null || true
"$ember" train --out "$work/killed" "${long[@]}" --resume 2>/dev/null
cmp "$work/long/checkpoint.safetensors" "$work/killed/checkpoint.safetensors"
[[ $(grep -c '"loss"' "$work/killed/metrics.jsonl") -eq 300 ]]
grep -q '"val_loss"' "$work/straight/metrics.jsonl"
grep -q '<svg' "$work/straight/loss.svg"
"$ember" generate --run "$work/straight" --tokens 5 >/dev/null

expect_error() {  # expected exit status, then the command
  local want=$1; shift
  local err rc=0
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  [[ $rc -eq $want && $(printf '%s\n' "$err" | wc -l) -eq 1 ]] || { echo "expected exit $want and one line from: $*; got $rc: $err"; exit 1; }
}
: > "$work/empty.txt"
expect_error 1 "$ember" train --data "$work/missing.txt" --out "$work/x"
expect_error 1 "$ember" train --data "$work/empty.txt" --out "$work/x"
expect_error 2 "$ember" train --max-steps ten --out "$work/x"
expect_error 1 "$ember" train --out "$work/split" "${flags[@]/--dim/--dim}" --dim 48 --resume
expect_error 1 "$ember" train --out "$work/x" "${flags[@]}" --resume
expect_error 2 "$ember" train --out "$work/split" "${flags[@]}" --resume --auto-resume
expect_error 2 "$ember" train --out "$work/x" "${flags[@]}" --comm-timeout 5
expect_error 1 "$ember" generate --checkpoint "$work/corpus.txt"
echo "train/resume: passed"
