"""Issue 63, item 4: whose embedded datasink it is.

Two real clones of this repository (each carrying this tree's package, so the code under
test runs whether committed or not), each running ``rbs`` from itself as ``make run`` does:
checkout A starts its datasink; checkout B's ``rbs run`` pushes into a datasink of its own,
not A's; B pointed at A's folder says it shares A's and its ``rbs datasink down`` leaves A's
server running; A's ``rbs datasink down`` stops it. Real redis-stack-servers throughout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import redis

from redis_benchmarks_spec.common.process import wait_for
from redis_benchmarks_spec.datasink import embedded, ownership
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink, NotOwnerError
from tests.cli import RBS, REPO, write_suite
from tests.datasink_fixtures import ensure_libssl

SUITE = ("version: 0.4\nname: own-set\ntested-groups: [string]\ntested-commands: [set]\n"
         "redis-topologies: [oss-standalone]\nclientconfig:\n  tool: redis-benchmark\n"
         "  arguments: -n 2000 -t set\nexporter:\n  redistimeseries:\n    metrics:\n"
         "      - $.\"ALL STATS\".Totals.\"Ops/sec\"\n")


class Checkout:
    """A clone of this repository whose ``rbs`` imports its own package."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.env = {**os.environ, "PYTHONPATH": str(self.root), "COLUMNS": "200",
                    # the clone has no .cache/libssl1.1 of its own; the server needs it
                    embedded.LIBSSL_ENV: str(embedded.libssl_dir() or ""),
                    "RBS_TEST_ZYGOTE": "0"}
        if not self.env[embedded.LIBSSL_ENV]:
            del self.env[embedded.LIBSSL_ENV]

    @property
    def sink_dir(self) -> Path:
        return self.root / ".cache" / "datasink"

    def rbs(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([RBS, *args], cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=timeout, check=False)


def clone(into: Path) -> Checkout:
    subprocess.run(["git", "clone", "-q", str(REPO), str(into)], check=True, timeout=120)
    shutil.copytree(REPO / "redis_benchmarks_spec", into / "redis_benchmarks_spec",
                    dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    return Checkout(into)


@pytest.fixture(name="checkouts")
def checkouts_fixture(tmp_path: Path) -> Iterator[tuple[Checkout, Checkout]]:
    ensure_libssl()
    a, b = clone(tmp_path / "a"), clone(tmp_path / "b")
    yield a, b
    for c in (a, b):  # each stopped by its owner, as the feature asks
        c.rbs("datasink", "down", timeout=240)


def running(pid: int) -> bool:
    """The process is alive (a zombie is not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def pings(port: int) -> bool:
    try:
        with redis.Redis(port=port, socket_timeout=5) as client:
            return bool(client.ping())
    except redis.ConnectionError:
        return False


@pytest.mark.slow
def test_a_second_checkout_uses_its_own_datasink_and_never_stops_the_first(
        checkouts: tuple[Checkout, Checkout], tmp_path: Path) -> None:
    a, b = checkouts
    up = a.rbs("datasink", "up")
    assert up.returncode == 0, up.stdout + up.stderr
    a_state = EmbeddedDatasink(a.sink_dir).status()
    assert a_state.running and a_state.port and a_state.pid, a_state
    # A's folder records A as the owner, and A's commands say so
    assert a_state.owner == ownership.Owner(ownership.CHECKOUT, a.root)
    assert f"owned by this checkout ({a.root})" in up.stdout, up.stdout
    status = a.rbs("datasink", "status")
    assert f"owner: this checkout ({a.root}); stop it with `rbs datasink down`" \
        in status.stdout, status.stdout

    # B's run (as `make run` runs it) pushes into B's own datasink, not into A's
    suites = tmp_path / "suites"
    write_suite(suites, "own-set", SUITE)
    run = b.rbs("run", "--suites-dir", str(suites), "--results-dir", str(tmp_path / "out"))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    b_state = EmbeddedDatasink(b.sink_dir).status()
    assert b_state.running and b_state.owner == ownership.Owner(ownership.CHECKOUT, b.root)
    assert b_state.pid != a_state.pid and b_state.port != a_state.port
    assert f"owned by this checkout ({b.root})" in run.stdout + run.stderr
    with redis.Redis(port=a_state.port) as sink_a, redis.Redis(port=b_state.port) as sink_b:
        assert sink_b.keys("ci.benchmarks.redis/runs/*"), "B's run did not reach B's datasink"
        assert not sink_a.keys("*"), "B's run pushed into A's datasink"

    # B's down stops B's own datasink; A's keeps running
    down_b = b.rbs("datasink", "down", timeout=240)
    assert down_b.returncode == 0 and "datasink stopped" in down_b.stdout, down_b.stdout
    assert not EmbeddedDatasink(b.sink_dir).status().running
    assert EmbeddedDatasink(a.sink_dir).status().pid == a_state.pid and pings(a_state.port)

    # B told to use A's folder says it shares A's, and its down leaves it running
    shared = ("--datasink-data-dir", str(a.sink_dir))
    status_b = b.rbs("datasink", "status", *shared)
    assert status_b.returncode == 0, status_b.stdout + status_b.stderr
    assert f"owner: checkout {a.root} (shared: not this checkout's)" in status_b.stdout
    assert f"its owner stops it: `cd {a.root} && .venv/bin/rbs datasink down`" \
        in status_b.stdout, status_b.stdout
    again = b.rbs("run", "--suites-dir", str(suites), "--results-dir", str(tmp_path / "out2"),
                  *shared)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert f"(owner: checkout {a.root} (shared: not this checkout's))" \
        in again.stdout + again.stderr, again.stdout[-2000:]
    with redis.Redis(port=a_state.port) as sink_a:
        assert sink_a.keys("ci.benchmarks.redis/runs/*"), "B's shared run did not reach A's"
    pushed = b.rbs("datasink", "push", str(tmp_path / "out"), *shared)
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert f"in {a.sink_dir}: owner: checkout {a.root} (shared: not this checkout's)" \
        in pushed.stdout, pushed.stdout
    refused = b.rbs("datasink", "down", *shared, timeout=240)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert f"was started by checkout {a.root}, not by this checkout ({b.root}): left " \
        "running" in refused.stdout, refused.stdout
    assert EmbeddedDatasink(a.sink_dir).status().pid == a_state.pid and pings(a_state.port)

    # A's own down stops it, by its pid
    down_a = a.rbs("datasink", "down", timeout=240)
    assert down_a.returncode == 0 and "datasink stopped" in down_a.stdout, down_a.stdout
    # its pid is gone (the port may answer again: another test's datasink can take the
    # default port the moment it is free)
    assert a_state.pid is not None and wait_for(lambda: not running(a_state.pid), 15)
    assert not (a.sink_dir / ownership.OWNERFILE).exists()


def test_down_here_refuses_a_server_another_owner_started(tmp_path: Path) -> None:
    """In-process: the record says another checkout started it (as a clone's `up` writes
    it), so this checkout's down raises and the server keeps answering."""
    ensure_libssl()
    sink = EmbeddedDatasink(tmp_path / "sink", port=None)
    state = sink.up()
    assert state.started and state.pid and state.port and state.mine
    other = ownership.Owner(ownership.CHECKOUT, tmp_path / "another-checkout")
    try:
        ownership.record(sink.data_dir, state.pid, other)
        seen = sink.status()
        assert seen.owner == other and not seen.mine
        assert seen.as_dict()["owner"] == {"kind": "checkout", "path": str(other.path)}
        with pytest.raises(NotOwnerError, match="left running"):
            sink.down()
        assert sink.status().pid == state.pid and pings(state.port)
    finally:
        ownership.record(sink.data_dir, state.pid, ownership.this_owner())
        assert sink.down()
    assert state.pid is not None and wait_for(lambda: not running(state.pid), 15)


def test_a_checkout_keeps_its_datasink_in_its_own_folder() -> None:
    me = ownership.this_owner()
    assert me == ownership.Owner(ownership.CHECKOUT, REPO.resolve())
    assert embedded.default_data_dir() == REPO.resolve() / ".cache" / "datasink"
    assert not ownership.is_checkout(Path(redis.__file__).resolve().parents[1])  # site-packages
