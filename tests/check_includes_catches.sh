#!/usr/bin/env bash
# The include check is not vacuous: on a copy of the tree with one upward include added
# (cpu -> nn), and on one with a module calling a kernel (nn -> cpu/swiglu.h),
# scripts/check_includes fails and names the line.
set -euo pipefail
root=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for folder in include src bench examples fuzz scripts; do
  if [[ -d $root/$folder ]]; then cp -r "$root/$folder" "$work/"; fi
done

# Adds `include` to `file` of the copy, expects the check to fail on it with `message`, then
# puts the file back.
expect_caught() {
  local file=$1 include=$2 message=$3 output
  echo "#include \"$include\"" >> "$work/$file"
  if output=$("$work/scripts/check_includes" "$work"); then
    echo "the check passed a tree where $file includes $include: $output"
    exit 1
  fi
  grep -q "^$file:[0-9]*: includes .*$include: $message" <<< "$output" ||
    { echo "the check failed without naming the line: $output"; exit 1; }
  echo "caught: $output"
  cp "$root/$file" "$work/$file"
}

expect_caught src/cpu/parallel.cpp ember/nn/module.h 'cpu may not depend on nn$'
expect_caught src/nn/functional.cpp cpu/swiglu.h 'nn calls no kernels'
