#!/usr/bin/env bash
# ember train --fsdp --auto-resume under `ember-run --max-restarts 1`, one rank killed with
# SIGKILL mid-run (rank 1, then rank 0 in another run): the other rank fails with a
# CommError naming it within the 5 s communication timeout, its flight-recorder dump names
# it through `ember fr-trace`, the launcher restarts the group, which resumes from the last
# complete checkpoint and ends with the final checkpoint of an uninterrupted run byte for
# byte and its metrics line for line (timings aside). Then a run directory holding a torn
# checkpoint (rank files, no index) resumes from the complete one before it.
set -euo pipefail
ember="$1"
ember_run="$2"
source "$(dirname "$0")/common.sh"
flags=("${tiny_model[@]}" --batch-size 4 --max-steps 40 --eval-every 20 --eval-batches 2 --ckpt-every 5 --threads 1
       --fsdp --auto-resume --comm-timeout 5)
fail() { echo "train --fsdp restart: $*"; exit 1; }
# metrics.jsonl without the timings and the process's memory telemetry, which differ between runs.
metrics() {
  sed -E 's/"(elapsed_s|step_s|compute_s|exposed_comm_s|allocated_bytes|peak_allocated_bytes|rss_bytes)":[^,}]*,//g
          s/,"tokens_per_s":[^,}]*//' "$1/metrics.jsonl"
}
# Fails unless run directory $2 ends with the checkpoint and metrics of $1.
same_run() {
  [[ $(ls "$2/checkpoints") == step_40 ]] || fail "$2/checkpoints holds $(ls "$2/checkpoints" | xargs)"
  for file in rank_0.safetensors rank_1.safetensors index.json; do
    cmp "$1/checkpoints/step_40/$file" "$2/checkpoints/step_40/$file" || fail "$2: $file differs"
  done
  diff <(metrics "$1") <(metrics "$2") || fail "$2: metrics differ from $1's"
}
# The pid of rank $1 of the first attempt of the job whose rendezvous is under $2.
rank_pid() {
  local environ
  for environ in $(grep -lzx "EMBER_RDZV=file:$2/job.attempt_0" /proc/[0-9]*/environ 2>/dev/null); do
    if grep -qzx "RANK=$1" "$environ" 2>/dev/null; then
      environ=${environ#/proc/}
      echo "${environ%/environ}"
      return
    fi
  done
}

"$ember_run" --nproc 2 "$ember" train --out "$work/straight" "${flags[@]}" >/dev/null 2>"$work/straight.log" ||
  fail "the uninterrupted run failed: $(cat "$work/straight.log")"

# Runs the job under --max-restarts 1, kills rank $1 with SIGKILL after step 12 and checks
# that rank $2 named it and the restarted group ended as the uninterrupted run did.
killed_run() {
  local killed=$1 survivor=$2 out="$work/killed_$1" rdzv="$work/rdzv_$1" fr="$work/fr_$1"
  EMBER_FR_DUMP_DIR="$fr" "$ember_run" --nproc 2 --max-restarts 1 --failure-wait 15 --rdzv "file:$rdzv" \
    "$ember" train --out "$out" "${flags[@]}" >/dev/null 2>"$out.log" &
  local launcher=$! pid
  until pid=$(rank_pid "$killed" "$rdzv") && [[ -n $pid ]]; do
    kill -0 "$launcher" 2>/dev/null || fail "the run ended before rank $killed was found: $(cat "$out.log")"
    sleep 0.02
  done
  # Step 12 is logged after the checkpoint of step 10 is complete; 28 steps remain.
  until grep -q '"step":12,' "$out/metrics.jsonl" 2>/dev/null; do
    kill -0 "$launcher" 2>/dev/null || fail "the run ended before step 12: $(cat "$out.log")"
    sleep 0.02
  done
  kill -9 "$pid"
  wait "$launcher" || fail "ember-run exited with status $?: $(cat "$out.log")"
  local log
  log=$(cat "$out.log")
  expect_log() { grep -qE "$1" <<< "$log" || fail "no '$1' in the log: $log"; }
  expect_log "^ember-run: rank $killed \(pid $pid\) was killed by signal 9 \(SIGKILL\); stopping the other ranks"
  # The survivor ends by itself, after the 5 s communication timeout, with a CommError naming
  # the killed rank; the launcher waits 15 s for it (a loaded machine's survivor took over 5).
  # The operation it waits for may be the one that failed (the closed connection: "failed";
  # a send left waiting: "timed out") or a later one of the aborted group, whose error quotes it.
  expect_log "^ember-run: rank $survivor \(pid [0-9]+\) exited with status 1 as well$"
  expect_log "^ember train: \[[a-z_]+\] group .*(failed|timed out after [0-9]+ ms): rank $killed is not responding"
  expect_log "^ember-run: restarting all 2 local ranks \(restart 1 of 1\)$"
  local resumed
  resumed=$(grep -oE "^resuming from .*/step_[0-9]+ at step [0-9]+$" <<< "$log") || fail "no resume in the log: $log"
  step=${resumed##* }
  [[ $resumed == *"/step_$step at step $step" && $step -ge 10 && $((step % 5)) -eq 0 && $step -lt 40 ]] ||
    fail "resumed from an unexpected checkpoint: $resumed"
  [[ -f "$fr/rank_$survivor.json" ]] || fail "no flight-recorder dump of rank $survivor in $fr: $(ls "$fr" 2>&1)"
  local trace
  trace=$("$ember" fr-trace "$fr")
  grep -qx "ranks at fault: $killed" <<< "$trace" || fail "fr-trace does not name rank $killed: $trace"
  same_run "$work/straight" "$out"
}
killed_run 1 0
resumed_after_rank_1=$step
killed_run 0 1  # rank 0 writes metrics.jsonl and removes old checkpoints

# A torn checkpoint after the complete one of step 20: a rank file cut short and no index.
"$ember_run" --nproc 2 "$ember" train --out "$work/torn" "${flags[@]}" --stop-at 20 >/dev/null 2>&1 ||
  fail "the run stopped at step 20 failed"
mkdir "$work/torn/checkpoints/step_25"
head -c 100 "$work/torn/checkpoints/step_20/rank_0.safetensors" > "$work/torn/checkpoints/step_25/rank_0.safetensors"
"$ember_run" --nproc 2 "$ember" train --out "$work/torn" "${flags[@]}" >/dev/null 2>"$work/torn.log" ||
  fail "the run resumed next to a torn checkpoint failed: $(cat "$work/torn.log")"
grep -q "^resuming from .*/step_20 at step 20$" "$work/torn.log" ||
  fail "not resumed from step 20: $(cat "$work/torn.log")"
same_run "$work/straight" "$work/torn"
echo "train --fsdp restart: passed (rank 1 killed, resumed at step $resumed_after_rank_1; rank 0 killed, at step $step)"
