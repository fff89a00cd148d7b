"""No dead side: before an A/B's first pair both servers start and answer once (and the
suites' tools run once); a side that cannot start is one line naming the side, its binary and
the loader's message, with no run made. ``--server-env KEY=VALUE`` gives the servers an
environment, and the redis-stack-server the project installs (which needs Debian 11's
libssl1.1 on LD_LIBRARY_PATH) works as an A/B side without a wrapper. Real servers and
redis-benchmark, a few thousand requests."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from redis_benchmarks_spec.datasink.embedded import locate_binaries
from tests.cli import rbs, write_suite

SUITE = """
version: 0.4
name: sides-get
tested-commands: [get]
clientconfig:
  tool: redis-benchmark
  arguments: -c 4 -n 3000 -t get
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def _ab(tmp_path: Path, comparison: str, *extra: str) -> subprocess.CompletedProcess[str]:
    suites = tmp_path / "suites"
    suites.mkdir(exist_ok=True)
    write_suite(suites, "sides-get", SUITE)
    server = shutil.which("redis-server") or "redis-server"
    return rbs("run", "--suites-dir", str(suites), "--results-dir", str(tmp_path / "out"),
               "--baseline-server", server, "--comparison-server", comparison, "--repetitions", "1",
               "--no-datasink", "--format", "json", *extra)


def test_a_side_that_cannot_start_is_named_before_any_run(tmp_path: Path) -> None:
    stack = str(locate_binaries().redis_server)
    # the user's LD_LIBRARY_PATH wins over the one the project knows the binary needs
    done = _ab(tmp_path, stack, "--server-env", f"LD_LIBRARY_PATH={tmp_path}")
    assert done.returncode == 2, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "comparison side" in lines[0] and stack in lines[0] and "libssl" in lines[0], lines
    assert not list((tmp_path / "out").rglob("result.json"))  # no baseline run was spent


def test_the_projects_redis_stack_server_is_an_ab_side_as_it_is(tmp_path: Path) -> None:
    done = _ab(tmp_path, str(locate_binaries().redis_server))
    assert done.returncode == 0, done.stderr[-3000:]
    docs = {p.relative_to(tmp_path / "out").parts[1]: json.loads(p.read_text())
            for p in (tmp_path / "out").rglob("result.json")}
    assert set(docs) == {"baseline", "comparison"}, docs.keys()
    assert all(d["status"] == "ok" for d in docs.values()), docs
    # the comparison side really was the stack's server (7.4), the baseline Debian's
    assert docs["comparison"]["redis_version"].startswith("7.4"), docs["comparison"]
    assert docs["comparison"]["redis_version"] != docs["baseline"]["redis_version"]


def test_server_env_must_be_key_value(tmp_path: Path) -> None:
    done = _ab(tmp_path, shutil.which("redis-server") or "", "--server-env", "NOVALUE")
    assert done.returncode == 2
    assert "--server-env" in done.stderr and "KEY=VALUE" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
