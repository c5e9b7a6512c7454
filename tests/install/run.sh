#!/bin/sh
# Installs an ember build into a temporary prefix, then configures and builds the project
# in this folder against it with find_package(ember CONFIG), runs it and checks its output.
# Usage: run.sh BUILD_DIR [CMAKE] [CXX_COMPILER]
set -eu
build_dir=$1
cmake=${2:-cmake}
cxx=${3:-c++}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$cmake" --install "$build_dir" --prefix "$work/prefix" --component library > "$work/install.log"
"$cmake" -S "$here" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
"$cmake" --build "$work/build" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }

output=$("$work/build/app")
expected='matmul sum 30, grad 6
[matmul] shapes [2, 3] and [2, 3] cannot be multiplied (3 != 2)'
if [ "$output" != "$expected" ]; then
  printf 'unexpected output:\n%s\nexpected:\n%s\n' "$output" "$expected"
  exit 1
fi
echo "installed ember works from an outside project"
