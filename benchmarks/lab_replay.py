"""Several real Redis pull requests through the lab, label to final comment.

Resolves each merged PR of docs/real_prs.md (its squash commit and that commit's parent, from
the vendored history), writes them as a ``--prs`` file and runs ``rbs lab replay`` once on a
fresh lab (builds kept in ``.cache/lab-builds``, so a second run reuses them). Prints per PR
the suites selected and why, the instruction and throughput verdicts of each platform, the
top movers, and the minutes from the label delivery to the final comment. Run it under
``flock /tmp/rbs-heavy.lock`` on a shared host: it builds Redis and runs valgrind.

    .venv/bin/python benchmarks/lab_replay.py                       # every PR below
    .venv/bin/python benchmarks/lab_replay.py --pr 11552 --pr 10697 --profile-requests 3000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import redis_history as history

ROOT = Path(__file__).resolve().parents[1]
RBS = ROOT / ".venv" / "bin" / "rbs"
# docs/real_prs.md: merged PRs of the 7.0-7.2 cycle and their squash commits
PRS = {11552: "61c85a2b", 10697: "6a6e911f", 10574: "a642947e", 11602: "c3fb48da",
       11779: "f3c6f9c2", 11541: "2d80cd78"}


def prs_file(numbers: list[int], folder: Path) -> Path:
    repo = history.bare_repo()
    lines = [f"{history.full_sha(repo, PRS[n] + '^')} {history.full_sha(repo, PRS[n])} pr{n}"
             for n in numbers]
    path = folder / "prs.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def report(summary: dict, seconds: float) -> None:
    for pr in summary["prs"]:
        print(f"\n{pr['name']}: {pr['minutes']} min label to final comment; "
              f"selected {len(pr['selected'])}: {', '.join(pr['selected'])}")
        print(f"  why: {pr['selection_reason']}")
        for t in pr["tests"]:
            print(f"  {t['platform']:>6} {t['metric']:<22} {t['verdict']:<12} "
                  f"{t['change_pct']} % [{t['low_pct']}, {t['high_pct']}] "
                  f"{t['pairs']} pairs  {t['test']}")
        for m in pr["movers"][:3]:
            print(f"  mover {m['function']} ({m['file']}): {m['before_per_op']} -> "
                  f"{m['after_per_op']} per op ({m['change_pct']:+.2f} % of all)")
    print(f"\nwhole replay: {seconds / 60:.1f} min")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pr", type=int, action="append", choices=sorted(PRS))
    p.add_argument("--suites-regexp", default=".*", help="the agents' --tests-regexp")
    p.add_argument("--profile-requests", type=int, default=3000)
    p.add_argument("--max-pairs", type=int, default=4)
    p.add_argument("--max-suites", type=int, default=None, help="the platforms' PR budget")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--lab-dir", type=Path, default=None,
                   help="the lab's folder, kept after the run (its logs say where time went)")
    p.add_argument("--fresh-pairs", action="store_true",
                   help="pull requests count their base again in interleaved pairs (the "
                        "check of the verdicts the stored base gives)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="rbs-lab-bench-") as tmp:
        folder = Path(tmp)
        out = args.out or folder / "out"
        start = time.monotonic()
        done = subprocess.run(
            [str(RBS), "lab", "replay", "--dir", str((args.lab_dir or folder / "lab").resolve()),
             "--source", str(history.bare_repo()), "--prs",
             str(prs_file(args.pr or sorted(PRS), folder)), "--out", str(out),
             "--build-cache", str(ROOT / ".cache" / "lab-builds"),
             "--max-pairs", str(args.max_pairs),
             *(["--max-suites", str(args.max_suites)] if args.max_suites else []),
             *(["--fresh-pairs"] if args.fresh_pairs else []),
             "--agent-args",
             (f"--profilers instructions --profile-requests {args.profile_requests} "
             f"--test-time 5 --tests-regexp {args.suites_regexp}")],
            text=True, timeout=6 * 3600, check=False)
        seconds = time.monotonic() - start
        if (out / "summary.json").is_file():
            report(json.loads((out / "summary.json").read_text()), seconds)
        print(f"rbs lab replay exited {done.returncode}; comments in {out / 'comments'}")
        return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
