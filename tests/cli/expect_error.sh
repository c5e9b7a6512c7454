# Sourced by CLI tests: `expect_error CODE TEXT ARGS...` runs "$ember" ARGS and fails the test
# unless it exits with CODE and its stderr contains TEXT. Needs `ember` and `work` set.
expect_error() {
  local code=$1 text=$2
  shift 2
  set +e
  "$ember" "$@" >"$work/out.log" 2>"$work/err.log"
  local got=$?
  set -e
  [[ $got -eq $code ]] || { echo "exit $got, expected $code: $*"; cat "$work/err.log"; exit 1; }
  grep -qF -- "$text" "$work/err.log" || { echo "expected '$text' in:"; cat "$work/err.log"; exit 1; }
}
