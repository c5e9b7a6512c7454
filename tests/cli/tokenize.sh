#!/usr/bin/env bash
# `ember tokenize` prints Hugging Face tokenizers' ids for every reference text of the llama3
# fixture (tests/fixtures/pretrained/tokenizers/llama3/expected.json), with and without the
# special tokens; --text, --json and bad command lines.
set -euo pipefail
ember="$1"
fixture="$(cd "$(dirname "$0")/../fixtures/pretrained/tokenizers/llama3" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 - "$fixture/expected.json" "$work" <<'PY'
import json, sys
for i, entry in enumerate(json.load(open(sys.argv[1], encoding="utf-8"))):
    with open(f"{sys.argv[2]}/{i}.txt", "w", encoding="utf-8", newline="") as f:
        f.write(entry["text"])
    with open(f"{sys.argv[2]}/{i}.ids", "w") as f:
        f.write(json.dumps(entry["ids"]) + "\n")
    with open(f"{sys.argv[2]}/{i}.special", "w") as f:
        f.write(json.dumps(entry["ids_with_special"]) + "\n")
PY

count=0
for text in "$work"/*.txt; do
  stem="${text%.txt}"
  "$ember" tokenize --model "$fixture" --file "$text" > "$stem.got"
  diff "$stem.ids" "$stem.got"
  "$ember" tokenize --model "$fixture/tokenizer.json" --file "$text" --add-special > "$stem.got_special"
  diff "$stem.special" "$stem.got_special"
  count=$((count + 1))
done
[ "$count" -ge 20 ]

"$ember" tokenize --model "$fixture" --text "$(cat "$work/0.txt")" --json > "$work/json.txt"
[ "$(cat "$work/json.txt")" = "{\"ids\": $(cat "$work/0.ids")}" ]

"$ember" tokenize --help | grep -q "^usage: ember tokenize --model DIR"
"$ember" help | grep -q "^  tokenize --model DIR"
if "$ember" tokenize --model "$fixture" > "$work/usage.txt" 2>&1; then echo "no text was accepted"; exit 1; fi
grep -q "give one of --text TEXT or --file FILE" "$work/usage.txt"
if "$ember" tokenize --model "$work" --text hi > "$work/missing.txt" 2>&1; then echo "a directory without tokenizer.json was accepted"; exit 1; fi
grep -q "\[tokenizer\] $work/tokenizer.json: cannot open the file" "$work/missing.txt"
printf 'bad \xff byte' > "$work/bad.txt"
if "$ember" tokenize --model "$fixture" --file "$work/bad.txt" > "$work/bad_out.txt" 2>&1; then echo "invalid UTF-8 was accepted"; exit 1; fi
grep -q "invalid UTF-8" "$work/bad_out.txt"
echo "ember tokenize: $count texts match"
