#!/usr/bin/env bash
# scripts/run_tests.sh - lint, type-check and test the workspace.
#
#   1. ruff check over src/ and test/                      (fatal)
#   2. the import contract between packages (test/import_contract.py)  (fatal)
#   3. mypy, strict, over every Python package of src/ (their manifests declare them:
#      scripts/workspace.py)  (fatal)
#   4. pytest over src/*/test and test/ (config: pytest.ini at the root), in two sessions: everything that
#      starts no graph (unit tests, LLM backends, the real embedded model) on 2 pytest-xdist workers
#      (MONOLOGUE_TEST_WORKERS), then the system tests (`system` mark; collected only from test/ and any
#      src/*/test whose files mention `mark.system`) one at a time
#      (MONOLOGUE_SYSTEM_WORKERS=2: whole modules on 2 workers; measured slower on 2 cores, because the
#      longest system tests are CPU-bound on the embedded LLM); a last line totals both.
#      With arguments, one session of what they select.
#
# --fast (`make test-fast`, the developer loop): steps 1-3, then only the unit tests (no system,
# slow or llm marks), on both cores with pytest-xdist.
#
# Expects a set-up workspace (`bash scripts/setup.sh`, which `make test` runs
# first). Extra arguments go to pytest, e.g.
#     scripts/run_tests.sh -k transcript -x
# Options (before any pytest arguments):
#   --lint-only     steps 1 and 2 only
#   --no-lint       step 4 only
#   --fast          steps 1-3, then the unit tests on 2 workers (make test-fast)
# Exit status: the first failing lint step's, else pytest's. pytest's "no tests
# collected" (5) is reported as a failure, because then truly nothing ran;
# set MONOLOGUE_ALLOW_NO_TESTS=1 to turn that into success.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

LINT=1
TESTS=1
FAST=0
while [ $# -gt 0 ]; do
  case "$1" in
    --lint-only) TESTS=0; shift ;;
    --no-lint) LINT=0; shift ;;
    --fast) FAST=1; shift ;;
    *) break ;;
  esac
done

# shellcheck disable=SC1091
. "$ROOT/scripts/env.sh"

_now() { date +%s.%N; }
_since() { awk -v a="$1" -v b="$(_now)" 'BEGIN { printf "%.1f", b - a }'; }

# Python files under the given directories (caches and build trees excluded).
have_py_files() {
  [ -n "$(find "$@" \( -name __pycache__ -o -name '.*' -o -name build -o -name install \) -prune \
          -o -name '*.py' -type f -print -quit 2>/dev/null)" ]
}

if [ "$LINT" = 1 ]; then
  # ---- ruff --------------------------------------------------------------
  lint_dirs=()
  for d in src test; do [ -d "$d" ] && lint_dirs+=("$d"); done
  if [ "${#lint_dirs[@]}" -gt 0 ] && have_py_files "${lint_dirs[@]}"; then
    t0="$(_now)"
    echo "==> ruff check ${lint_dirs[*]}"
    if ! ruff check --no-cache --output-format=concise "${lint_dirs[@]}"; then
      echo "run_tests.sh: ruff failed; most findings are fixed by 'make fix' (ruff check --fix src test)" >&2
      exit 1
    fi
    echo "<== ruff: ok ($(_since "$t0")s)"
  else
    echo "==> ruff: no Python files under src/ or test/ yet - skipped"
  fi

  # ---- import contract ---------------------------------------------------
  t0="$(_now)"
  echo "==> import contract (test/import_contract.py)"
  python "$ROOT/test/import_contract.py" "$ROOT/src"
  echo "<== import contract: ok ($(_since "$t0")s)"

  # ---- mypy ----------------------------------------------------------------
  # Every Python package of src/ (the packages' manifests say which, scripts/workspace.py), strict.
  t0="$(_now)"
  mapfile -t py_pkgs < <(python "$ROOT/scripts/workspace.py" --python-packages)
  echo "==> mypy (strict) over ${#py_pkgs[@]} packages of src/"
  MYPYPATH="$(python "$ROOT/scripts/workspace.py" --python-paths)" \
    mypy --config-file "$ROOT/mypy.ini" "${py_pkgs[@]}"
  echo "<== mypy: ok ($(_since "$t0")s)"
fi

[ "$TESTS" = 1 ] || exit 0

# ---- pytest ----------------------------------------------------------------
test_dirs=()
for d in src/*/test test; do
  [ -d "$d" ] && test_dirs+=("$d")
done
if [ "${#test_dirs[@]}" -eq 0 ]; then
  echo "run_tests.sh: no test directories (src/*/test, test/) exist" >&2
  [ "${MONOLOGUE_ALLOW_NO_TESTS:-0}" = 1 ] && exit 0
  exit 5
fi

workers="${MONOLOGUE_TEST_WORKERS:-2}"
run_pytest() {  # run_pytest <label> <pytest args...>: one pytest session over dirs (default: test_dirs)
  local label="$1" t0 rc
  shift
  local dirs=("${test_dirs[@]}")
  [ "${#session_dirs[@]}" -gt 0 ] && dirs=("${session_dirs[@]}")
  t0="$(_now)"
  echo "==> pytest ($label) ${dirs[*]} $*"
  set +e
  python -m pytest -c "$ROOT/pytest.ini" --rootdir "$ROOT" "${dirs[@]}" "$@" 2>&1 | tee "$PYTEST_LOG"
  rc="${PIPESTATUS[0]}"
  set -e
  echo "<== pytest ($label): exit $rc ($(_since "$t0")s)"
  # the counts of pytest's closing line, for the total below
  local line n word
  line="$(grep -E '(passed|failed|errors?|skipped|no tests ran).* in [0-9.]+s' "$PYTEST_LOG" | tail -n 1)"
  for word in passed failed skipped error; do
    n="$(echo "$line" | grep -oE "[0-9]+ ${word}" | head -n 1 | grep -oE '^[0-9]+' || true)"
    COUNTS[$word]=$(( ${COUNTS[$word]} + ${n:-0} ))
  done
  return "$rc"
}
session_dirs=()  # set: the next run_pytest collects only these directories
PYTEST_LOG="$(mktemp)"
trap 'rm -f "$PYTEST_LOG"' EXIT
declare -A COUNTS=([passed]=0 [failed]=0 [skipped]=0 [error]=0)
t_all="$(_now)"
rc=0
if [ "$FAST" = 1 ]; then
  # the developer loop: unit tests only, on both cores
  run_pytest "unit tests on $workers workers" -m "not system and not slow and not llm" -n "$workers" \
    --durations=10 "$@" || rc=$?
elif [ "$#" -gt 0 ]; then
  run_pytest "selected" "$@" || rc=$?  # what the caller asked for, as one session
else
  # make test: everything that starts no graph (unit tests, the LLM backends and the real model) on both
  # cores, then the system tests one at a time (each starts its own graph of processes). On 2 workers
  # (each on its own ROS domain) a fresh-clone run took 841 s against 766 s one at a time.
  run_pytest "unit and LLM tests on $workers workers" -m "not system" -n "$workers" || rc=$?
  sys_workers="${MONOLOGUE_SYSTEM_WORKERS:-1}"
  if [ "$sys_workers" -gt 1 ]; then
    sys_args=(-n "$sys_workers" --dist loadfile)
    sys_label="system tests on $sys_workers workers"
  else
    sys_args=(-p no:xdist)
    sys_label="system tests one at a time"
  fi
  # only the directories that hold system tests (test/, and any src/*/test that marks one): collecting the
  # ~1,900 unit tests of src/*/test only to deselect them took ~23 s of CPU
  session_dirs=()
  for d in "${test_dirs[@]}"; do
    if [ "$d" = test ] || grep -rqs --include='*.py' 'mark\.system' "$d"; then session_dirs+=("$d"); fi
  done
  run_pytest "$sys_label" -m "system" "${sys_args[@]}" || { r=$?; [ "$rc" -eq 0 ] && rc=$r; }
  session_dirs=()
fi
echo "pytest took $(_since "$t_all")s in all"
echo "total: ${COUNTS[passed]} passed, $(( ${COUNTS[failed]} + ${COUNTS[error]} )) failed, ${COUNTS[skipped]} skipped"
if [ "$rc" -eq 5 ]; then
  if [ "${MONOLOGUE_ALLOW_NO_TESTS:-0}" = 1 ]; then
    echo "run_tests.sh: pytest collected no tests (allowed by MONOLOGUE_ALLOW_NO_TESTS=1)"
    exit 0
  fi
  echo "run_tests.sh: FAILURE: pytest collected no tests, so nothing was tested" >&2
fi
exit "$rc"
