# Sourced by the ember train tests: a scratch directory `work` removed on exit, a corpus of
# 200 short documents in it, and the flags of a tiny model trained on it.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf 'the quick brown fox jumps over the lazy dog\n%%\n%.0s' {1..200} > "$work/corpus.txt"
tiny_model=(--data "$work/corpus.txt" --dim 32 --layers 2 --heads 2 --kv-heads 1 --hidden 64 --seq-len 32)
