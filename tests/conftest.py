"""Shared fixtures: real redis-server processes on free ports (no fake Redis anywhere)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.common.process import free_port, wait_for
from tests import component_audit, offmachine, tiers

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment, which every
# `rbs` a test starts would read as the reader's screen (cli/console.py fits output to
# COLUMNS): a test that wants a width says so in the environment it gives the command
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


def redis_server_bin() -> str:
    path = shutil.which("redis-server")
    if not path:
        raise RuntimeError("redis-server not found: run `make test` (scripts/setup.sh installs it)")
    return path


class RedisServer:
    """A real redis-server on a free port in its own directory; stopped by its own pid."""

    def __init__(self, workdir: Path, extra_args: list[str] | None = None) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.proc = subprocess.Popen(
            [redis_server_bin(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", str(workdir),
             *(extra_args or [])],
            stdout=(workdir / "redis.log").open("ab"), stderr=subprocess.STDOUT,
        )
        self.url = f"redis://127.0.0.1:{self.port}"
        if not wait_for(self._pings, timeout=10):
            self.stop()
            raise RuntimeError(f"redis-server on port {self.port} did not answer PING")

    def _pings(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.ConnectionError:
            return False

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh redis-server for one test."""
    server = RedisServer(tmp_path)
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _own_noise_book(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A/A sessions record their noise in a book (analysis.noise); each test has its own, in
    its temporary folder, never the user's nor another test's (subprocesses inherit it)."""
    from redis_benchmarks_spec.inputs.noise_file import NOISE_FILE_ENV
    monkeypatch.setenv(NOISE_FILE_ENV, str(tmp_path / "noise-book.json"))


@pytest.fixture(autouse=True)
def _no_startup_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Agents measure their host's noise at startup (a busy loop, then redis-cli, 2 s each):
    off for the tests that start agents for other reasons (subprocesses inherit it);
    tests/test_platforms.py measures it on purpose."""
    from redis_benchmarks_spec.cli.platform import NOISE_SECONDS_ENV
    monkeypatch.setenv(NOISE_SECONDS_ENV, "0")


offmachine.install()  # at import: before any test module or fixture can open a socket

# A suite started from a background job of a non-interactive shell (`cmd &` in a script)
# inherits SIGINT ignored, and so would every process a test starts: the tests that stop an
# `rbs run` with SIGINT (Ctrl-C) would wait for a run that never hears it. The tests say what
# they need: SIGINT as Python's default here, so the children they start get the default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN and \
        threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGINT, signal.default_int_handler)
component_audit.install()  # which real components each test starts (scripts/components.py)

AUDIT_ENV = "RBS_COMPONENT_AUDIT"  # the folder scripts/test.sh gives for the records


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    component_audit.enter(item.nodeid.split("@")[0], list(getattr(item, "fixturenames", ())))
    yield
    component_audit.enter("")


def pytest_sessionfinish(session: pytest.Session) -> None:
    import os
    folder = os.environ.get(AUDIT_ENV)
    if folder:
        worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
        phase = os.environ.get("RBS_TEST_PHASE", "run")
        component_audit.write(Path(folder), f"{phase}-{worker}")


@pytest.fixture(autouse=True)
def _stay_on_this_machine() -> Iterator[None]:
    """A test that reached (or tried to reach) outside loopback and its own namespaces
    fails, even when the code under test swallowed the refusal (tests/offmachine.py)."""
    offmachine.take()
    yield
    found = offmachine.take()
    if found:
        pytest.fail("connected outside this machine: " + "; ".join(found[:5]), pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test's phase and group from tests/tiers.py (before pytest-xdist reads groups),
    and the longest groups first (``tiers.dispatch_rank``; a stable sort: a module's tests
    keep their order)."""
    for item in items:
        module = item.path.stem
        name = getattr(item, "originalname", item.name)
        if tiers.is_timing(module, name):
            item.add_marker(pytest.mark.timing)
        if tiers.is_fast(module, name, list(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.fast)
        item.add_marker(pytest.mark.xdist_group(tiers.group_of(module)))
    items.sort(key=lambda item: tiers.dispatch_rank(tiers.group_of(item.path.stem)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """Under ``--dist loadgroup`` every test a worker collected must carry its group in its
    id (that is how pytest-xdist schedules a group on one worker). pytest 9.2 silently drops
    it (pytest-xdist#1386): the groups of tests/tiers.py would then share the Docker engine
    and the kept build trees across workers. Stop the run rather than run it wrong."""
    config = getattr(node, "config", None)
    if config is None or config.getvalue("dist") != "loadgroup":
        return
    ungrouped = [i for i in ids if "@" not in i.rpartition("]")[2].rpartition("::")[2]]
    if ungrouped:
        pytest.exit(f"pytest-xdist did not apply the test groups of tests/tiers.py to "
                    f"{len(ungrouped)} test(s), e.g. {ungrouped[0]} (pytest {pytest.__version__}; "
                    "see pytest-xdist#1386 and the pin in pyproject.toml)", returncode=3)


FAST_TIER_ENV = "RBS_FAST_TIER"


@pytest.fixture(autouse=True)
def _fast_tier_starts_nothing(request: pytest.FixtureRequest,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ``make test-fast`` a test that starts a process fails: the tier is pure."""
    import os
    if os.environ.get(FAST_TIER_ENV) != "1":
        return

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"{request.node.nodeid} is in the fast tier (tests/tiers.py) "
                             "but starts a process")

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse)
