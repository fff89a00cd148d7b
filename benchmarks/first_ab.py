"""The first A/B a Redis developer runs: two commits of a real pull request, one suite,
instructions counted, cold and then with both builds cached (issue 63, item 1).

Runs, as a user types it (from the vendored history, ``benchmarks/redis_history.py``)::

    rbs run --baseline-commit <sha>^ --comparison-commit <sha> --source <history>
        --tests-regexp <suite> --profilers instructions --build-dir <fresh folder>

twice: *cold* (a fresh ``--build-dir``: the clone, both builds, the preload snapshots) and
*cached* (the same folder again: no build at all), and prints both wall times with each
build's seconds and kind, the verdict, and the seconds a counted run took here beside the
lab's (docs/lab.md: ~2.7-3 s a counted run, a snapshot and 3,000 profiled requests).
Targets on a 2-core VM: decided in at most 5 minutes cold and 1 minute cached. Run it under
``flock /tmp/rbs-heavy.lock`` on a shared host: it builds Redis twice and runs valgrind::

    RBS_TEST_CACHE=$HOME/.cache/redis-benchmarks-spec-tests \\
        flock /tmp/rbs-heavy.lock .venv/bin/python benchmarks/first_ab.py
    .venv/bin/python benchmarks/first_ab.py --pr 11552 --tests-regexp geodist
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import redis_history as history
from redis_benchmarks_spec.results.document import (
    RunResult,
    find_result_files,
)
from redis_benchmarks_spec.telemetry.profilers.base import COUNTED_REQUESTS

ROOT = Path(__file__).resolve().parents[1]
RBS = ROOT / ".venv" / "bin" / "rbs"
#: the pull requests of the vendored history this knows by number: (squash commit, suites)
PRS = {13499: ("00a8e72c", "smembers"), 11552: ("61c85a2b", "geo-geodist")}
#: the lab's seconds per counted run (docs/lab.md "Measured": 2.7-2.9 s a head run of the
#: replays, cProfile of 4 GET runs 2.86 s each, one CPU of a 2-core VM)
LAB_SECONDS_PER_RUN = (2.7, 3.0)
COLD_TARGET_S = 300
CACHED_TARGET_S = 60
_BUILT = re.compile(r"^(baseline|comparison) ([0-9a-f]{12}): built in (\d+) s \(([^)]*)\)")


@dataclass
class Trial:
    """One ``rbs run``: its wall time, builds, verdict and counted runs."""

    name: str
    seconds: float
    builds: list[str]
    verdict: str
    run_seconds: list[float]
    client_seconds: list[float]  # of each counted run, the client's fixed requests
    returncode: int

    def line(self) -> str:
        runs = f"{len(self.run_seconds)} counted runs, median " \
               f"{statistics.median(self.run_seconds):.1f} s" if self.run_seconds else "no runs"
        builds = "; ".join(self.builds) or "both builds cached"
        return f"{self.name:<7} {self.seconds:6.0f} s  ({builds}; {runs}) -> {self.verdict}"


def _argv(args: argparse.Namespace, repo: Path, sha: str, build_dir: Path,
          results: Path) -> list[str]:
    return [str(RBS), "run", "--baseline-commit", f"{sha}^", "--comparison-commit", sha,
            "--source", str(repo), "--tests-regexp", args.tests_regexp,
            "--profilers", "instructions", "--build-dir", str(build_dir),
            "--results-dir", str(results), "--no-datasink", "--format", "json"]


def _verdict(stdout: str) -> str:
    try:
        report = json.loads(stdout)
    except ValueError:
        return "no report"
    counted = report.get("instructions") or report
    rows = counted.get("rows") or []
    return ", ".join(
        f"{r['verdict']} {r['change_pct']:+.2f} % [{r['ci_low_pct']:+.2f}, "
        f"{r['ci_high_pct']:+.2f}] ({r['metric']}, {r['n_baseline']} pairs)"
        if r.get("change_pct") is not None and r.get("ci_low_pct") is not None
        else f"{r['verdict']} ({r['metric']})" for r in rows) or "no rows"


def trial(name: str, argv: list[str], results: Path) -> Trial:
    """Run ``argv``, echoing its progress lines, and read back what it did."""
    print(f"$ {' '.join(argv)}", flush=True)
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    builds = []
    assert proc.stderr is not None and proc.stdout is not None
    for line in proc.stderr:  # progress goes to stderr, the JSON report to stdout
        print(f"  | {line.rstrip()}", flush=True)
        found = _BUILT.match(line.strip())
        if found:
            builds.append(f"{found.group(1)} built in {found.group(3)} s ({found.group(4)})")
    stdout = proc.stdout.read()
    proc.wait()
    took = time.monotonic() - start
    docs = [RunResult.read(p) for p in find_result_files(results)]
    seconds = [(d.end_ms - d.start_ms) / 1000 for d in docs if d.end_ms > d.start_ms]
    client = [d.tool_duration_s for d in docs if d.tool_duration_s is not None]
    return Trial(name, took, builds, _verdict(stdout), seconds, client, proc.returncode)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pr", type=int, default=13499, choices=sorted(PRS),
                   help="pull request of the vendored history (default 13499, SMEMBERS)")
    p.add_argument("--tests-regexp", default=None,
                   help="the suites (default: the PR's, e.g. smembers)")
    p.add_argument("--build-dir", type=Path, default=None,
                   help="the fresh build folder of the cold run (default: a new one under "
                        "the test cache, removed at the end)")
    args = p.parse_args()
    squash, suites = PRS[args.pr]
    args.tests_regexp = args.tests_regexp or suites
    repo = history.bare_repo()
    sha = history.full_sha(repo, squash)
    scratch = Path(tempfile.mkdtemp(prefix="first-ab-", dir=history.cache_root()))
    build_dir = args.build_dir or scratch / "builds"
    if build_dir.exists() and any(build_dir.iterdir()):
        print(f"{build_dir}: not empty; the cold run needs a fresh --build-dir")
        return 2
    load = os.getloadavg()
    try:
        cold = trial("cold", _argv(args, repo, sha, build_dir, scratch / "cold"),
                     scratch / "cold")
        cached = trial("cached", _argv(args, repo, sha, build_dir, scratch / "cached"),
                       scratch / "cached")
    finally:
        if args.build_dir is None:
            shutil.rmtree(scratch, ignore_errors=True)
    low, high = LAB_SECONDS_PER_RUN
    print(f"\nPR #{args.pr} ({sha[:12]}^..{sha[:12]}), suites '{args.tests_regexp}', "
          f"--profilers instructions; load average at start {load[0]:.1f}")
    print(cold.line() + f"   target <= {COLD_TARGET_S} s")
    print(cached.line() + f"   target <= {CACHED_TARGET_S} s")
    runs = cold.run_seconds + cached.run_seconds
    clients = cold.client_seconds + cached.client_seconds
    here = statistics.median(runs) if runs else float("nan")
    client = statistics.median(clients) if clients else float("nan")
    # the client's part grows with the suite's command (SMEMBERS of 100 members is ~13x the
    # instructions of the lab's GET), the rest (valgrind's start, the snapshot's load, the
    # reads around the window) is the same for every suite
    print(f"a counted run: {here:.1f} s here (median of both; the client's "
          f"{COUNTED_REQUESTS:,} requests {client:.1f} s, the rest {here - client:.1f} s); "
          f"the lab: {low}-{high} s a run of GET (docs/lab.md)")
    ok = cold.returncode == 0 and cached.returncode == 0
    return 0 if ok and cold.seconds <= COLD_TARGET_S and cached.seconds <= CACHED_TARGET_S \
        else 1


if __name__ == "__main__":
    sys.exit(main())
