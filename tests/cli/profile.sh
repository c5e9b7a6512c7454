#!/usr/bin/env bash
# ember train --profile: the trace and its table, `ember profile` reading the trace back to the
# same rows, and under --fsdp (2 ranks) each rank's trace with the all-gathers and
# reduce-scatters on the communication lanes, overlapping backward compute on the main lane.
# Every run's metrics carry memory and time telemetry, and loss.svg a throughput panel.
set -euo pipefail
ember="$1"
ember_run="$2"
source "$(dirname "$0")/common.sh"
flags=("${tiny_model[@]}" --batch-size 6 --max-steps 4 --eval-every 10 --eval-batches 1 --ckpt-every 100 --threads 1)

"$ember" train --out "$work/single" "${flags[@]}" --profile 2 2>/dev/null > "$work/train.txt"
grep -q "^profile of 2 step(s), trace in $work/single/trace.json$" "$work/train.txt"
grep -q "^Name  *Calls  *Self ms  *Self %  *Total ms  *Total %  *GFLOP/s  *Self alloc  *Total alloc$" "$work/train.txt"
grep -q "^The rows shown account for .* of the profiled time on lane 'main'.$" "$work/train.txt"
# The table's rows (name and calls) again from the saved trace.
rows() { awk '/^Name /{on=1; getline; next} /^Profiled time/{on=0} on {print $1, $2}' "$1"; }
"$ember" profile "$work/single/trace.json" > "$work/table.txt"
diff <(rows "$work/train.txt") <(rows "$work/table.txt")
[[ $(rows "$work/table.txt" | wc -l) -eq 20 ]]
# The steps after the first: ProfilerStep#2 and #3, one call each.
"$ember" profile "$work/single/trace.json" --sort calls --limit 0 > "$work/all.txt"
grep -q "^ProfilerStep#2  *1 " "$work/all.txt"
grep -q "^ProfilerStep#3  *1 " "$work/all.txt"
! grep -q "^ProfilerStep#1 " "$work/all.txt"
# The memory track's peak is the allocator's over the profiled steps (2 and 3), as metrics.jsonl has it.
python3 - "$work/single/trace.json" "$work/single/metrics.jsonl" <<'PY'
import json, sys
track = max(e["args"]["allocated_bytes"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "C")
steps = {s["step"]: s for s in map(json.loads, open(sys.argv[2])) if "loss" in s}
assert track == max(steps[2]["peak_allocated_bytes"], steps[3]["peak_allocated_bytes"]), track
PY
if "$ember" profile "$work/missing.json" 2> "$work/error.txt"; then exit 1; fi
grep -q "profiler.load_chrome_trace" "$work/error.txt"
echo '{"events": []}' > "$work/not_a_trace.json"
if "$ember" profile "$work/not_a_trace.json" 2> "$work/error.txt"; then exit 1; fi
grep -q "is not a Chrome trace" "$work/error.txt"
if "$ember" profile "$work/single/trace.json" --sort speed 2> "$work/error.txt"; then exit 1; fi
grep -q "\[profiler.table\] sort_by 'speed'" "$work/error.txt"

"$ember_run" --nproc 2 "$ember" train --fsdp --out "$work/fsdp" "${flags[@]}" --profile 2 2>/dev/null >/dev/null
for rank in 0 1; do
  python3 - "$work/fsdp/trace_rank$rank.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
lanes = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
complete = [e for e in events if e["ph"] == "X"]
def on(prefix, name):
    return [e for e in complete if lanes[e["tid"]].startswith(prefix) and e["name"] == name]
backward = [e for e in complete if e["cat"] == "autograd" and lanes[e["tid"]] == "main"]
def overlaps(a, b):
    return a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]
for name in ("all_gather_into_tensor", "reduce_scatter_tensor"):
    runs = on("comm group ", name)
    assert runs, f"no {name} on a communication lane"
    assert all(e["args"]["bytes"] > 0 and e["args"]["sequence"] >= 1 for e in runs), name
    assert any(overlaps(r, b) for r in runs for b in backward), f"no {name} overlaps backward compute"
    assert len(on("main", name + " issue")) == len(runs), f"{name}: an issue per run"
# Each collective issued while profiling is one flow: issue (s), run (t), wait (f).
flows = {}
for e in events:
    if e["ph"] in "stf":
        flows.setdefault(e["id"], []).append(e["ph"])
assert flows and all(sorted(p) == ["f", "s", "t"] for p in flows.values()), flows
PY
done
# Telemetry: memory, RSS and the step's time split into compute and exposed communication.
python3 - "$work/single/metrics.jsonl" "$work/fsdp/metrics.jsonl" <<'PY'
import json, sys
for path in sys.argv[1:]:
    steps = [json.loads(line) for line in open(path) if '"loss"' in line]
    assert len(steps) == 4, path
    for s in steps:
        assert 0 < s["allocated_bytes"] <= s["peak_allocated_bytes"] < s["rss_bytes"], s
        assert s["exposed_comm_s"] >= 0 and s["compute_s"] > 0, s
        assert abs(s["compute_s"] + s["exposed_comm_s"] - s["step_s"]) < 1e-9, s
    if "single" in path:
        assert all(s["exposed_comm_s"] == 0 for s in steps), "communication without --fsdp"
PY
python3 -c "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])" "$work/single/loss.svg"
grep -q ">tokens/s</text>" "$work/single/loss.svg"
[[ $(grep -c "<polyline" "$work/single/loss.svg") -eq 3 ]]
echo "train --profile: passed"
