"""False decisions on A/A, by method and pair count: simulated noise and recorded real hosts.

For every interval method the verdict engine can pick (and the ones it no longer picks), and
each pair count, the share of A/A sessions (the same binary on both sides) called REGRESSION
or IMPROVEMENT, judged with the noise floor at 0 (the interval's own promise). Simulated
noise: ``analysis.null_check.NOISES``. Recorded: the A/A sessions of ``benchmarks/aa_corpus``
(real hosts), resampled without replacement in their recorded orientation. A rate marked
``!`` breaks the promise: the lower end of its 95 % Wilson interval lies above alpha (5 %).

Usage:
  .venv/bin/python benchmarks/false_decisions.py [--sims 2000] [--pairs 3,4,5,...|all]
  .venv/bin/python benchmarks/false_decisions.py --record SESSION_DIR --host NAME \
      [--metric M] [--out benchmarks/aa_corpus/NAME.json]   # add an A/A session to the corpus
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from redis_benchmarks_spec.analysis import null_check
from redis_benchmarks_spec.analysis.verdict import DEFAULT_METRIC
from redis_benchmarks_spec.inputs.session_folder import load_session

CORPUS = Path(__file__).resolve().parent / "aa_corpus"
DEFAULT_PAIRS = "3,4,5,6,8,10,12,15,20,25,30"
#: methods too slow for every simulated cell get fewer sessions
SLOW = {"sequential looks": 4, "sequential, timed, uncalibrated": 4, "BH over 10 tests": 4}


def record(folder: Path, host: str, metric: str) -> dict[str, object]:
    """Every ok pair of an A/A session folder, disturbed or not, in run order."""
    runs = load_session(folder).runs
    found: dict[str, dict[int, dict[str, float]]] = {}
    disturbed: dict[str, set[int]] = {}
    for run in runs:
        doc = run.result
        if run.repetition is None or not doc.ok or metric not in doc.metrics:
            continue
        found.setdefault(doc.test_name, {}).setdefault(run.repetition, {})[run.side] = \
            doc.metrics[metric]
        if "disturbed" in doc.flags:
            disturbed.setdefault(doc.test_name, set()).add(run.repetition)
    tests = {t: [[v["baseline"], v["comparison"]] for _, v in sorted(reps.items())
                 if "baseline" in v and "comparison" in v] for t, reps in found.items()}
    return {"host": host, "metric": metric, "folder": str(folder),
            "recorded": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
            "tests": {t: p for t, p in tests.items() if len(p) >= 4},
            "disturbed_pairs": {t: len(v) for t, v in disturbed.items()}}


def _row(method: str, noise: str, pairs: list[int], sims: int) -> str:
    cells = []
    for n in pairs:
        rate = null_check.false_decisions(method, noise, n, max(50, sims // SLOW.get(method, 1)),
                                          seed=n)
        cells.append(f"{100 * rate.rate:5.1f}{'!' if rate.broken else ' '}")
    return f"  {method:<32}" + " ".join(cells)


def simulated(pairs: list[int], sims: int) -> None:
    methods = [*null_check.METHODS, null_check.CALIBRATED, "BH over 10 tests"]
    print(f"Simulated A/A, {sims} sessions a cell (sequential and BH: a quarter); "
          "% of sessions with a false decision")
    for noise in null_check.NOISES:
        started = time.monotonic()
        print(f"\n{noise}:  pairs " + " ".join(f"{n:>6}" for n in pairs))
        for method in methods:
            print(_row(method, noise, pairs, sims), flush=True)
        print(f"  ({time.monotonic() - started:.0f} s)")


def resampled(sims: int) -> None:
    files = sorted(CORPUS.glob("*.json"))
    print(f"\nRecorded A/A sessions ({len(files)} file(s) in {CORPUS}), resampled "
          f"{sims} times without replacement, recorded orientation")
    for path in files:
        raw = json.loads(path.read_text())
        print(f"\n{path.name}: host {raw['host']}, metric {raw['metric']}, {raw['recorded']}")
        for test, values in raw["tests"].items():
            data = np.asarray(values, dtype=float)
            ratios = np.log(data[:, 1] / data[:, 0])
            counts = [n for n in (3, 4, 5, 6, 8, 10) if n < len(data)]
            print(f"  {test} ({len(data)} pairs, SD of pair log ratios "
                  f"{100 * ratios.std(ddof=1):.1f} %, mean {100 * ratios.mean():+.1f} %)")
            for method in ("Student t", "20 % trimmed mean", "engine's pick",
                           "engine, timed, uncalibrated"):
                cells = []
                for n in counts:
                    rate = null_check.resampled(data, n, sims, method, seed=n)
                    cells.append(f"n={n}: {100 * rate.rate:4.1f}{'!' if rate.broken else ''}")
                print(f"    {method:<20} " + "  ".join(cells))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sims", type=int, default=2000)
    p.add_argument("--pairs", default=DEFAULT_PAIRS, help="comma list, or 'all' (3..30)")
    p.add_argument("--record", type=Path, help="an A/A session folder to add to the corpus")
    p.add_argument("--host", default="", help="the host the recorded session ran on")
    p.add_argument("--metric", default=DEFAULT_METRIC)
    p.add_argument("--out", type=Path)
    p.add_argument("--only", choices=["simulated", "recorded"])
    args = p.parse_args()
    if args.record:
        doc = record(args.record, args.host or "unnamed", args.metric)
        out = args.out or CORPUS / f"{args.host or 'unnamed'}.json"
        out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{out}: {len(doc['tests'])} test(s)")  # type: ignore[arg-type]
        return 0
    pairs = list(range(3, 31)) if args.pairs == "all" else [int(x) for x in args.pairs.split(",")]
    if args.only != "recorded":
        simulated(pairs, args.sims)
    if args.only != "simulated":
        resampled(max(200, args.sims // 4))
    return 0


if __name__ == "__main__":
    sys.exit(main())
