"""The lab through its services' deaths: pull requests replayed while the api, the builder,
the agents, the confirmer and the datasink are killed -9 at random moments (each up to
``--kills`` times) and the broker once; the lab's keeper restarts them. Prints what
maintainers would see, as counts:

- per pull request: comments created (1: the comment is edited, never posted twice), edits,
  whether its final comment names a verdict;
- alerts opened (issues of the GitHub stand-in);
- events and tests by state, and how many have no final state (0 expected);
- entries still pending in the builders' and the platforms' groups (0 expected);
- runs: those the agents' ledgers recorded, those missing from the datasink ("lost"), those
  in the datasink no ledger recorded ("extra": a run stored by a holder that then died);
- processes of the lab still running after ``rbs lab down`` (orphans, 0 expected);
- the kills and the restarts.

    .venv/bin/python benchmarks/lab_chaos.py --tiny                 # minutes: a 2-commit repo
    .venv/bin/python benchmarks/lab_chaos.py --pr 11552 --kills 3   # real builds (hours)

``--tiny`` replays a pull request of a two-commit repository whose build copies the
installed redis binaries (tests/test_lab_any_folder.py's), with one short suite; ``--pr N``
replays merged Redis PRs of docs/real_prs.md from the vendored history. Run it under
``flock /tmp/rbs-heavy.lock`` on a shared host.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import psutil
import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.keys import run_key
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, read_statuses
from redis_benchmarks_spec.lab.keeper import restarts

RBS = str(ROOT / ".venv" / "bin" / "rbs")
VICTIMS = ("api", "builder", "agent", "confirmer", "datasink")


def _rbs(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RBS, *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def _tiny(folder: Path) -> tuple[Path, Path, Path]:
    """(source, prs file, suites) of the tiny lab (see the module docstring)."""
    from tests.cli import write_suite
    from tests.test_lab_any_folder import SUITE, _copying_repo
    base, head = _copying_repo(folder / "redis-src")
    write_suite(folder / "suites", "ping-any-folder", SUITE)
    prs = folder / "prs.txt"
    prs.write_text(f"{base} {head} pr7\n")
    return folder / "redis-src", prs, folder / "suites"


def _real(numbers: list[int], folder: Path) -> tuple[Path, Path, None]:
    from benchmarks import lab_replay
    from benchmarks import redis_history as history
    return history.bare_repo(), lab_replay.prs_file(numbers, folder), None


def _builds() -> Path:
    from benchmarks import redis_history as history
    return history.cache_root() / "lab-builds"


class Chaos:
    """Kills a random service of the lab every few seconds while ``running`` is set."""

    def __init__(self, lab: Path, kills: int, pause: tuple[float, float], seed: int) -> None:
        self.lab, self.rng, self.pause = lab, random.Random(seed), pause
        self.left = {name: kills for name in VICTIMS} | {"broker": 1}
        self.log: list[tuple[float, str, int]] = []
        self.seen: set[int] = set()  # every pid of the lab, its children too
        self.running = threading.Event()

    def _pid(self, victim: str) -> tuple[str, int] | None:
        if victim in ("broker", "datasink"):
            return victim, EmbeddedDatasink(self.lab / victim).status().pid or 0
        state = json.loads((self.lab / "lab.json").read_text())
        names = [s for s in state["services"] if s["name"].split("-", 1)[0] == victim]
        if not names:
            return None
        chosen = self.rng.choice(names)
        return chosen["name"], chosen["pid"]

    def _remember(self) -> None:
        state = json.loads((self.lab / "lab.json").read_text())
        for pid in [s["pid"] for s in state["services"]]:
            try:
                self.seen |= {pid, *(c.pid for c in psutil.Process(pid).children(True))}
            except psutil.NoSuchProcess:
                continue

    def run(self) -> None:
        while self.running.is_set():
            time.sleep(self.rng.uniform(*self.pause))
            choices = [v for v, n in self.left.items() if n > 0]
            if not choices or not self.running.is_set():
                continue
            victim = self.rng.choice(choices)
            found = self._pid(victim)
            if found is None or not found[1]:
                continue
            self._remember()
            try:
                os.kill(found[1], signal.SIGKILL)
            except ProcessLookupError:
                continue
            self.left[victim] -= 1
            self.log.append((time.time(), found[0], found[1]))
            print(f"  killed {found[0]} (pid {found[1]})", flush=True)


def _statuses(broker: redis.Redis, names: StreamNames) -> tuple[Counter[str], Counter[str]]:
    """(event states, test states) of every event the lab's agents recorded."""
    events: Counter[str] = Counter()
    tests: Counter[str] = Counter()
    for raw in broker.zrange(names.status_index, 0, -1):
        for s in read_statuses(broker, names, raw.decode()):
            (events if s.test_name == EVENT_DONE else tests)[s.state] += 1
    return events, tests


def _runs(broker: redis.Redis, sink: redis.Redis, names: StreamNames) -> tuple[int, int, int]:
    """(runs the ledgers recorded, of those missing from the datasink, datasink runs that
    no ledger recorded)."""
    recorded: set[str] = set()
    for key in broker.scan_iter(match=f"{names.prefix}:results:*", count=500):
        for raw in broker.hvals(key):
            recorded |= {d["run_id"] for d in json.loads(raw) if d.get("run_id")}
    stored = {k.decode().rsplit("/runs/", 1)[1]
              for k in sink.scan_iter(match=run_key("*"), count=500)}
    return len(recorded), len(recorded - stored), len(stored - recorded)


def _comments(lab: Path) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {}
    for meta in sorted((lab / "github").glob("*/*/*/*.json")):
        if meta.parent.name == "issues":
            continue
        out.setdefault(meta.parent.name, Counter())[json.loads(meta.read_text())["action"]] += 1
    return out


def report(lab: Path, out: Path, chaos: Chaos, names: StreamNames, urls: tuple[str, str]
           ) -> None:
    broker = redis.Redis.from_url(urls[0], socket_timeout=30)
    sink = redis.Redis.from_url(urls[1], socket_timeout=30)
    for pr, counts in _comments(lab).items():
        finals = [f for f in (out / "comments").glob("*.md") if f.stem.count(".") == 0]
        verdict = any("**" in f.read_text().split("\n", 3)[1] for f in finals
                      if f.read_text().count("\n") >= 2)
        print(f"PR {pr}: comments created {counts['created']}, edits {counts['edited']}, "
              f"final comment with a verdict line: {verdict}")
    issues = list((lab / "github").glob("*/*/issues/*.md"))
    print(f"alerts opened: {len(issues)}")
    events, tests = _statuses(broker, names)
    open_ = sum(n for s, n in {**events, **tests}.items()
                if s not in ("completed", "failed", "dead-lettered"))
    print(f"events by state: {dict(events)}; tests by state: {dict(tests)}; without a final "
          f"state: {open_}")
    pending = sum(g["pending"] for stream in (names.build_requests, names.builds)
                  if broker.exists(stream) for g in broker.xinfo_groups(stream))
    print(f"entries pending in a group: {pending}")
    recorded, lost, extra = _runs(broker, sink, names)
    print(f"runs recorded by the ledgers: {recorded}; lost (not in the datasink): {lost}; "
          f"extra (in the datasink, in no ledger): {extra}")
    print(f"kills: {len(chaos.log)} ({dict(Counter(n.split('-')[0] for _, n, _ in chaos.log))}); "
          f"restarts: {sum(1 for r in restarts(lab) if r.get('event') == 'restarted')}")


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tiny", action="store_true", help="the two-commit repository (minutes)")
    p.add_argument("--pr", type=int, action="append", default=[],
                   help="a merged Redis PR of benchmarks/lab_replay.py (repeatable)")
    p.add_argument("--kills", type=int, default=2, help="kills of each service (broker: 1)")
    p.add_argument("--pause", type=float, nargs=2, default=(3.0, 12.0), metavar=("MIN", "MAX"),
                   help="seconds between two kills, drawn uniformly")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=4 * 3600)
    args = p.parse_args()
    if not args.tiny and not args.pr:
        p.error("give --tiny or --pr N")
    work = Path(tempfile.mkdtemp(prefix="rbs-chaos-"))
    source, prs, suites = _tiny(work) if args.tiny else _real(args.pr, work)
    lab, out = work / "lab", work / "out"
    flags = ["--suites-dir", str(suites), "--platforms", "lab-a", "--max-pairs", "2",
             "--agent-args", "--noise-seconds 0 --test-time 1"] if args.tiny else \
        ["--build-cache", str(_builds())]
    up = _rbs("lab", "up", "--dir", str(lab), "--source", str(source), *flags, timeout=600)
    if up.returncode != 0:
        print(up.stdout + up.stderr, file=sys.stderr)
        return 1
    state = json.loads((lab / "lab.json").read_text())
    chaos = Chaos(lab, args.kills, tuple(args.pause), args.seed)  # type: ignore[arg-type]
    chaos.running.set()
    thread = threading.Thread(target=chaos.run, daemon=True)
    started = time.monotonic()
    try:
        thread.start()
        done = _rbs("lab", "replay", "--dir", str(lab), "--prs", str(prs), "--out", str(out),
                    "--timeout", str(args.timeout), timeout=args.timeout + 600)
        chaos.running.clear()
        thread.join(60)
        print(f"replay exit {done.returncode} after {(time.monotonic() - started) / 60:.1f} "
              f"min; {done.stderr.strip()[-500:]}")
        report(lab, out, chaos, StreamNames.with_prefix(state["prefix"]),
               (state["broker_url"], state["datasink_url"]))
        chaos._remember()
    finally:
        chaos.running.clear()
        _rbs("lab", "down", "--dir", str(lab), timeout=600)
    orphans = [pid for pid in chaos.seen if _running(pid)]
    print(f"lab processes still running after down: {len(orphans)}; folder {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
