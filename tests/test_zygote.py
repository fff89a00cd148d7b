"""The tests' ``rbs`` forked from a warm zygote (tests/rbs_zygote.py) is the ``rbs`` a user
starts: the same output, exit codes, environment, folder and end, and nothing in the
package reads the environment at import time (the zygote imported it under its own)."""

from __future__ import annotations

import ast
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests import cli
from tests.cli import RBS, WarmProcess, rbs, rbs_daemon, write_suite

PACKAGE = Path(__file__).resolve().parents[1] / "redis_benchmarks_spec"
SUITE = """version: 0.4
name: zy
tested-commands: [set]
redis-topologies: [oss-standalone]
clientconfig:
  tool: redis-benchmark
  arguments: -n 1000 -t set
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


@pytest.fixture(autouse=True)
def _zygote_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are of the zygote: on whatever RBS_TEST_ZYGOTE says for the rest."""
    monkeypatch.setenv("RBS_TEST_ZYGOTE", "1")


def _cold(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RBS, *args], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ, **env}, cwd=cwd)


def test_a_forked_rbs_answers_as_the_console_script_does(tmp_path: Path) -> None:
    write_suite(tmp_path / "suites", "zy", SUITE)
    env = {"COLUMNS": "80", "RBS_ZYGOTE_PROBE": "1"}
    cases = [
        # a relative folder, read against the folder the test gives
        ("run", "--suites-dir", "suites", "--dry-run", "--format", "json"),
        ("run", "--suites-dir", "suites", "--dry-run"),
        ("suites", "list", "suites"),
        ("compare", "--no-such-flag"),  # usage: exit 2, one line on stderr
        ("run", "--datasink", "redis://:hunter2@127.0.0.1:1"),  # refused before any import
    ]
    for args in cases:
        warm = rbs(*args, env=env, cwd=tmp_path)
        cold = _cold(*args, env=env, cwd=tmp_path)
        assert (warm.returncode, warm.stdout, warm.stderr) == \
            (cold.returncode, cold.stdout, cold.stderr), args
    assert rbs("compare", "--no-such-flag", cwd=tmp_path).returncode == 2
    assert cli._Zygote._one is not None and cli._Zygote._one.proc.poll() is None  # forked
    # the folder and environment are the test's, not the zygote's
    missing = rbs("suites", "list", "suites", cwd=tmp_path / "suites")
    assert missing.returncode == 2 and "suites" in missing.stderr


def test_a_forked_rbs_that_outlives_its_timeout_is_killed(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    secret = tmp_path / "secret"
    secret.write_text("s" * 32)
    # `rbs api` serves until stopped (its broker is never reached before a request)
    with pytest.raises(subprocess.TimeoutExpired):
        rbs("api", "--host", "127.0.0.1", "--port", str(port), "--broker",
            "redis://127.0.0.1:1", "--secret-file", str(secret), timeout=5)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _listening(port):
        time.sleep(0.1)
    assert not _listening(port), "the timed-out rbs still serves"


def test_a_forked_daemon_is_stopped_by_its_pid_as_the_console_scripts_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s" * 32)
    ends = []
    for warm in ("1", "0"):
        monkeypatch.setenv("RBS_TEST_ZYGOTE", warm)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log = tmp_path / f"api-{warm}.log"
        proc = rbs_daemon(["api", "--host", "127.0.0.1", "--port", str(port), "--broker",
                           "redis://127.0.0.1:1", "--secret-file", str(secret)], log,
                          dict(os.environ))
        assert isinstance(proc, WarmProcess) == (warm == "1")
        deadline = time.monotonic() + 60
        while not _listening(port) and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        assert proc.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(0.2)
        proc.terminate()
        ends.append((proc.wait(30), _listening(port), "Traceback" in log.read_text()))
    # (rbs api ends by SIGTERM's default: -15, in both)
    assert ends[0] == ends[1] and ends[0][1:] == (False, False), ends


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_a_signal_ends_a_forked_rbs_as_it_ends_the_console_script(tmp_path: Path) -> None:
    """SIGTERM is an interrupt to `rbs run` (exit 130, one line), in both."""
    write_suite(tmp_path / "suites", "zy", SUITE.replace("-n 1000", f"-n {REQUESTS}"))
    common = ("run", "--suites-dir", str(tmp_path / "suites"), "--no-datasink",
              "--results-dir")
    codes = []
    for warm in (True, False):
        out = str(tmp_path / ("warm" if warm else "cold"))
        killer = threading.Thread(target=_stop_the_benchmarks_parent, daemon=True)
        killer.start()
        done = rbs(*common, out, timeout=120) if warm else \
            _cold(*common, out, env={}, cwd=tmp_path)
        killer.join(timeout=30)
        codes.append((done.returncode, done.stderr.strip().splitlines()[-1:]))
    assert codes[0] == codes[1] and codes[0][0] == 130, codes


#: the benchmark of the signal test, found by its request count
REQUESTS = 49_999_999


def _stop_the_benchmarks_parent() -> None:
    """SIGTERM to the `rbs` whose redis-benchmark sends REQUESTS, once it runs."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue  # ended meanwhile
            if cmd and cmd[0].endswith(b"redis-benchmark") and str(REQUESTS).encode() in cmd:
                time.sleep(1.0)  # the run is under way
                os.kill(int(stat.rsplit(")", 1)[1].split()[1]), signal.SIGTERM)
                return
        time.sleep(0.1)


def _module_level_env_reads(tree: ast.Module) -> list[int]:
    """Lines of module bodies (and class bodies, which run at import too) that read the
    environment, the home or the working folder."""
    found: list[int] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for deco in getattr(node, "decorator_list", []):
                visit(deco)
            for default in node.args.defaults + node.args.kw_defaults:
                if default is not None:
                    visit(default)
            return
        if isinstance(node, ast.Attribute) and (
                (node.attr in ("environ", "getenv", "getcwd") and
                 isinstance(node.value, ast.Name) and node.value.id == "os") or
                (node.attr in ("home", "cwd") and isinstance(node.value, ast.Name) and
                 node.value.id == "Path")):
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def test_nothing_in_the_package_reads_the_environment_at_import() -> None:
    reads = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = _module_level_env_reads(ast.parse(path.read_text(), str(path)))
        if lines:
            reads[str(path.relative_to(PACKAGE))] = lines
    assert reads == {}, reads
    # the check can fail: a read at module level is found, one in a function is not
    planted = ast.parse("import os\nX = os.environ.get('A')\ndef f():\n    return os.getenv('B')\n")
    assert _module_level_env_reads(planted) == [2]
