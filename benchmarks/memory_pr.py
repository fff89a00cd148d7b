"""A memory A/B of a real Redis pull request: "Listpack encoding for sets" (#11290, commit
4e472a1a, Redis 7.2) against its parent, with ``rbs run --memory-only``.

Why this PR changes memory: before it, a set holding any non-integer member was a hash table
(a dict with a dictEntry and an sds per member); after it, a set of up to 128 members of up
to 64 bytes is one listpack (``set-max-listpack-entries``), which the PR's description gives
as its purpose ("This saves memory for small sets compared to using a hashtable"). So a
dataset of small string sets must take much less memory on the PR's side, and a dataset of
integer sets (intset before and after: the PR leaves intsets alone) must not move; the
second suite is the control.

Both commits are built from the vendored history (``benchmarks/redis_history.py``, cached
in ``.cache/redis-history/bin/<sha>/``). Run: ``flock /tmp/rbs-heavy.lock python
benchmarks/memory_pr.py`` (two builds of about a minute each the first time, then ~1 min).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import redis_history

PR = "4e472a1a7fc0dc2c7da2b48ac7342e9385b4f92a"
SUITE = """
name: {name}
tested-commands: [sismember]
dbconfig:
  check: {{keyspacelen: 10000}}
  preload_tool:
    tool: redis-cli
    arguments: 'EVAL "for i=1,10000 do local k=''s:''..i for j=1,16 do redis.call(''SADD'', k, {member}) end end return 1" 0'
redis-topologies: [oss-standalone]
clientconfig:
  tool: redis-benchmark
  arguments: -c 4 -n 1000 -r 10000 sismember s:__rand_int__ m1
"""
SUITES = {"sets-16-strings": "''member:''..j", "sets-16-integers": "j"}
RBS = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "rbs"


def main() -> int:
    repo = redis_history.bare_repo()
    parent = redis_history.full_sha(repo, f"{PR}^")
    binaries = [redis_history.build(repo, sha).binary for sha in (parent, PR)]
    with tempfile.TemporaryDirectory(prefix="rbs-memory-pr-") as tmp:
        suites = Path(tmp) / "suites"
        suites.mkdir()
        for name, member in SUITES.items():
            (suites / f"{name}.yml").write_text(SUITE.format(name=name, member=member))
        out = subprocess.run(
            [str(RBS), "run", "--memory-only", "--suites-dir", str(suites), "--no-datasink",
             "--results-dir", str(Path(tmp) / "results"), "--baseline-server",
             str(binaries[0]), "--comparison-server", str(binaries[1]), "--repetitions", "5",
             "--no-noise-prior", "--format", "json"],
            capture_output=True, text=True, timeout=1200, check=False)
    if out.returncode != 0:
        print(out.stdout, out.stderr, file=sys.stderr)
        return 1
    report = json.loads(out.stdout[out.stdout.index("{"):])
    print(f"baseline {parent[:10]} (parent) vs comparison {PR[:10]} (#11290)")
    for row in report["rows"]:
        ci = "unbounded" if row["ci_low_pct"] is None else \
            f"[{row['ci_low_pct']:+.2f}%, {row['ci_high_pct']:+.2f}%]"
        print(f"{row['test']:<18} {row['metric']:<22} {row['baseline_median']:>14,.1f} -> "
              f"{row['comparison_median']:>14,.1f}  {row['change_pct']:+7.2f}% {ci:<20} "
              f"{row['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
