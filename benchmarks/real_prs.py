"""Real Redis pull requests as a benchmark: does ``rbs run`` see what the PR claimed?

For each pull request below (a squash-merge commit of Redis ``unstable`` and its parent, from
the vendored bundle, see ``benchmarks/redis_history.py``): build ``redis-server`` of both
commits (cached by sha under ``.cache/redis-history/bin/``), then run the A/B through the
normal CLI twice, and print the claim next to what was measured:

* instructions: ``rbs run --baseline-server PARENT --comparison-server MERGE --repetitions 5
  --profilers instructions --test SUITE --format json`` (callgrind on hosts without hardware
  counters: its throughput is Valgrind's, so it is not used);
* throughput: the same without profilers, ``--test-time`` seconds per run.

The control PR's effect is on cache behaviour, not on the work done per command: it must not
show in instructions. Heavy (builds, ~5-10 min per PR): run under ``flock
/tmp/rbs-heavy.lock``. Not part of ``make test``.

    .venv/bin/python benchmarks/real_prs.py [--pr 11552 --pr 10574] [--repetitions 5]
        [--test-time 5] [--no-throughput] [--build-only] [--list]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import redis_history as history

RBS = str(history.ROOT / ".venv" / "bin" / "rbs")
SESSIONS = history.CACHE / "sessions"
RBS_TIMEOUT_S = 3 * 3600
INSTRUCTIONS_METRIC = "instructions_per_op"
THROUGHPUT_METRIC = "ALL_STATS.Totals.Ops/sec"
#: the PRs' claims are about one server process (suites such as GET also name io-threads and
#: replica topologies, which would quadruple the callgrind time)
TOPOLOGY = "oss-standalone"
CHANGED = ("REGRESSION", "IMPROVEMENT")


@dataclass(frozen=True)
class PullRequest:
    """A merged PR: its squash-merge commit (the parent is ``merge^``), the effect its
    message claims (quoted), the suites of test-suites/ that exercise it, and whether fewer
    instructions per op are expected (None: the control, no change expected)."""

    number: int
    merge: str
    title: str
    claim: str
    suites: tuple[str, ...]
    fewer_instructions: bool | None = True


PRS = (
    PullRequest(11552, "61c85a2b2081dffaf45eb8c6b7754b8d9a80c60d",
                "Speedup GEODIST with fixedpoint_d2string",
                "This can achieve about 35% increase in the achievable ops/sec.",
                ("redis-benchmark-1Kkeys-geo-geodist",)),
    PullRequest(11541, "2d80cd7840d4a6ac0305c9192fc6a5de43759570",
                "Reintroduce lua argument cache in luaRedisGenericCommand",
                "it indeed provides some 5% performance improvement.",
                ("redis-benchmark-1Kkeys-scripting-eval-get",)),
    PullRequest(10574, "a642947e04168b40aea6cec666927a9e653035e6",
                "Optimize stream id sds creation on XADD key *",
                "(~20% saved cpu cycles) ... The expected reduction in CPU cycles is around "
                "9-10% ... this brought another ~10% improvement",
                ("redis-benchmark-stream-xadd-100B",)),
    PullRequest(11779, "f3c6f9c2f44a7baf14de0f98b2b89c5c6c2781ba",
                "Optimize ZRANGE replies WITHSCORES in case of integer scores",
                "This results by some 50% performance improvement in certain cases of integer "
                "scores",
                ("redis-benchmark-1Kkeys-zset-zrange-100-withscores",)),
    PullRequest(11602, "c3fb48da8b76ee143d1c380ccf9899752607c5d5",
                "Reduce rewriteClientCommandVector usage on EXPIRE command",
                "around 7% of CPU cycles spent on rewriteClientCommandVector ... reduces the "
                "overhead in half",
                ("redis-benchmark-1Kkeys-generic-expire",)),
    PullRequest(10697, "6a6e911f126ceacc847c82d592aaf41cce310162",
                "Moving client flags to a more cache friendly position (control)",
                "we regain the lost 2% of CPU cycles since v6.2 (from 630532.57 to 647449.80 "
                "ops/sec)",
                ("redis-benchmark-1Kkeys-string-get-100B",), fewer_instructions=None),
)


@dataclass
class Verdict:
    """One row of a comparison: verdict, change and interval in %, pairs used."""

    verdict: str
    change_pct: float | None
    ci: tuple[float, float] | None
    pairs: int
    reason: str = ""

    def line(self) -> str:
        change = "n/a" if self.change_pct is None else f"{self.change_pct:+.2f}%"
        ci = "" if self.ci is None else f" [{self.ci[0]:+.2f}%, {self.ci[1]:+.2f}%]"
        why = f" ({self.reason})" if self.reason and self.verdict not in CHANGED else ""
        return f"{self.verdict} {change}{ci}, {self.pairs} pairs{why}"


def _verdict(row: dict[str, Any]) -> Verdict:
    low, high = row.get("ci_low_pct"), row.get("ci_high_pct")
    pairs = min(int(row.get("n_baseline") or 0), int(row.get("n_comparison") or 0))
    return Verdict(str(row.get("verdict", "?")), row.get("change_pct"),
                   None if low is None or high is None else (low, high), pairs,
                   str(row.get("reason", "")))


def parse_report(report: dict[str, Any], profiles_ab: dict[str, Any] | None
                 ) -> dict[str, dict[str, Verdict]]:
    """``{"throughput"|"instructions": {test: Verdict}}`` from ``rbs run --format json``
    (A/B) and the session's ``profiles-ab.json``. The one place that knows the JSON shapes:
    instruction rows may come as a top-level ``instructions`` section (a report with
    ``rows``, or a list of rows), as rows of metric ``instructions_per_op``, or only in
    ``profiles-ab.json`` (the shape before the instruction verdicts joined the JSON)."""
    out: dict[str, dict[str, Verdict]] = {"throughput": {}, "instructions": {}}
    for row in report.get("rows", []):
        kind = "instructions" if row.get("metric") == INSTRUCTIONS_METRIC else "throughput"
        out[kind][row["test"]] = _verdict(row)
    section = report.get("instructions") or (profiles_ab or {}).get("instructions") or {}
    rows = section if isinstance(section, list) else section.get("rows", [])
    for row in rows:
        out["instructions"].setdefault(row["test"], _verdict(row))
    return out


@dataclass
class Session:
    """One ``rbs run`` A/B: its verdicts, exit code, minutes, and where its results are."""

    verdicts: dict[str, dict[str, Verdict]]
    exit_code: int
    minutes: float
    results_dir: Path
    error: str = ""
    problems: list[str] = field(default_factory=list)


def raw_pair_changes(results_dir: Path, metric: str) -> list[float]:
    """Per-pair % change (comparison vs baseline, same repetition) of ``metric``, read
    straight from the session's result.json files, every ok run kept (disturbed or not):
    the evidence next to the verdict, not a verdict."""
    sides: dict[str, dict[str, float]] = {"baseline": {}, "comparison": {}}
    for path in results_dir.rglob("result.json"):
        rel = path.relative_to(results_dir).parts  # <stamp>/<side>/rep-NN/<test>/<topo>/...
        if len(rel) < 5 or rel[1] not in sides:
            continue
        doc = json.loads(path.read_text())
        value = doc.get("metrics", {}).get(metric)
        if doc.get("status") == "ok" and isinstance(value, (int, float)) and value > 0:
            sides[rel[1]]["/".join(rel[2:5])] = float(value)
    base, comp = sides["baseline"], sides["comparison"]
    return [100.0 * (comp[k] / base[k] - 1.0) for k in sorted(base.keys() & comp.keys())]


def raw_line(changes: list[float]) -> str:
    if not changes:
        return "no pair of ok runs"
    return (f"median {statistics.median(changes):+.2f}% (pairs {min(changes):+.2f}% .. "
            f"{max(changes):+.2f}%), {len(changes)} pairs")


def run_session(pr: PullRequest, binaries: tuple[Path, Path], extra: list[str],
                results_dir: Path) -> Session:
    """``rbs run`` in A/B mode, parent as baseline, merge as comparison."""
    argv = [RBS, "run", "--baseline-server", str(binaries[0]), "--comparison-server",
            str(binaries[1]), "--no-datasink", "--format", "json", "--results-dir",
            str(results_dir), "--hash", pr.merge, "--topology", TOPOLOGY, *extra]
    for suite in pr.suites:
        argv += ["--test", suite]
    start = time.monotonic()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RBS_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        return Session({}, -1, (time.monotonic() - start) / 60, results_dir,
                       f"rbs run timed out after {RBS_TIMEOUT_S}s")
    minutes = (time.monotonic() - start) / 60
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "rbs.stdout").write_text(done.stdout)
    (results_dir / "rbs.stderr").write_text(done.stderr)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Session({}, done.returncode, minutes, results_dir, f"no JSON report: {tail}")
    profiles = sorted(results_dir.rglob("profiles-ab.json"))
    profiles_ab = json.loads(profiles[-1].read_text()) if profiles else None
    return Session(parse_report(report, profiles_ab), done.returncode, minutes, results_dir,
                   problems=[str(p) for p in report.get("problems", [])])


def build_pair(repo: Path, pr: PullRequest) -> tuple[tuple[Path, Path], float]:
    """Binaries of parent and merge commit, and the minutes spent building them now."""
    merge = history.full_sha(repo, pr.merge)
    parent = history.full_sha(repo, merge + "^")
    built = [history.build(repo, sha) for sha in (parent, merge)]
    return (built[0].binary, built[1].binary), sum(b.build_seconds for b in built) / 60


def expected(pr: PullRequest, verdict: Verdict | None) -> str:
    """'as claimed', 'wrong sign', 'not decided' or, for the control, 'not flagged'/'FLAGGED'."""
    if verdict is None:
        return "no verdict"
    if pr.fewer_instructions is None:
        return "FLAGGED" if verdict.verdict in CHANGED else "not flagged"
    if verdict.verdict not in CHANGED or verdict.change_pct is None:
        return "not decided"
    fewer = verdict.change_pct < 0
    return "as claimed" if fewer == pr.fewer_instructions else "wrong sign"


def problems_line(problems: list[str]) -> str:
    """The session's problems in one line: how many runs were disturbed, the rest verbatim."""
    disturbed = [p for p in problems if "disturbed" in p]
    rest = [p.splitlines()[0] for p in problems if "disturbed" not in p]
    parts = ([f"{len(disturbed)} runs disturbed (their pairs left out)"] if disturbed else [])
    return "; ".join(parts + rest[:3]) or "none"


def print_pr(pr: PullRequest, sessions: dict[str, Session], build_minutes: float) -> str:
    """The PR's block; returns how the instruction verdict compares with the claim."""
    print(f"PR #{pr.number} {pr.title} ({pr.merge[:10]} vs parent)")
    print(f"  claim: \"{pr.claim}\"")
    outcome = "no verdict"
    for kind, session in sessions.items():
        if session.error:
            print(f"  {kind}: ERROR {session.error} ({session.minutes:.1f} min)")
            continue
        rows = session.verdicts.get(kind, {})
        if not rows:
            print(f"  {kind:<12} no verdict row; problems: {problems_line(session.problems)}")
        for test, verdict in sorted(rows.items()):
            print(f"  {kind:<12} {test}: {verdict.line()}")
            if kind == "instructions":
                outcome = expected(pr, verdict)
        metric = INSTRUCTIONS_METRIC if kind == "instructions" else THROUGHPUT_METRIC
        print(f"  {kind:<12} raw result.json: "
              f"{raw_line(raw_pair_changes(session.results_dir, metric))}")
        print(f"  {kind:<12} exit {session.exit_code}, {session.minutes:.1f} min")
    print(f"  build {build_minutes:.1f} min; instructions: {outcome}", flush=True)
    return outcome


def run_pr(repo: Path, pr: PullRequest, args: argparse.Namespace, stamp: str) -> str:
    binaries, build_minutes = build_pair(repo, pr)
    if args.build_only:
        print(f"PR #{pr.number}: {binaries[0]} {binaries[1]} (build {build_minutes:.1f} min)")
        return "built"
    base = SESSIONS / stamp / f"pr{pr.number}"
    reps = ["--repetitions", str(args.repetitions)]
    sessions = {"instructions": run_session(pr, binaries, [*reps, "--profilers", "instructions"],
                                            base / "instructions")}
    if not args.no_throughput:
        sessions["throughput"] = run_session(
            pr, binaries, [*reps, "--test-time", str(args.test_time)], base / "throughput")
    return print_pr(pr, sessions, build_minutes)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pr", type=int, action="append", help="only these PR numbers")
    ap.add_argument("--repetitions", type=int, default=5, help="pairs per A/B (default 5)")
    ap.add_argument("--test-time", type=int, default=5,
                    help="seconds per run of the throughput A/B (default 5)")
    ap.add_argument("--no-throughput", action="store_true", help="instructions A/B only")
    ap.add_argument("--build-only", action="store_true", help="build the binaries and stop")
    ap.add_argument("--list", action="store_true", help="list the PRs and stop")
    args = ap.parse_args()
    chosen = [pr for pr in PRS if not args.pr or pr.number in args.pr]
    if args.list or not chosen:
        for pr in PRS:
            print(f"#{pr.number} {pr.merge[:10]} {','.join(pr.suites)}: {pr.title}")
        return 0 if chosen else 2
    try:
        repo = history.bare_repo()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        outcomes = {pr.number: run_pr(repo, pr, args, stamp) for pr in chosen}
    except history.HistoryError as exc:
        print(f"real_prs: {exc}", file=sys.stderr)
        return 2
    print("summary: " + ", ".join(f"#{n} {o}" for n, o in outcomes.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
