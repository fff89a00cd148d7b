"""No secret in a daemon's argv, even briefly. ``rbs agent|builder|api`` given a password in
a URL refuses it in one line naming the flag and the environment/file alternatives (the
console script checks before importing anything else), and a daemon started the supported
way (URL without password, the password in a file) never shows it: /proc/<pid>/cmdline and
/proc/<pid>/environ are polled from the first instant the process exists."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.common.credentials import argv_refusal, daemon_argv_secret
from redis_benchmarks_spec.common.process import free_port, wait_for
from tests.conftest import RedisServer
from tests.hostile_fixtures import RBS, daemon_env

PASSWORD = "argv-window-pw-5150"


def proc_text(pid: int, what: str) -> str | None:
    try:
        return Path(f"/proc/{pid}/{what}").read_bytes().decode(errors="replace")
    except OSError:
        return None  # gone


def watch(proc: subprocess.Popen[bytes], seconds: float) -> tuple[int, float, str]:
    """Poll the process's cmdline and environ as fast as possible for ``seconds`` (or until
    it exits): (polls, seconds the password was seen for, what was seen)."""
    polls, first, last, seen = 0, None, None, ""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        now = time.monotonic()
        for what in ("cmdline", "environ"):
            text = proc_text(proc.pid, what)
            if text and PASSWORD in text:
                first, last, seen = first or now, now, what
        polls += 1
    return polls, (last - first) if first is not None and last is not None else 0.0, seen


@pytest.mark.parametrize("command", ["agent", "builder", "api"])
def test_a_password_in_a_daemon_url_is_refused_in_one_line(command: str) -> None:
    url = f"redis://user:{PASSWORD}@127.0.0.1:1"
    started = time.monotonic()
    done = subprocess.run([*RBS, command, "--broker", url], capture_output=True, text=True,
                          timeout=60, env=daemon_env(), check=False)
    lived = time.monotonic() - started
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and PASSWORD not in done.stderr, done.stderr
    assert lines[0].startswith(f"rbs {command}: --broker holds a password")
    assert "$RBS_BROKER_PASSWORD or a file named by $RBS_BROKER_PASSWORD_FILE" in lines[0]
    # it ends before importing the command modules (the re-exec came after 0.64-0.72 s)
    assert lived < 2.0, lived


@pytest.mark.parametrize(("argv", "flag"), [
    (["agent", "--datasink=redis://:pw@h:1"], "--datasink"),
    (["-v", "builder", "--brok", "redis://:pw@h:1"], "--brok"),
    (["api", "--github-api-url", "https://u:pw@api.example"], "--github-api-url"),
])
def test_every_form_and_flag_is_caught(argv: list[str], flag: str) -> None:
    line = daemon_argv_secret(argv)
    assert line is not None and f": {flag} holds a password" in line and ":pw@" not in line
    # every command, not only the daemons
    assert daemon_argv_secret(["trigger", "--broker", "redis://:pw@h:1"]) is not None
    assert daemon_argv_secret(["agent", "--broker", "redis://h:1"]) is None
    assert argv_refusal("agent", ["/x/rbs", "agent", "--broker", "redis://h:1"]) is None


def _start(argv: list[str], tmp_path: Path, name: str) -> subprocess.Popen[bytes]:
    pw_file = tmp_path / "broker.pw"
    pw_file.write_text(PASSWORD + "\n")
    env = daemon_env(RBS_BROKER_PASSWORD_FILE=str(pw_file),
                     RBS_DATASINK_PASSWORD_FILE=str(pw_file), RBS_WEBHOOK_SECRET="hook")
    return subprocess.Popen([*RBS, *argv], stdout=(tmp_path / f"{name}.log").open("wb"),
                            stderr=subprocess.STDOUT, env=env)


def _healthz(port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as resp:
            return int(resp.status)
    except OSError:  # not listening yet (URLError is an OSError)
        return 0


def test_a_daemon_started_the_supported_way_never_shows_the_password(tmp_path: Path) -> None:
    broker_dir = tmp_path / "broker"
    broker_dir.mkdir()
    broker = RedisServer(broker_dir)
    broker.client().config_set("requirepass", PASSWORD)
    url = f"redis://127.0.0.1:{broker.port}"
    port = free_port()
    (tmp_path / "suites").mkdir()
    (tmp_path / "variants").mkdir()
    starts = {
        "agent": ["agent", "--broker", url, "--platform", "p1", "--block-ms", "200",
                  "--suites-dir", str(tmp_path / "suites"), "--work-dir", str(tmp_path / "aw"),
                  "--results-dir", str(tmp_path / "ar"), "--datasink", url],
        "builder": ["builder", "--broker", url, "--block-ms", "200", "--build-variants-dir",
                    str(tmp_path / "variants"), "--work-dir", str(tmp_path / "bw"),
                    "--cache-dir", str(tmp_path / "bc")],
        "api": ["api", "--broker", url, "--host", "127.0.0.1", "--port", str(port)],
    }
    procs = {name: _start(argv, tmp_path, name) for name, argv in starts.items()}
    try:
        for name, proc in procs.items():
            polls, window, seen = watch(proc, 4.0)
            assert proc.poll() is None, (name, (tmp_path / f"{name}.log").read_text())
            assert polls > 100 and window == 0.0 and seen == "", (name, polls, window, seen)
        # the api is serving, authenticated to the broker (a loaded host may take a while to
        # import and bind: waited for, not assumed)
        assert wait_for(lambda: _healthz(port) == 200, timeout=60), "the api never served"
        # the agent and builder are connected with the password from the file: their
        # consumer groups exist
        authed = redis.Redis(port=broker.port, password=PASSWORD, socket_timeout=10)
        assert authed.keys("*"), "no daemon wrote to the broker"
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        broker.stop()
    assert os.environ.get("RBS_BROKER_PASSWORD") is None


# every form a client library reads a password from (redis-py reads ?password=)
URL_FORMS = ["redis://user:{pw}@127.0.0.1:{port}", "redis://:{pw}@127.0.0.1:{port}",
             "redis://127.0.0.1:{port}?password={pw}", "redis://127.0.0.1:{port}/0?db=0&password={pw}",
             "redis://127.0.0.1:{port}?%70assword={pw}", "redis://%3A{pw}@127.0.0.1:{port}",
             "rediss://:{pw}@127.0.0.1:{port}", "REDIS://127.0.0.1:{port}?PASSWORD={pw}",
             "unix:///tmp/rbs-{port}.sock?password={pw}", "unix:/tmp/rbs-{port}.sock?password={pw}"]
COMMANDS = [(["builder", "--broker"], "$RBS_BROKER_PASSWORD"),
            (["agent", "--platform", "p1", "--broker"], "$RBS_BROKER_PASSWORD"),
            (["api", "--broker"], "$RBS_BROKER_PASSWORD"),
            (["trigger", "--repo", ".", "--branch", "unstable", "--broker"],
             "$RBS_BROKER_PASSWORD"),
            (["admin", "dead-letter", "--broker"], "$RBS_BROKER_PASSWORD"),
            (["run", "--datasink"], "$RBS_DATASINK_PASSWORD"),
            (["agent", "--platform", "p1", "--broker", "redis://127.0.0.1:1", "--datasink"],
             "$RBS_DATASINK_PASSWORD")]


@pytest.mark.parametrize("form", URL_FORMS)
def test_every_url_form_is_refused_before_anything_connects(form: str) -> None:
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    url = form.format(pw=PASSWORD, port=listener.getsockname()[1])
    try:
        for prefix, env in COMMANDS:
            for argv in ([*prefix, url], [*prefix[:-1], f"{prefix[-1]}={url}"]):
                done = subprocess.run([*RBS, *argv], capture_output=True, text=True,
                                      timeout=60, env=daemon_env(), check=False)
                lines = done.stderr.strip().splitlines()
                assert done.returncode == 2, (argv, done.stderr)
                assert len(lines) == 1 and PASSWORD not in done.stderr, (argv, done.stderr)
                assert f"{prefix[-1]} holds a password" in lines[0] and env in lines[0], lines
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing connected
    finally:
        listener.close()


def test_a_password_flag_is_refused() -> None:
    done = subprocess.run([*RBS, "datasink", "status", "--datasink", "redis://127.0.0.1:1",
                           "--pass", PASSWORD], capture_output=True, text=True, timeout=60,
                          env=daemon_env(), check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert PASSWORD not in done.stderr and "$RBS_DATASINK_PASSWORD" in done.stderr
