#!/usr/bin/env bash
# `make run`: a quick, representative local run (a few minutes): a handful of suites across
# data types, each against a fresh redis-server, results pushed to the embedded datasink.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
RBS=.venv/bin/rbs
SELECTION="${RBS_DEMO_TESTS:-^redis-benchmark-(1Kkeys-string-get-100B|string-set-100B|100Kkeys-hash-hget-100B|list-lpush-100B|100Kkeys-zset-zrangebyscore|ping-inline)}"
TEST_TIME="${RBS_DEMO_TEST_TIME:-3}"

echo "== suites: $($RBS suites list | grep -c 'redis-benchmark-' || true) redis-benchmark suites in test-suites/"
echo "== running a quick selection (--test-time $TEST_TIME): $SELECTION"
set +e
# oss-standalone only: a few of these suites also name io-threads, replica and cluster
# topologies (try `--topology oss-cluster-3-primaries`)
$RBS run --tests-regexp "$SELECTION" --topology oss-standalone --test-time "$TEST_TIME" --results-dir results
rc=$?
set -e
echo
$RBS datasink status || true
cat <<MSG

More:
  .venv/bin/rbs suites list                         # every suite
  .venv/bin/rbs run --groups-regexp hash            # all hash suites, full duration
  .venv/bin/rbs run --test-time 5                   # everything, 5 s per test
  .venv/bin/rbs compare --baseline-dir A --comparison-dir B   # statistics between two runs
  .venv/bin/rbs run --baseline-server A --comparison-server B --repetitions 10  # interleaved A/B
  .venv/bin/rbs datasink down                       # stop this checkout's datasink (never another's)
MSG
exit $rc
