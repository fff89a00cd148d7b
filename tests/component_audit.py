"""Which real components each test starts (issue 41: "the count does not fall").

Every process a test's own Python process starts goes through ``subprocess.Popen``; this
module wraps it once per test process and files each start under the test running at the
time (its fixtures included): a redis-server, redis-stack-server, memtier_benchmark,
redis-benchmark, callgrind (valgrind), perf, a Docker container (``docker run``/``create``),
a Redis build (``make``, bare or in the builder's bwrap sandbox; a build found in the cache
starts none, so this kind counts what the cache did not hold) or an ``rbs``
process (a whole session, agent or daemon, which starts the rest itself). A session-scoped
fixture's starts are filed under the test that set it up; the tests that read it
afterwards read a real run recorded in this suite run.

Each worker writes ``components-<worker>.json`` beside the JUnit reports; ``scripts/
components.py`` sums them and compares the count with ``tests/data/real-components.json``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: program names (basename of any argv word) and the component each one is
PROGRAMS = {
    "redis-server": "redis-server",
    "redis-stack-server": "redis-stack-server",
    "memtier_benchmark": "memtier_benchmark",
    "redis-benchmark": "redis-benchmark",
    "valgrind": "callgrind",
    "perf": "perf",
    "make": "redis build",
    "rbs": "rbs process",
}
DOCKER_STARTS = frozenset({"run", "create"})

_current: list[str] = [""]
_started: dict[str, set[str]] = {}
#: processes started of each kind (a test that starts ten rbs processes counts ten): what the
#: suite pays per start, `rbs`'s ~0.6 s of CPU to import its command above all
_starts: dict[str, int] = {}
#: CPU seconds each test used: this process's and its reaped children's (an `rbs` process
#: reaps its servers and tools, so theirs count; a session fixture's daemon does not)
_cpu: dict[str, float] = {}
_cpu_at: list[float] = [0.0]


def _cpu_now() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def kinds_of(argv: Sequence[str]) -> set[str]:
    """The real components one argv starts (empty for anything else: git, ps, a shell)."""
    words = [os.path.basename(str(w)) for w in argv]
    found = {PROGRAMS[w] for w in words if w in PROGRAMS}
    if argv and "redis-stack-server" in str(argv[0]):  # the wheel's bin/redis-server
        found.discard("redis-server")
        found.add("redis-stack-server")
    if "perf" in found and "stat" not in words and "record" not in words:
        found.discard("perf")  # `perf --version` and the like start nothing
    if words and words[0] == "docker" and len(words) > 1 and words[1] in DOCKER_STARTS:
        found.add("docker container")
    # python, python3 or python3.11: a .venv made by another interpreter names its own
    # (ci25: a venv made from python3.11 filed 9 tests' `python -m` starts under nothing)
    if words and re.fullmatch(r"python(\d+(\.\d+)?)?", words[0]) and \
            "redis_benchmarks_spec" in " ".join(words):
        found.add("rbs process")
    return found


def install() -> None:
    """Wrap ``Popen._execute_child`` in this process (once)."""
    original: Any = subprocess.Popen._execute_child  # type: ignore[attr-defined]
    if getattr(original, "_rbs_audit", False):
        return

    def audited(self: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> Any:
        argv = args.split() if isinstance(args, str) else (
            [args] if isinstance(args, (bytes, os.PathLike)) else list(args))
        started([a.decode() if isinstance(a, bytes) else str(a) for a in argv])
        return original(self, args, *rest, **kwargs)

    audited._rbs_audit = True  # type: ignore[attr-defined]
    subprocess.Popen._execute_child = audited  # type: ignore[attr-defined,method-assign]


def started(argv: Sequence[str]) -> None:
    """File a process started with ``argv`` under the test running now (``Popen`` calls
    this; so does tests/cli.py for the ``rbs`` processes it forks from its zygote)."""
    kinds = kinds_of(argv)
    if kinds and _current[0]:
        _started.setdefault(_current[0], set()).update(kinds)
    for kind in kinds:
        _starts[kind] = _starts.get(kind, 0) + 1


def add_cpu(seconds: float) -> None:
    """CPU seconds a process used that this process did not reap (an ``rbs`` forked from
    the zygote: the zygote reaps it and says how much it used), for the test running now."""
    if _current[0]:
        _cpu[_current[0]] = _cpu.get(_current[0], 0.0) + seconds


#: session-scoped fixtures that start a real component once per worker process: every test
#: that uses one is filed with it (which test set it up depends on the workers' schedule)
SESSION_FIXTURES = {"datasink": "redis-stack-server"}


def enter(nodeid: str, fixtures: Sequence[str] = ()) -> None:
    """The test whose setup, call and teardown start what follows, and the session
    fixtures it reads."""
    now = _cpu_now()
    if _current[0]:
        _cpu[_current[0]] = _cpu.get(_current[0], 0.0) + now - _cpu_at[0]
    _cpu_at[0] = now
    _current[0] = nodeid
    kinds = {SESSION_FIXTURES[f] for f in fixtures if f in SESSION_FIXTURES}
    if nodeid and kinds:
        _started.setdefault(nodeid, set()).update(kinds)


def write(folder: Path, worker: str) -> None:
    """This process's record, one file per worker."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {test: sorted(kinds) for test, kinds in sorted(_started.items())}
    (folder / f"components-{worker}.json").write_text(json.dumps(out, indent=1) + "\n")
    cpu = {test: round(seconds, 2) for test, seconds in sorted(_cpu.items())}
    (folder / f"cpu-{worker}.json").write_text(json.dumps(cpu, indent=1) + "\n")
    (folder / f"starts-{worker}.json").write_text(json.dumps(dict(sorted(_starts.items())),
                                                             indent=1) + "\n")
