"""Does an instruction count depend on its neighbours? (issue 40, item 3's check)

Runs one suite under callgrind (``rbs run --profilers instructions``) alone, several times
one after another, then the same suite beside N-1 others started at the same moment (each its
own rbs process, server, port and results folder; on this 2-core VM they share the cores, a
harder test than disjoint cores on a lab host). Prints each run's ``instructions_per_op`` and
the median of the runs beside neighbours relative to the median alone: item 3 asks for a
difference under 0.05 % before instruction-count suites may run side by side.

Usage: .venv/bin/python benchmarks/count_neighbours.py [--alone 3] [--neighbours 4]
       [--requests 5000] [--random-keys 1000] [--rounds 1] [--disjoint] [--keep DIR]
       (each run takes a few seconds under callgrind; --keep keeps the runs' results and
       callgrind dumps; the functions whose count moved most are printed after the figures)

Measured (2026-11-27, at load average 9-10): +0.270 %, all of it the slow log's entries a
descheduled server writes (now left out of the command path). Since, nothing else running
(docs/lab.md, "Count lanes"): 4 at once on the 2 cores -0.013 % on the same dumps, and with
``--disjoint`` (each run on its own core, as a lab host's count lanes) -0.041 % with one key,
+0.077 % with 1,000 random keys (their own spread 0.27 %).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RBS = str(Path(sys.executable).with_name("rbs"))
SUITE = """
version: 0.4
name: count-neighbours-set
dbconfig:
  configuration-parameters:
    save: '""'
tested-groups: [string]
tested-commands: [set]
redis-topologies: [oss-standalone]
clientconfig:
  tool: redis-benchmark
  arguments: -t set -n 1000000 {keys}-c 10 -d 100
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
"""


def start(suites: Path, out: Path, requests: int, cpu: int | None = None
          ) -> subprocess.Popen[str]:
    """One counted run; with ``cpu``, its server and client pinned to that CPU alone (a lane
    of one core: under callgrind the client waits on the server nearly all the time)."""
    argv = [RBS, "run", "--suites-dir", str(suites), "--profilers", "instructions",
            "--instructions-method", "callgrind", "--profile-requests", str(requests),
            "--results-dir", str(out), "--no-datasink"]
    if cpu is not None:
        argv += ["--cpus", str(cpu)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=os.environ.copy())


def count_of(out: Path) -> float:
    for path in sorted(out.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(data, dict) and "instructions_per_op" in data.get("metrics", {}):
            return float(data["metrics"]["instructions_per_op"])
    raise RuntimeError(f"no instructions_per_op under {out}")


def functions_of(out: Path) -> dict[str, float]:
    """Self instructions per op of each function the run's dump kept (its functions file)."""
    for path in sorted(out.rglob("instructions-functions.json")):
        return {f"{e['function']}": float(e["self_per_op"]) for e in json.loads(path.read_text())}
    raise RuntimeError(f"no instructions-functions.json under {out}")


def movers(alone: list[dict[str, float]], beside: list[dict[str, float]],
           top: int = 12) -> list[tuple[str, float, float]]:
    """The functions whose median self count per op moved most beside neighbours."""
    names = {n for run in alone + beside for n in run}
    rows = []
    for name in names:
        a = statistics.median(run.get(name, 0.0) for run in alone)
        b = statistics.median(run.get(name, 0.0) for run in beside)
        rows.append((name, a, b))
    rows.sort(key=lambda r: -abs(r[2] - r[1]))
    return rows[:top]


def wait_all(procs: list[subprocess.Popen[str]]) -> None:
    for p in procs:
        _, err = p.communicate(timeout=900)
        if p.returncode != 0:
            raise RuntimeError(f"rbs run exited {p.returncode}: {err[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--alone", type=int, default=3, help="runs alone, one after another")
    parser.add_argument("--neighbours", type=int, default=4,
                        help="runs started at the same moment")
    parser.add_argument("--rounds", type=int, default=1,
                        help="times the runs side by side are started together")
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--random-keys", type=int, default=1000,
                        help="SET's -r (0: one key; the count of random keys moves from run "
                             "to run with the dict's hash seed)")
    parser.add_argument("--keep", help="a folder to keep the runs' results and dumps in")
    parser.add_argument("--disjoint", action="store_true",
                        help="each run on a core of its own (--cpus N): the runs alone on the "
                             "last CPU, the runs side by side one per CPU (at most one per CPU)")
    args = parser.parse_args()
    alone_n, neighbours, requests, keep = args.alone, args.neighbours, args.requests, args.keep
    keys = f"-r {args.random_keys} " if args.random_keys > 0 else ""
    cpus = sorted(os.sched_getaffinity(0))
    if args.disjoint and neighbours > len(cpus):
        parser.error(f"--disjoint: {neighbours} runs side by side need {neighbours} CPUs, "
                     f"this process may use {len(cpus)}")
    with (contextlib.nullcontext(keep) if keep else tempfile.TemporaryDirectory()) as tmp:
        root = Path(tmp)
        suites = root / "suites"
        suites.mkdir(parents=True, exist_ok=True)
        (suites / "count-neighbours-set.yml").write_text(SUITE.format(keys=keys))
        alone, alone_functions = [], []
        for i in range(alone_n):
            out = root / f"alone-{i}"
            wait_all([start(suites, out, requests, cpus[-1] if args.disjoint else None)])
            alone.append(count_of(out))
            alone_functions.append(functions_of(out))
        outs = []
        for r in range(args.rounds):
            batch = [root / f"side-{r * neighbours + i}" for i in range(neighbours)]
            wait_all([start(suites, out, requests, cpus[i] if args.disjoint else None)
                      for i, out in enumerate(batch)])
            outs += batch
        beside = [count_of(out) for out in outs]
        beside_functions = [functions_of(out) for out in outs]
    a, b = statistics.median(alone), statistics.median(beside)
    print("alone:  " + ", ".join(f"{v:,.2f}" for v in alone))
    print(f"beside {neighbours - 1} others{' (disjoint cores)' if args.disjoint else ''}: " + ", ".join(f"{v:,.2f}" for v in beside))
    spread = 100 * (max(alone) - min(alone)) / a
    print(f"median alone {a:,.2f}, beside {b:,.2f}: {100 * (b / a - 1):+.3f} % "
          f"(spread alone {spread:.3f} %)")
    print("functions whose self instructions per op moved most (median alone -> beside):")
    for name, x, y in movers(alone_functions, beside_functions):
        print(f"  {name:40s} {x:10.2f} -> {y:10.2f}  ({y - x:+.2f})")


if __name__ == "__main__":
    main()
