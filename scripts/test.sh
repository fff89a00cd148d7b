#!/usr/bin/env bash
# The whole test suite, in two phases (tests/tiers.py says which test runs where):
#   1. every test that does not judge time or CPU, in parallel processes (pytest-xdist);
#      modules that share a build tree, the Docker engine or a download run in one worker;
#   2. the `timing` tests alone, one after another, with nothing of the suite beside them.
# Then the 25 slowest tests of both phases. Tests start their own redis-server /
# redis-stack-server processes on free ports; nothing here touches servers it did not start.
# `scripts/test.sh --fast` runs the fast tier only (pure logic and parsers, `make test-fast`).
# RBS_TEST_WORKERS sets phase 1's processes (default: twice the CPU count, at least 2).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/.venv/bin:$PATH"
REPORTS="$ROOT/.cache/test-reports"
mkdir -p "$REPORTS"
rm -f "$REPORTS"/*.xml "$REPORTS"/components-*.json "$REPORTS"/cpu-*.json "$REPORTS"/starts-*.json
export RBS_COMPONENT_AUDIT="$REPORTS"  # tests/component_audit.py: what each test starts
# fetched datasets and counted runs' preload snapshots: this run's own, made afresh
export RBS_DATASET_CACHE="$ROOT/.cache/test-datasets"
rm -rf "$RBS_DATASET_CACHE"
# most tests wait on servers, tools and sleeps (a whole run used ~37 % of the CPU with one
# worker per core): twice as many workers as cores
WORKERS="${RBS_TEST_WORKERS:-$(( $(nproc) * 2 ))}"
if [ "$WORKERS" -lt 2 ]; then WORKERS=2; fi
PYTEST=(.venv/bin/pytest -q -ra --timeout=900 -p no:cacheprovider)
unset PYTHONDONTWRITEBYTECODE  # pytest keeps its rewritten test modules, every process its bytecode
# the tests start `rbs` as a process hundreds of times: each compiled the whole package again
# (~0.4 s of CPU) when the environment says PYTHONDONTWRITEBYTECODE; compiled once here
# (Python reads the cached bytecode whatever that variable says)
.venv/bin/python -m compileall -q -j 0 redis_benchmarks_spec tests benchmarks >/dev/null
# the machine's speed beside the suite's time (the suite's minutes moved 1.3-4x between VMs
# of one kind, docs/development.md): one core's pure-Python loop, best of 5, taken before
# any test loads the machine
.venv/bin/python -c 'import timeit
best = min(timeit.repeat("sum(range(10**6))", number=5, repeat=5)) / 5
print(f"machine: sum(range(10**6)) in {best * 1000:.1f} ms (one core, best of 5)")'

if [ "${1:-}" = "--fast" ]; then
  shift
  # worksteal: an idle worker takes tests queued on a busy one (under the default `load`,
  # the Monte Carlo checks of test_false_decisions landed on one worker, 68 of the tier's 113
  # CPU-s, and the tier took 110 s of wall on 2 CPUs)
  RBS_FAST_TIER=1 "${PYTEST[@]}" -n "$WORKERS" --dist worksteal -m fast \
    --junitxml="$REPORTS/fast.xml" tests "$@"
  exec .venv/bin/python scripts/slowest.py "$REPORTS/fast.xml"
fi

# the machine's CPU over a phase (every process, the tests' daemons and Docker's included):
# "busy" near 100 % means more processes would not make the phase shorter
cpu_ticks() { awk '/^cpu / {print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
cpu_used() {  # $1: "busy idle" at the phase's start; prints the share busy since
  read -r busy0 idle0 <<<"$1"; read -r busy1 idle1 <<<"$(cpu_ticks)"
  echo "$(( 100 * (busy1 - busy0) / (busy1 - busy0 + idle1 - idle0 + 1) )) % of $(nproc) CPUs busy"
}
started=$SECONDS
ticks=$(cpu_ticks)
set +e
# --no-loadscope-reorder: the groups go out in the order tests/conftest.py gave them, the
# longest first (tests/tiers.py LONG_GROUPS), not pytest-xdist's most-tests-first
RBS_TEST_PHASE=parallel "${PYTEST[@]}" -n "$WORKERS" --dist loadgroup --no-loadscope-reorder \
  -m "not timing" \
  --junitxml="$REPORTS/parallel.xml" tests "$@"
parallel=$?
echo "phase 1 (parallel, $WORKERS processes): $((SECONDS - started)) s, $(cpu_used "$ticks"), exit $parallel"
started=$SECONDS
ticks=$(cpu_ticks)
RBS_TEST_PHASE=timing "${PYTEST[@]}" -p no:xdist -m timing --junitxml="$REPORTS/timing.xml" tests "$@"
timing=$?
echo "phase 2 (timing tests alone): $((SECONDS - started)) s, $(cpu_used "$ticks"), exit $timing"
set -e
.venv/bin/python scripts/slowest.py "$REPORTS/parallel.xml" "$REPORTS/timing.xml"
# the whole suite: the count of tests that start real components must not fall (issue 41)
components=0
if [ "$#" -eq 0 ]; then
  .venv/bin/python scripts/components.py "$REPORTS" || components=$?
fi
# pytest's 5 is "no test collected": fine for one phase of a selection, a defect for both
if [ "$parallel" -eq 5 ] && [ "$timing" -eq 5 ]; then
  echo "no test ran" >&2
  exit 5
fi
for code in "$parallel" "$timing" "$components"; do
  if [ "$code" -ne 0 ] && [ "$code" -ne 5 ]; then exit "$code"; fi
done
