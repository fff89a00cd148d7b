"""Secrets stay secret and nothing outlives a killed agent: real ``rbs agent`` processes,
a password-protected redis-server broker, the embedded RedisTimeSeries datasink, real
redis-server and redis-benchmark children."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import threading
import uuid
from pathlib import Path

import psutil
import pytest
import redis

from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, read_statuses
from tests.cli import write_suite
from tests.conftest import RedisServer
from tests.datasink_fixtures import datasink_fixture  # noqa: F401  (registers the fixture)
from tests.hostile_fixtures import Daemon, daemon_env, event, signed_ref, wait_until
from tests.pipeline_fixtures import SUITE, system_artifact
from tests.procs import descendants

BROKER_PW = "broker-pw-9931"
SECRETS = {"AWS_SECRET_ACCESS_KEY": "aws-secret-9932", "RBS_WEBHOOK_SECRET": "hook-9933",
           "GITHUB_TOKEN": "ghp_secret9934"}
SHA = "c" * 40
# a redis-benchmark that records its environment and its sibling redis-server's, then runs
WRAPPER = """#!/bin/sh
for p in $(ps -o pid= --ppid $PPID); do
  echo "== $(cat /proc/$p/comm)" >> {dump}; tr '\\0' '\\n' < /proc/$p/environ >> {dump}
done
exec {real} "$@"
"""


@pytest.fixture
def names() -> StreamNames:
    return StreamNames.with_prefix(f"hs{uuid.uuid4().hex[:8]}")


@pytest.fixture
def broker(tmp_path: Path):  # type: ignore[no-untyped-def]
    d = tmp_path / "broker"
    d.mkdir()
    server = RedisServer(d)
    server.client().config_set("requirepass", BROKER_PW)
    yield server
    server.stop()


def authed(broker: RedisServer) -> redis.Redis:
    return redis.Redis(port=broker.port, password=BROKER_PW, socket_timeout=10)


def start_agent(broker: RedisServer, names: StreamNames, tmp_path: Path, datasink_url: str,
                n: int) -> Daemon:
    suites = tmp_path / "suites"
    suites.mkdir(exist_ok=True)
    write_suite(suites, "s", SUITE.format(name="secret-set", n=n))
    wrapper = tmp_path / "redis-benchmark"
    wrapper.write_text(WRAPPER.format(dump=tmp_path / "env.dump",
                                      real=shutil.which("redis-benchmark")))
    wrapper.chmod(0o755)
    pw_file = tmp_path / "broker.pw"
    pw_file.write_text(BROKER_PW + "\n")
    argv = ["-v", "agent", "--broker", f"redis://127.0.0.1:{broker.port}",
            "--stream-prefix", names.prefix, "--platform", "p1", "--consumer", "agent-1",
            "--block-ms", "200", "--suites-dir", str(suites),
            "--work-dir", str(tmp_path / "work"), "--results-dir", str(tmp_path / "results"),
            "--datasink", datasink_url, "--redis-benchmark-bin", str(wrapper)]
    return Daemon(argv, tmp_path / "agent.log",
                  daemon_env(**SECRETS, RBS_BROKER_PASSWORD_FILE=str(pw_file)))


def state(client: redis.Redis, names: StreamNames, event_id: str, test: str) -> str | None:
    found = [s.state for s in read_statuses(client, names, event_id) if s.test_name == test]
    return found[0] if found else None


def test_agent_secrets_children_and_kill_9(broker, names, tmp_path,  # type: ignore[no-untyped-def]
                                          datasink: EmbeddedDatasink) -> None:
    client = authed(broker)
    ev = event(signed_ref(client, names, SHA, system_artifact().data), SHA)
    client.xadd(names.builds, ev.encode())  # type: ignore[arg-type]
    agent = start_agent(broker, names, tmp_path, datasink.url or "", n=400_000)
    try:
        # the password (given in a file) is not in the daemon's argv
        wait_until(lambda: state(client, names, ev.id, "secret-set") == "running", 60,
                   "the suite is running")
        cmdline = Path(f"/proc/{agent.proc.pid}/cmdline").read_bytes().decode()
        assert BROKER_PW not in cmdline and f"127.0.0.1:{broker.port}" in cmdline
        dump = tmp_path / "env.dump"
        wait_until(lambda: dump.exists() and "== redis-server" in dump.read_text(), 60,
                   "the client recorded its environment")
        # the dump is written before the wrapper execs the real client: look until both show
        seen: list = []

        def both_running() -> bool:
            seen[:] = descendants(agent.proc.pid)
            return {"redis-server", "redis-benchmark"} <= {n for _, n, _ in seen}

        wait_until(both_running, 30, "redis-server and redis-benchmark under the agent")
        children = [c for c, _, _ in seen]
        os.kill(agent.proc.pid, signal.SIGKILL)
        agent.proc.wait(timeout=10)
        _gone, alive = psutil.wait_procs(children, timeout=15)
        assert not alive, [(p.pid, p.name()) for p in alive]
    finally:
        agent.stop()
    text = (tmp_path / "env.dump").read_text()
    for value in [BROKER_PW, *SECRETS.values()]:
        assert value not in text
    assert "RBS_" not in text and "AWS_" not in text
    # a restart under the same name finishes what the killed agent left "running"
    (tmp_path / "env.dump").unlink()
    agent = start_agent(broker, names, tmp_path, datasink.url or "", n=400_000)
    try:
        wait_until(lambda: state(client, names, ev.id, EVENT_DONE) == "completed", 180,
                   "the restarted agent finished the event")
    finally:
        agent.stop()
    assert state(client, names, ev.id, "secret-set") == "completed"
    stored = [json.loads(v) for v in client.hvals(f"{names.prefix}:results:{ev.id}:p1")]
    assert stored and BROKER_PW not in json.dumps(stored)


# masterauth: a secret the server takes on its command line without making clients
# authenticate (the runner's clients do not AUTH; requirepass is checked in the unit test below)
REQUIREPASS_SUITE = """
name: secret-requirepass
dbconfig:
  configuration-parameters:
    masterauth: suite-pw-5521
    replica-announce-ip: 127.0.0.1
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -c 1 -n 100 -t set
"""


def test_result_documents_never_store_server_passwords(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "s", REQUIREPASS_SUITE)
    rbs = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "rbs")
    done = subprocess.run([rbs, "run", "--suites-dir", str(suites), "--results-dir",
                           str(tmp_path / "results"), "--no-datasink"], capture_output=True,
                          text=True, timeout=300, check=False)
    stored = list((tmp_path / "results").rglob("*.json"))
    assert any(p.name == "result.json" for p in stored), done.stdout + done.stderr
    for path in stored:
        text = path.read_text()
        assert "suite-pw-5521" not in text, path
    result = json.loads(next(p for p in stored if p.name == "result.json").read_text())
    assert result["status"] == "ok", result["reason"]
    assert "--masterauth" in result["server_args"] and "***" in result["server_args"]


def test_stored_documents_mask_every_password_form() -> None:
    from redis_benchmarks_spec.results.document import RunContext, RunResult
    result = RunResult(test_name="t", run_id="r", status="ok",
                       context=RunContext(extra_server_args=["--requirepass", "pw-a"]),
                       server_args=["--masterauth", "pw-b", "requirepass", "pw-c"],
                       argv=[["redis-benchmark", "-a", "pw-d", "--uri=redis://:pw-e@h:1"]])
    text = json.dumps(result.to_dict())
    for secret in ("pw-a", "pw-b", "pw-c", "pw-d", "pw-e"):
        assert secret not in text
    assert "pw-a" not in result.context.session_label()


# every place a suite can put a credential; each value planted once, grepped everywhere
PLANTED = {"requirepass": "req-pw-7101", "masterauth": "master-pw-7102",
           "user": "user-pw-7103", "hash": hashlib.sha256(b"hash-pw-7104").hexdigest(),
           "acl setuser": "init-pw-7105", "config set": "req2-pw-7106",
           "tool -a": "tool-pw-7107", "tool -u": "uri-pw-7108",
           "preload --authenticate": "pre-pw-7109"}
ACL_SUITE = f"""
name: secret-acl
dbconfig:
  configuration-parameters:
    save: '""'
    requirepass: {PLANTED['requirepass']}
    masterauth: {PLANTED['masterauth']}
    user: 'bench on >{PLANTED['user']} #{PLANTED['hash']} ~* &* +@all'
  init_commands:
    - ACL SETUSER loader on >{PLANTED['acl setuser']} ~* &* +@all
    - CONFIG SET requirepass {PLANTED['config set']}
  preload_tool:
    tool: memtier_benchmark
    arguments: --ratio 1:0 --key-pattern P:P --key-maximum 1000 -n allkeys -c 1 -t 1 --authenticate {PLANTED['preload --authenticate']}
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -c 2 -n 100000 -t set -a {PLANTED['tool -a']} --user bench -u redis://:{PLANTED['tool -u']}@127.0.0.1:1
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def _sample_children(pid: int, stop: threading.Event, seen: dict[str, list[str]]) -> None:
    """/proc/<child>/cmdline and environ of every descendant of ``pid``, as fast as it goes."""
    while not stop.is_set():
        try:
            children = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return
        for child in children:
            for what in ("cmdline", "environ"):
                try:
                    text = Path(f"/proc/{child.pid}/{what}").read_bytes().decode(errors="replace")
                except OSError:
                    continue
                seen.setdefault(what, []).append(text.replace("\0", " "))
        stop.wait(0.005)  # a few hundred samples a second, without taking a core


def test_planted_secrets_reach_no_stored_byte_and_no_child_argv(tmp_path: Path) -> None:
    from tests.datasink_fixtures import start_datasink
    suites = tmp_path / "suites"
    write_suite(suites, "s", ACL_SUITE)
    sink = start_datasink(tmp_path / "datasink")
    rbs = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "rbs")
    seen: dict[str, list[str]] = {}
    stop = threading.Event()
    try:
        with (tmp_path / "rbs.out").open("wb") as out:
            proc = subprocess.Popen([rbs, "-v", "run", "--suites-dir", str(suites),
                                     "--results-dir", str(tmp_path / "results"),
                                     "--datasink", sink.url or ""],
                                    stdout=out, stderr=subprocess.STDOUT)
            sampler = threading.Thread(target=_sample_children, args=(proc.pid, stop, seen))
            sampler.start()
            try:
                proc.wait(timeout=300)
            finally:
                stop.set()
                sampler.join(timeout=30)
        client = sink.client()
        client.config_set("rdbcompression", "no")  # every stored byte greppable as written
        client.save()
    finally:
        sink.down()
    results = list((tmp_path / "results").rglob("result.json"))
    assert results, (tmp_path / "rbs.out").read_text()
    result = json.loads(results[0].read_text())
    assert result["status"] == "ok", result["reason"]
    # the tools ran as the run's own user, and the result says so
    assert result["client_credential"].startswith("throwaway ACL user rbs-run-"), result
    tools = [c for c in seen.get("cmdline", []) if "redis-benchmark" in c and " -p " in c]
    servers = [c for c in seen.get("cmdline", []) if "redis-server" in c]
    assert tools and all("--user rbs-run-" in c for c in tools), tools[:3]
    memtier = [c for c in seen.get("cmdline", []) if "memtier_benchmark" in c and "--port" in c]
    assert memtier and all("--authenticate rbs-run-" in c for c in memtier), memtier[:3]
    assert servers, seen.get("cmdline", [])[:5]
    assert "--user" in result["server_args"] and ">***" in result["server_args"]
    assert "#***" in result["server_args"], result["server_args"]
    sink_files = [p for p in (tmp_path / "datasink").rglob("*") if p.is_file()]
    assert any(b"secret-acl" in p.read_bytes() for p in sink_files)  # the run was pushed
    # nothing the run wrote (results, tool outputs, logs, its output, the datasink's
    # files) and no child's argv or environment holds a planted secret
    for what, secret in PLANTED.items():
        for text in (*seen.get("cmdline", []), *seen.get("environ", [])):
            assert secret not in text, (what, text)
        for path in tmp_path.rglob("*"):
            if path.is_file() and suites not in path.parents:  # the input itself
                assert secret.encode() not in path.read_bytes(), (what, path)


def test_the_throwaway_user_has_the_suites_permissions_and_is_deleted(redis_server) -> None:  # type: ignore[no-untyped-def]
    from redis_benchmarks_spec.loadgen.base import ClientTarget
    from redis_benchmarks_spec.runner import run_user
    admin = redis_server.client()
    admin.execute_command("ACL", "SETUSER", "ro", "on", ">ro-pw-7110", "~app:*", "+get", "+ping")
    ro = ClientTarget("127.0.0.1", redis_server.port, password="ro-pw-7110", user="ro")
    target, user, note = run_user.for_tools([admin], ro)
    assert user is not None and target.user == user.name and target.password != "ro-pw-7110"
    assert user.name.startswith("rbs-run-") and user.name in note
    tool = redis.Redis(port=redis_server.port, username=target.user, password=target.password)
    assert tool.ping() and tool.get("app:x") is None
    with pytest.raises(redis.exceptions.NoPermissionError):
        tool.set("app:x", 1)  # what the suite's user may not do, neither may the tools
    user.delete()
    assert user.name.encode() not in admin.execute_command("ACL", "USERS")
    # no password needed: nothing made
    assert run_user.for_tools([admin], ClientTarget("127.0.0.1", 1))[1:] == (None, "")


def test_reasons_and_every_acl_form_are_masked_where_stored() -> None:
    from redis_benchmarks_spec.results.document import RunResult
    result = RunResult(test_name="t", run_id="r", status="failed",
                       server_args=["--user", "u", "on", ">pw-f", "<pw-g", "#" + "a" * 64,
                                    "~*", "--port", "1"],
                       argv=[["memtier_benchmark", "--authenticate=u:pw-h"],
                             ["x", "--uri=rediss://h:1/?password=pw-i"]],
                       reason="init command 'ACL SETUSER bob on >pw-j' failed: AUTH pw-k",
                       log_tail="requirepass pw-l\nredis://u:pw-m@h:1")
    text = json.dumps(result.to_dict())
    for secret in ("pw-f", "pw-g", "a" * 64, "pw-h", "pw-i", "pw-j", "pw-k", "pw-l", "pw-m"):
        assert secret not in text, secret
    assert "--port" in text and '"1"' in text  # what is not a secret stays


FAILING_INIT = """
name: secret-init-fails
dbconfig:
  init_commands:
    - ACL SETUSER bob on >init-fail-pw-7120 +no-such-command
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -c 1 -n 100 -t set
"""


def test_a_failure_reason_and_the_log_never_show_a_password(tmp_path: Path) -> None:
    import logging

    from redis_benchmarks_spec.cli.console import CurrentStderrHandler
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "running %s",
                               ("ACL SETUSER u on >log-pw-7121 -a log-pw-7122",), None)
    line = CurrentStderrHandler().format(record)
    assert "log-pw-7121" not in line and "log-pw-7122" not in line and ">***" in line
    suites = tmp_path / "suites"
    write_suite(suites, "s", FAILING_INIT)
    rbs = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "rbs")
    done = subprocess.run([rbs, "-v", "run", "--suites-dir", str(suites), "--results-dir",
                           str(tmp_path / "results"), "--no-datasink"], capture_output=True,
                          text=True, timeout=300, check=False)
    [path] = (tmp_path / "results").rglob("result.json")
    result = json.loads(path.read_text())
    assert result["status"] == "failed" and "init command" in result["reason"], result
    assert "init-fail-pw-7120" not in done.stdout + done.stderr
    for written in (tmp_path / "results").rglob("*"):
        if written.is_file():
            assert b"init-fail-pw-7120" not in written.read_bytes(), written
