#!/usr/bin/env bash
# Runs one of the examples that read data files in a fresh directory holding them (made by
# example_data) and checks what it prints:
#   run_with_data.sh EXAMPLE_DATA WORK_DIR mnist        EXAMPLE  generated images: accuracy >= 0.9
#   run_with_data.sh EXAMPLE_DATA WORK_DIR mnist_digits EXAMPLE  scikit-learn's digits in MNIST's
#                                                                layout: accuracy >= 0.8
#   run_with_data.sh EXAMPLE_DATA WORK_DIR digits       EXAMPLE  scikit-learn's digits: >= 0.97
#   run_with_data.sh EXAMPLE_DATA WORK_DIR custom       EXAMPLE  generated images: runs to the end
#   run_with_data.sh EXAMPLE_DATA WORK_DIR dcgan        EXAMPLE  generated images, --epochs 1:
#                                                                30 batches, 3 finite loss lines
# The digits file comes from scripts/fetch_digits; without it those tests are skipped (77).
set -euo pipefail
tool=$1 dir=$2 mode=$3 example=$4
rm -rf "$dir" && mkdir -p "$dir"
csv=${EMBER_DIGITS_CSV:-${XDG_CACHE_HOME:-$HOME/.cache}/ember/digits/digits.csv.gz}

need_digits() {
  if [[ ! -f $csv ]]; then
    echo "SKIP: $csv not found (scripts/fetch_digits fetches it)"
    exit 77
  fi
}

# Runs the example in $dir with the given arguments, timed; then checks its last "Accuracy: X".
run_and_check() {
  local minimum=$1 what=$2
  shift 2
  local start accuracy seconds
  start=$(date +%s.%N)
  (cd "$dir" && "$example" "$@") > "$dir/out.txt"
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  accuracy=$(grep -o 'Accuracy: [0-9.]*' "$dir/out.txt" | tail -1 | cut -d' ' -f2)
  echo "$what: final test accuracy $accuracy in $seconds s"
  awk -v a="$accuracy" -v m="$minimum" 'BEGIN { exit !(a >= m) }' || {
    echo "FAIL: accuracy $accuracy < $minimum"
    cat "$dir/out.txt"
    exit 1
  }
}

case $mode in
  mnist)
    "$tool" mnist "$dir"
    run_and_check 0.9 "mnist.cpp on generated MNIST-style images"
    ;;
  mnist_digits)
    need_digits
    "$tool" digits "$csv" "$dir"
    run_and_check 0.8 "mnist.cpp unchanged (10 epochs of SGD) on scikit-learn's digits in MNIST's layout"
    ;;
  digits)
    need_digits
    run_and_check 0.97 "digits.cpp on scikit-learn's digits (1437 train / 360 test)" "$csv"
    ;;
  custom)
    "$tool" custom "$dir"
    (cd "$dir" && "$example") > "$dir/out.txt"
    [[ $(grep -c 'Test Loss' "$dir/out.txt") -eq 10 ]] || { echo "FAIL: expected 10 test lines"; cat "$dir/out.txt"; exit 1; }
    tail -2 "$dir/out.txt"
    ;;
  dcgan)
    "$tool" mnist "$dir"
    (cd "$dir" && "$example" --epochs 1) > "$dir/out.txt"
    # Each logged line: "\r[ 1/ 1][ 10/ 30] D_loss: 0.3709 | G_loss: 5.0046"; both losses are
    # sums of binary cross entropies, so finite and positive (printf writes nan/inf otherwise).
    awk '/D_loss/ { n++; if ($0 !~ /^\r?\[ 1\/ 1\]\[ *[123]0\/ 30\] D_loss: [0-9]+\.[0-9]+ \| G_loss: [0-9]+\.[0-9]+$/) bad = 1
                    split($0, loss, /D_loss: | \| G_loss: /); if (loss[2] <= 0 || loss[3] <= 0) bad = 1 }
         END { exit !(n == 3 && !bad) }' "$dir/out.txt" && grep -q '^Training complete!$' "$dir/out.txt" || {
      echo "FAIL: expected 3 lines of finite positive losses and 'Training complete!'"; cat "$dir/out.txt"; exit 1; }
    cat "$dir/out.txt"
    # A bad option or value: the error and the usage, exit status 1 (the example's own handling).
    for bad in "--bogus 1" "--epochs x" "--epochs"; do
      # shellcheck disable=SC2086  # $bad holds the arguments
      status=0
      (cd "$dir" && "$example" $bad) > "$dir/bad.txt" 2>&1 || status=$?
      if [[ $status -ne 1 ]] || ! grep -q 'Usage: cpp/dcgan example' "$dir/bad.txt"; then
        echo "FAIL: '$bad' should print the usage and exit 1 (exit status $status)"; cat "$dir/bad.txt"; exit 1
      fi
    done
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
