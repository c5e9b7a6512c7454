#!/usr/bin/env bash
# The documentation check is not vacuous: on a copy of the tree with a Note cited but never
# defined, a Note cited in the wrong file (once on one line, once wrapped over two comment
# lines), a path and a link that lead nowhere and a table cut in two by a paragraph,
# scripts/check_docs fails and names each one.
set -euo pipefail
root=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for entry in include src tests bench examples fuzz scripts cmake docs README.md CHANGELOG.md CMakeLists.txt \
             CMakePresets.json; do
  if [[ -e $root/$entry ]]; then cp -r "$root/$entry" "$work/"; fi
done
note=Note  # spelled apart, so that this file cites nothing itself
echo "// Cited, never defined ($note [A note nobody wrote])." >> "$work/src/cpu/parallel.cpp"
echo "// See $note [GEMM tiles] in parallel.cpp." >> "$work/src/cpu/parallel.h"
printf '// Wrapped (%s [Kernel\n// dispatch] in gemm.cpp).\n' "$note" >> "$work/src/cpu/parallel.h"
printf '\nSee `src/cpu/no_such_kernel.cpp` and [the page](NO_SUCH_PAGE.md).\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\nA paragraph.\n| 3 | 4 |\n' \
  >> "$work/docs/ARCHITECTURE.md"
if output=$("$work/scripts/check_docs" "$work"); then
  echo "the check passed a tree with broken documentation: $output"
  exit 1
fi
expected=(
  '^src/cpu/parallel.cpp:[0-9]*: cites Note \[A note nobody wrote\], which is defined nowhere$'
  '^src/cpu/parallel.h:[0-9]*: cites Note \[GEMM tiles\] in parallel.cpp, but it is defined in src/cpu/gemm.cpp$'
  '^src/cpu/parallel.h:[0-9]*: cites Note \[Kernel dispatch\] in gemm.cpp, but it is defined in src/cpu/dispatch.h$'
  '^docs/ARCHITECTURE.md:[0-9]*: names src/cpu/no_such_kernel.cpp, which is not in the tree$'
  '^docs/ARCHITECTURE.md:[0-9]*: links to NO_SUCH_PAGE.md, which is not in the tree$'
  '^docs/ARCHITECTURE.md:[0-9]*: table rows without a header and separator row'
)
for line in "${expected[@]}"; do
  grep -q "$line" <<< "$output" || { echo "the check did not report /$line/: $output"; exit 1; }
done
echo "caught: $output"
