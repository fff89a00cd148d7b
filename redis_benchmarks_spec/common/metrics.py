"""Every metric the project records, declared once: what it is and how it is judged.

A metric's name (as stored in a result and a time series), unit, better direction, kind,
how its noise behaves, its noise floor and the words people read are written here and
nowhere else. The engine, the watch, the datasink, the PR comment, alerts, ``rbs compare``
and reports ask :func:`metric` (a new metric is one entry below).

Kinds, and what their noise does:

* **count** (instructions per op, callgrind): the work a build does. Foreign load does not
  move it (335.6 M / 334.7 M / 334.9 M instructions for 50,000 SETs, CV 0.15 %): it is
  *deterministic*, and 3 pairs that agree decide on a host that never ran an A/A: the kind
  ships a conservative prior (:data:`COUNT_PRIOR_SD`), pooled with the pairs' own spread
  until the host has recorded its own (``analysis.noise``).
* **memory** (after the preload): the bytes a build keeps for a dataset. The same build and
  dataset give the same bytes (A/A spread well under 0.1 %, docs/memory.md): deterministic.
  The same figures after the run (``.after_run``) hold what the load allocated and are timed.
* **server CPU per op**: the server's getrusage time over the commands it processed. Time
  lost to other tenants does not count, so its pairs spread 3.4 % (10 s runs) to 7-11 %
  (2 s runs) on this 2-core VM where ops/sec spreads 5-15 % (docs/statistics.md).
* **throughput**: ops/sec. Host-dependent: 10-15 % run to run here, A/A sessions on quiet
  cloud guests moved by up to 5 % (issue 28).
* **latency**: client-seen latencies and server timings. Measured A/A pair spreads here
  (benchmarks/latency_prior.py): average and median latency 10-18 %, as throughput's; p99
  20-33 %, so tails carry a wider prior of their own.

A count is deterministic only where one thread does the work: with I/O threads (their spin
is counted: 4,460 instructions per GET standalone, 138,170 with 2 io-threads and 236,608 with
4 for the whole process, docs/profiling.md), replicas or a cluster (replication and cluster
bus traffic run with the timing of the host), the count moves with the host. Such a test's
counts are judged as :func:`host_dependent` says, for the tests
:func:`analysis.session_runs.host_dependent_tests` names from their run documents.

Every kind carries a *prior*: the per-pair log-ratio spread assumed on a host that was never
calibrated (``prior_sd``) and the degrees of freedom it is worth (``prior_df``), with where
the figure came from (``prior_source``). A host-dependent kind's prior is a least spread (an
interval is never narrower); a deterministic kind's is pooled with the pairs' own spread, so
it lets 3 pairs decide, and a session noisier than it (F test) is judged on its own pairs.

Metric names follow the exporter's JSONPath translation (``loadgen.exporter``), so a suite may
record a metric not listed here; :func:`metric` then reads its family from the name's
shape (:data:`_FAMILIES`), once, here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

COUNT = "count"
MEMORY = "memory"
SERVER_CPU = "server CPU per op"
THROUGHPUT = "throughput"
LATENCY = "latency"
KINDS = (COUNT, MEMORY, SERVER_CPU, THROUGHPUT, LATENCY)

#: a timed metric's floor without a calibration of that test: real A/A sessions on quiet
#: cloud guests moved by up to 5 % (issue 28), so less is not safe
TIMED_FLOOR_PCT = 5.0
#: ops/sec pairs spread 11-14 % on a quiet 2-core VM, 14-24 % on a quiet 16-vCPU guest and
#: 21-36 % on a busy one (docs/statistics.md): a few pairs that agree by chance must not decide
THROUGHPUT_PRIOR_SD = 0.15
#: server CPU per op: A/A sessions here moved by -0.1 to +1.0 % (40 pairs each,
#: docs/statistics.md), so 2 % is beyond what one build against itself shows
SERVER_CPU_FLOOR_PCT = 2.0
#: the least pair SD of server CPU per op measured on this VM (10 s runs; 2 s runs: 6.9-10.8 %)
SERVER_CPU_PRIOR_SD = 0.034
#: instruction counts repeat to ~0.2 % (callgrind, serverCron left out): 0.5 % is real work
COUNT_FLOOR_PCT = 0.5
#: a dataset's bytes repeat to well under 0.1 % for one build (docs/memory.md)
MEMORY_FLOOR_PCT = 0.5
#: a prior assumed, not measured on the host that judges, is worth this many pairs' dof
PRIOR_DF = 4
#: the per-pair spread of instruction counts a host that never ran an A/A assumes: the most
#: any shipped suite's pairs spread in an A/A on the command-path scope (0.3 %, the bound
#: benchmarks/count_spread.py holds them to; single-threaded SETs spread 0.2 %), worth
#: PRIOR_DF pairs. 3 pairs that agree then decide a change of 0.5 % or more, and NO CHANGE
#: when their mean is within ~0.15 %; pairs noisier than it (two-level counts) are judged on
#: their own spread, from MIN_PAIRS pairs (analysis.paired)
COUNT_PRIOR_SD = 0.003
COUNT_PRIOR = ("the count prior shipped for hosts without an A/A: 0.3 % a pair, the most a "
               "shipped suite's A/A pairs spread")
#: pairs from which a metric's own spread may decide without a prior: 5 in general (two-level
#: instruction counts, from hash seeds, gave 3-4 agreeing pairs in 8-9 % of ten-test A/A
#: sessions: analysis.null_check); 3 for memory after the preload, whose bytes repeat exactly
MIN_PAIRS = 5
MEMORY_MIN_PAIRS = 3
#: the pairs an ``--until-decided`` design spans for a deterministic metric: its pairs agree
#: to well under 1 % (docs/statistics.md), so 6 are enough, and O'Brien-Fleming
#: spending over 40 pairs keeps +0.7 % at a 0.1 % pair spread UNKNOWN at 6 pairs without a
#: prior and at 3 with one; over 6 both decide (tests/test_host_dependent_counts.py)
DETERMINISTIC_MAX_PAIRS = 6
#: the per-pair spread assumed for instruction counts of a threaded, replicated or clustered
#: deployment on a host that never calibrated the test: assumed, not measured (not measured
#: on this VM; 7x the 0.15 % of a single-threaded count), so it widens, never decides alone
HOST_COUNT_PRIOR_SD = 0.01
HOST_COUNT_PRIOR = ("assumed for counts of threaded, replicated or clustered deployments: "
                    "7x the 0.15 % of one thread, not measured")

# --- the rest of the judging policy: the watch, its confirmation, its alerts, precedence ---
#: the watch (``analysis.arrival``) raises a candidate from one new point of a series, not
#: from an interval of pairs: a step of a deterministic kind smaller than this is none.
#: Larger than the 0.5 % floor (COUNT_FLOOR_PCT, MEMORY_FLOOR_PCT) on purpose: that floor
#: judges the interval of several pairs, while one point of a count that spreads ~0.15 %
#: run to run (and ``noise_factor`` times the series' own spread, ``analysis.arrival``)
#: makes a 1 % step unmistakable, and each candidate costs the lab re-runs of two commits
DETERMINISTIC_CANDIDATE_FLOOR_PCT = 1.0
#: a timed series' candidate floor: the timed floor (one point spreads 10-15 % here, and
#: server CPU per op 3.4-11 %, so its 2 % pair floor would raise a candidate on noise)
TIMED_CANDIDATE_FLOOR_PCT = TIMED_FLOOR_PCT
#: the share of a candidate's change (same sign) a confirmation must carry: the watch's
#: re-runs (``analysis.arrival.confirm``) and a bisection's midpoint (``bisection.search``):
#: classifying a known effect needs far fewer pairs than proving each probe significant
CONFIRM_SHARE = 0.5
#: a confirmed change of a deterministic kind smaller than this (every series that
#: confirmed it) is a note in ``rbs history``, not an alert: a real +1 % (a new call per
#: command) is worth a line, not an issue (``notify.watch_confirm``)
DETERMINISTIC_ALERT_FLOOR_PCT = 3.0
#: timed kinds alert on every confirmed change: their candidate floor already asks 5 %
TIMED_ALERT_FLOOR_PCT = 0.0
#: which kind speaks first when the same runs were judged on several (the PR comment's first
#: line, the watch's alert, the order of a report's tables), lowest first: the work a build
#: does decides over the bytes it keeps, and both over timed figures, which foreign load moves
COUNT_PRECEDENCE = 0
MEMORY_PRECEDENCE = 1
TIMED_PRECEDENCE = 2


@dataclass(frozen=True)
class Metric:
    """One metric: its stored name and everything a verdict or a sentence needs of it."""

    name: str
    unit: str
    kind: str
    higher_is_better: bool
    words: str  # what people read: "operations per second"
    floor_pct: float  # the noise floor without a calibration of the test
    deterministic: bool = False  # foreign load does not move it (module doc)
    prior_sd: float = 0.0  # host-dependent kinds: the pair spread assumed uncalibrated
    prior_source: str = ""
    prior_df: int = PRIOR_DF
    min_pairs: int = MIN_PAIRS  # pairs from which its own spread decides without a prior
    # a timed figure is the server's speed only when nothing slowed the server while it was
    # taken; a deterministic one is the same under any profiler
    timed: bool = True
    # the rest of the policy (the constants above say why each value): the watch's candidate
    # floor, the share of a candidate a confirmation carries, the floor under which a
    # confirmed change is a note, not an alert, and the kind's rank when several speak
    candidate_floor_pct: float = TIMED_CANDIDATE_FLOOR_PCT
    confirm_share: float = CONFIRM_SHARE
    alert_floor_pct: float = TIMED_ALERT_FLOOR_PCT
    precedence: int = TIMED_PRECEDENCE

    @property
    def direction(self) -> int:
        """+1 when higher is better, -1 when lower is."""
        return 1 if self.higher_is_better else -1

    @property
    def spread_source(self) -> str:
        """Where the spread of an uncalibrated comparison of this metric comes from."""
        if self.deterministic and self.prior_sd:
            return f"its own pairs pooled with the {self.prior_source}"
        if self.deterministic:
            return "its own pairs (deterministic: foreign load does not move it)"
        return f"{self.kind} prior {100 * self.prior_sd:g} % ({self.prior_source})"


def _count(name: str, words: str, unit: str = "instructions") -> Metric:
    return Metric(name, unit, COUNT, False, words, COUNT_FLOOR_PCT, deterministic=True,
                  timed=False, prior_sd=COUNT_PRIOR_SD, prior_source=COUNT_PRIOR,
                  candidate_floor_pct=DETERMINISTIC_CANDIDATE_FLOOR_PCT,
                  alert_floor_pct=DETERMINISTIC_ALERT_FLOOR_PCT, precedence=COUNT_PRECEDENCE)


def _memory(name: str, words: str, unit: str = "bytes", higher: bool = False) -> Metric:
    return Metric(name, unit, MEMORY, higher, words, MEMORY_FLOOR_PCT, deterministic=True,
                  timed=False, min_pairs=MEMORY_MIN_PAIRS,
                  candidate_floor_pct=DETERMINISTIC_CANDIDATE_FLOOR_PCT,
                  alert_floor_pct=DETERMINISTIC_ALERT_FLOOR_PCT, precedence=MEMORY_PRECEDENCE)


_THROUGHPUT_PRIOR = "A/A pairs on uncalibrated hosts spread 11-36 % (docs/statistics.md)"
#: latency's pair spreads, measured (benchmarks/latency_prior.py --repetitions 10
#: --test-time 2, quiet 2-core VM, 5 suites, docs/statistics.md): average and median latency
#: 10-18 % (median 12 % and 16 %), p99 20-33 % on redis-benchmark's suites (memtier's coarse
#: buckets: 1 %); p99.9 only memtier reports, so it takes p99's
LATENCY_PRIOR_SD = 0.15
TAIL_LATENCY_PRIOR_SD = 0.25
_LATENCY_PRIOR = "A/A pairs of average and median latency spread 10-18 % here (docs/statistics.md)"
_TAIL_PRIOR = "A/A pairs of p99 latency spread 20-33 % here (docs/statistics.md)"


def _throughput(name: str, words: str) -> Metric:
    return Metric(name, "ops/sec", THROUGHPUT, True, words, TIMED_FLOOR_PCT,
                  prior_sd=THROUGHPUT_PRIOR_SD, prior_source=_THROUGHPUT_PRIOR)


def _latency(name: str, words: str, unit: str = "ms", tail: bool = False) -> Metric:
    return Metric(name, unit, LATENCY, False, words, TIMED_FLOOR_PCT,
                  prior_sd=TAIL_LATENCY_PRIOR_SD if tail else LATENCY_PRIOR_SD,
                  prior_source=_TAIL_PRIOR if tail else _LATENCY_PRIOR)


THROUGHPUT_METRIC = "ALL_STATS.Totals.Ops/sec"
INSTRUCTIONS_METRIC = "instructions_per_op"
SERVER_CPU_METRIC = "server_cpu_usec_per_op"
#: not a stored metric: a memory-only session judged on every memory figure
MEMORY_SESSION = "memory"

USED_MEMORY = "used_memory"
DATASET = "used_memory_dataset"
OVERHEAD = "used_memory_overhead"
FRAG_RATIO = "allocator_frag_ratio"
RESIDENT = "allocator_resident"
BYTES_PER_KEY = "bytes_per_key"
#: the memory metrics an A/B judges (after the preload), in report order
MEMORY_METRICS = (USED_MEMORY, DATASET, OVERHEAD, FRAG_RATIO, RESIDENT, BYTES_PER_KEY)
AFTER_RUN_SUFFIX = ".after_run"

_ENTRIES = (
    _throughput(THROUGHPUT_METRIC, "operations per second"),
    _throughput("ALL_STATS.Sets.Ops/sec", "SETs per second"),
    _throughput("ALL_STATS.Gets.Ops/sec", "GETs per second"),
    _latency("ALL_STATS.Totals.Latency", "average latency"),
    _latency("ALL_STATS.Totals.Average_Latency", "average latency"),
    _latency("ALL_STATS.Totals.Percentile_Latencies.p50.00", "median latency"),
    _latency("ALL_STATS.Totals.Percentile_Latencies.p99.00", "p99 latency", tail=True),
    _latency("ALL_STATS.Totals.Percentile_Latencies.p99.90", "p99.9 latency", tail=True),
    _count(INSTRUCTIONS_METRIC, "instructions per operation"),
    _count("instructions_per_op_process", "instructions per operation (whole process)"),
    _count("instructions_per_op_with_timer", "instructions per operation (with serverCron)"),
    Metric(SERVER_CPU_METRIC, "us", SERVER_CPU, False, "server CPU time per operation",
           SERVER_CPU_FLOOR_PCT, prior_sd=SERVER_CPU_PRIOR_SD,
           prior_source="the least pair spread of 10 s runs on a 2-core VM, "
                        "docs/statistics.md"),
    _memory(USED_MEMORY, "memory used"),
    _memory(DATASET, "dataset memory"),
    _memory(OVERHEAD, "memory overhead"),
    _memory(FRAG_RATIO, "allocator fragmentation ratio", unit="ratio"),
    _memory(RESIDENT, "allocator resident memory"),
    _memory(BYTES_PER_KEY, "bytes per key"),
    _memory(MEMORY_SESSION, "memory"),
)
CATALOGUE: dict[str, Metric] = {m.name: m for m in _ENTRIES}

#: metrics a suite records that are not entries: their family read from the name's shape
_FAMILIES: tuple[tuple[re.Pattern[str], Metric], ...] = (
    (re.compile(r"^instructions_", re.IGNORECASE), _count("instructions_*", "instructions")),
    (re.compile(r"(^|[._])p99", re.IGNORECASE), _latency("*latency*", "tail latency", tail=True)),
    (re.compile(r"latenc|percentile|(^|[._])p\d{2}", re.IGNORECASE), _latency("*latency*", "latency")),
    (re.compile(r"usec|msec|FullSync.*Seconds|_time_sec$", re.IGNORECASE),
     _latency("*time*", "time taken", unit="s")),
    (re.compile(r"memory|bytes|allocator_|frag_ratio", re.IGNORECASE), _memory("*memory*", "memory")),
)
_OTHER = _throughput("*", "")


def metric(name: str) -> Metric:
    """The catalogue's entry for ``name``: an entry, a memory figure after the run, or the
    family its shape names (a rate, higher is better, when nothing else fits)."""
    if name in CATALOGUE:
        return CATALOGUE[name]
    if name.endswith(AFTER_RUN_SUFFIX) and name.removesuffix(AFTER_RUN_SUFFIX) in CATALOGUE:
        base = CATALOGUE[name.removesuffix(AFTER_RUN_SUFFIX)]
        # what the load allocated moves with the run: timed, with throughput's safety
        return replace(base, name=name, words=f"{base.words} after the run",
                       deterministic=False, timed=True, floor_pct=TIMED_FLOOR_PCT,
                       min_pairs=MIN_PAIRS,
                       prior_sd=THROUGHPUT_PRIOR_SD, prior_source=_THROUGHPUT_PRIOR,
                       candidate_floor_pct=TIMED_CANDIDATE_FLOOR_PCT,
                       alert_floor_pct=TIMED_ALERT_FLOOR_PCT, precedence=TIMED_PRECEDENCE)
    for pattern, family in _FAMILIES:
        if pattern.search(name):
            return replace(family, name=name, words=family.words or name)
    return replace(_OTHER, name=name, words=name)


def host_dependent(entry: Metric, why: str) -> Metric:
    """``entry`` (a count) as measured in a deployment where it moves with the host (``why``:
    "2 io-threads"): not deterministic, its own spread decides from :data:`MIN_PAIRS` pairs,
    never narrower than a calibration of the test or :data:`HOST_COUNT_PRIOR_SD`."""
    return replace(entry, deterministic=False, min_pairs=MIN_PAIRS,
                   prior_sd=HOST_COUNT_PRIOR_SD,
                   prior_source=f"host-dependent count ({why}): {HOST_COUNT_PRIOR}")


def words(name: str) -> str:
    """What people read for ``name`` ("operations per second")."""
    return metric(name).words


def is_memory(name: str) -> bool:
    """A memory figure of either moment (``used_memory``, ``bytes_per_key.after_run``)."""
    return name.removesuffix(AFTER_RUN_SUFFIX) in MEMORY_METRICS
