"""The lab watching `unstable`: a range of real commits pushed one by one (docs/watch.md).

Runs ``rbs lab replay --range A..B`` on a fresh lab (builds kept in ``.cache/lab-builds``)
with the suites that show the known changes of the range, then prints each commit's suites
and minutes, each alert (commit, PR, tests, platforms, size and interval, movers), each note,
and whether every known change was alerted at its commit and nothing else was. Run it under
``flock /tmp/rbs-heavy.lock`` on a shared host: it builds Redis and runs valgrind.

The default (long) range is the 42 first-parent commits up to c3fb48da (2022-11 to 2022-12),
which hold four merged pull requests whose messages claim a performance change on a command
a shipped suite runs (docs/real_prs.md):

- 7dfd7b91 #11521 "Reduce eval related overhead introduced in v7.0" (EVAL),
- 61c85a2b #11552 GEODIST with fixedpoint_d2string ("about 35% increase in ops/sec"; the
  lab's PR replay measures it as an instruction-count improvement of more than 3 %),
- 2d80cd78 #11541 Lua argument cache ("some 5% performance improvement"),
- c3fb48da #11602 EXPIRE without rewriteClientCommandVector ("around 7% of CPU cycles ...
  reduces the overhead in half").

    .venv/bin/python benchmarks/watch_replay.py                    # the long range
    .venv/bin/python benchmarks/watch_replay.py --short            # 5 commits, GEODIST only
    .venv/bin/python benchmarks/watch_replay.py --skipped          # 6, 155acef5 not pushed
    .venv/bin/python benchmarks/watch_replay.py --wide             # the long range, 10 suites

Every push runs the suites its change reaches and the lab's sentinels that the suites folder
holds (docs/lab.md); ``--wide`` adds the three default sentinels and four more suites to the
three above, so the selection has something to leave out.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import redis_history as history

ROOT = Path(__file__).resolve().parents[1]
RBS = ROOT / ".venv" / "bin" / "rbs"
GEO = "redis-benchmark-1Kkeys-geo-geodist"
EVAL = "redis-benchmark-1Kkeys-scripting-eval-get"
EXPIRE = "redis-benchmark-1Kkeys-generic-expire"
KNOWN = {"7dfd7b91": 11521, "61c85a2b": 11552, "2d80cd78": 11541, "c3fb48da": 11602,
         # found by the lab itself in the --wide replay, then read: "Optimize client memory
         # usage tracking operation while client eviction is disabled" (-3.1 % on PING)
         "c0267b3f": 11348}
LONG = ("c3fb48da~42", "c3fb48da", [GEO, EVAL, EXPIRE])
SHORT = ("72e90695", "61c85a2b", [GEO])  # 4 commits of history, then #11552
# a push of two commits: 4 commits of history, then 155acef5 and #11552 pushed at once, so
# the change is confirmed across a skipped commit and bisected
SKIPPED = ("c8181314", "61c85a2b", [GEO])
WIDE = ["redis-benchmark-1Kkeys-string-get-1000B-pipeline-100", "redis-benchmark-hash-hset-100B",
        "redis-benchmark-ping-mbulk-pipeline-100", "redis-benchmark-1Kkeys-list-lrange-100",
        "redis-benchmark-1Kkeys-zset-zrange-100", "redis-benchmark-set-sadd",
        "redis-benchmark-1Kkeys-string-mget-10keys-100B"]  # one topology each


def suites(folder: Path, names: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in [*names, "defaults"]:
        shutil.copy(ROOT / "test-suites" / f"{name}.yml", folder)
    return folder


def report(summary: dict, in_range: list[str]) -> int:
    for c in summary["commits"]:
        why = next(iter(c.get("selection", {}).values()), {}).get("reason", "every suite")
        print(f"{c['sha'][:10]}  suites {c['suites_run']}  {c['minutes']} min  ({why[:110]})")
    for a in summary["alerts"]:
        interval = f"[{a['low_pct']}, {a['high_pct']}]"
        print(f"ALERT {a['sha'][:10]} #{a['pr']} {a['metric']} {a['change_pct']:+.2f}% "
              f"{interval} {', '.join(a['tests'])} on {', '.join(a['platforms'])}")
        for m in a["movers"][:3]:
            print(f"   mover {m['function']} ({m['file']}) {m['change_pct']:+.3f}%")
    for n in summary["notes"]:
        print(f"NOTE {n['sha'][:10]} {n['kind']}: {n['text']}")
    expected = {k for k in KNOWN if any(s.startswith(k) for s in in_range)}
    alerted = {a["sha"][:8] for a in summary["alerts"]}
    missed, extra = expected - alerted, alerted - expected
    print(f"known changes in range {sorted(expected)}; missed {sorted(missed)}; "
          f"alerts on other commits {sorted(extra)}")
    return 0 if not missed and not extra else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--short", action="store_true", help="5 commits ending at #11552, GEODIST")
    p.add_argument("--skipped", action="store_true",
                   help="c8181314..61c85a2b with 155acef5 pushed with #11552: bisected")
    p.add_argument("--wide", action="store_true",
                   help="the long range with 10 suites (the selection leaves some out)")
    p.add_argument("--fingerprint-change-at", default=None, metavar="SHA")
    p.add_argument("--platforms", default="lab-a,lab-b")
    p.add_argument("--profile-requests", type=int, default=3000)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    repo = history.bare_repo()
    first, last, names = SKIPPED if args.skipped else SHORT if args.short else LONG
    if args.wide:
        names = [*LONG[2], *WIDE]
    a = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", f"{first}^{{commit}}"],
                       capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    b = history.full_sha(repo, last)
    in_range = subprocess.run(["git", "-C", str(repo), "rev-list", "--first-parent",
                               f"{a}..{b}"], capture_output=True, text=True, check=True,
                              timeout=60).stdout.split()
    work = Path(tempfile.mkdtemp(prefix="watch-replay-"))
    out = args.out or work / "out"
    argv = [str(RBS), "lab", "replay", "--dir", str(work / "lab"), "--source", str(repo),
            "--range", f"{a}..{b}", "--out", str(out),
            "--suites-dir", str(suites(work / "suites", names)),
            "--build-cache", str(ROOT / ".cache" / "lab-builds"),
            "--platforms", args.platforms,
            "--agent-args", (f"--profilers instructions --profile-requests "
                             f"{args.profile_requests} --test-time 2 --noise-seconds 0")]
    if args.skipped:
        argv += ["--skip", "155acef5"]
    if args.fingerprint_change_at:
        argv += ["--fingerprint-change-at", args.fingerprint_change_at]
    print(f"{len(in_range)} commits {a[:10]}..{b[:10]}; suites {', '.join(names)}; "
          f"work in {work}", flush=True)
    started = time.monotonic()
    done = subprocess.run(argv, timeout=24 * 3600, check=False)
    print(f"rbs lab replay exit {done.returncode} after "
          f"{(time.monotonic() - started) / 60:.1f} min")
    summary = json.loads((out / "summary.json").read_text())
    return report(summary, in_range) or done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
