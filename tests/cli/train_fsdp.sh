#!/usr/bin/env bash
# ember train --fsdp under ember-run: 2 ranks train as one process does (every step's loss
# within 1e-5: the same batches, gradients summed in another order; in bfloat16 within 1e-3,
# the gathered weights rounded each step as one process rounds its own), and a run stopped by
# 2 ranks at step 10 resumes at 3 ranks from its sharded checkpoint with the same losses.
set -euo pipefail
ember="$1"
ember_run="$2"
source "$(dirname "$0")/common.sh"
flags=("${tiny_model[@]}" --batch-size 6 --max-steps 20 --eval-every 10 --eval-batches 2 --ckpt-every 5 --threads 1)

# The training losses of a run directory, one per line.
losses() { grep -o '"loss":[^,}]*' "$1/metrics.jsonl" | cut -d: -f2; }
# Fails unless both runs logged 20 losses and they agree within $4 (default 1e-5).
same_losses() {
  paste <(losses "$1") <(losses "$2") | awk -v what="$3" -v tolerance="${4:-1e-5}" '
    { n++; d = $1 - $2; if (d < 0) d = -d; if (d > worst) worst = d; if ($2 == "") missing = 1 }
    END { if (n != 20 || missing || worst > tolerance) { print what ": " n " steps, largest difference " worst; exit 1 } }'
}

"$ember" train --out "$work/single" "${flags[@]}" 2>/dev/null >/dev/null
"$ember_run" --nproc 2 "$ember" train --fsdp --out "$work/fsdp" "${flags[@]}" 2>/dev/null >/dev/null
same_losses "$work/single" "$work/fsdp" "2 ranks against one process"
"$ember" train --out "$work/single_bf16" "${flags[@]}" --dtype bfloat16 2>/dev/null >/dev/null
"$ember_run" --nproc 2 "$ember" train --fsdp --out "$work/fsdp_bf16" "${flags[@]}" --dtype bfloat16 2>/dev/null >/dev/null
same_losses "$work/single_bf16" "$work/fsdp_bf16" "bfloat16, 2 ranks against one process" 1e-3
[[ -f "$work/fsdp/checkpoints/step_20/index.json" && $(ls "$work/fsdp/checkpoints" | wc -l) -eq 1 ]]

"$ember_run" --nproc 2 "$ember" train --fsdp --out "$work/split" "${flags[@]}" --stop-at 10 2>/dev/null >/dev/null
"$ember_run" --nproc 3 "$ember" train --fsdp --out "$work/split" "${flags[@]}" --resume 2>/dev/null >/dev/null
same_losses "$work/fsdp" "$work/split" "stopped at 2 ranks, resumed at 3"
grep -q '"val_loss"' "$work/split/metrics.jsonl"
echo "train --fsdp: passed"
