#!/usr/bin/env bash
# The include check is not vacuous: on a copy of the tree with one upward include added
# (cpu -> nn), scripts/check_includes fails and names the line.
set -euo pipefail
root=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for folder in include src bench examples fuzz scripts; do
  if [[ -d $root/$folder ]]; then cp -r "$root/$folder" "$work/"; fi
done
echo '#include "ember/nn/module.h"' >> "$work/src/cpu/parallel.cpp"
if output=$("$work/scripts/check_includes" "$work"); then
  echo "the check passed a tree where cpu includes nn: $output"
  exit 1
fi
grep -q '^src/cpu/parallel.cpp:[0-9]*: includes include/ember/nn/module.h: cpu may not depend on nn$' <<< "$output" ||
  { echo "the check failed without naming the line: $output"; exit 1; }
echo "caught: $output"
