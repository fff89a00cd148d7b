"""No secret, however it was given (a file or ``$RBS_*``), reaches the environment of a child
that does not need it: the build sandbox's own processes (``prlimit``/``bwrap``, the launcher
of pull-request code, for ``make`` and for the built binary's ``--version``), the tools we
run (git, docker, perf), and each ``rbs`` daemon the lab starts gets only its own.

A real ``rbs builder`` with a password broker builds a tiny repository whose ``make`` and
whose ``redis-server --version`` each take a second, while every descendant's
``/proc/<pid>/environ`` is read."""

from __future__ import annotations

import ast
import json
import threading
import uuid
from pathlib import Path

import psutil
import pytest
import redis

from redis_benchmarks_spec.common.credentials import (
    DAEMON_SECRETS,
    secret_env_name,
    without_secrets,
)
from redis_benchmarks_spec.events.messages import SOURCE_GIT, BuildRequest, SourceLocation
from redis_benchmarks_spec.events.names import StreamNames
from tests.cli import REPO, rbs
from tests.conftest import RedisServer
from tests.hostile_fixtures import ARTIFACT_KEY, Daemon, daemon_env, wait_until
from tests.pipeline_fixtures import commit_all, tiny_redis_repo, tiny_variant_yaml

BROKER_PW = "broker-pw-4242"
SECRETS = {"RBS_WEBHOOK_SECRET": "hook-4243", "RBS_DATASINK_PASSWORD": "sink-4244",
           "AWS_SECRET_ACCESS_KEY": "aws-4245", "GITHUB_TOKEN": "ghp_4246"}
SLOW_SERVER_C = """\
#include <stdio.h>
#include <unistd.h>
int main(void) {
    sleep(1);
    printf("Redis server v=7.9.0 sha=00000000:0 malloc=libc bits=64 build=slow\\n");
    return 0;
}
"""
# the only module allowed to start a process without choosing its environment: it runs on
# the client host, sent there over ssh, and starts the load generators of a test
UNCHECKED = {"redis_benchmarks_spec/common/supervisor.py"}


def test_every_child_gets_a_chosen_environment() -> None:
    """Each ``subprocess`` call of the package passes ``env=`` (minimal_env for pull-request
    code, tool_env for our tools): an inherited environment carries the daemon's secrets."""
    loose = []
    for path in sorted((REPO / "redis_benchmarks_spec").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            func = node.func
            if isinstance(func.value, ast.Name) and func.value.id == "subprocess" and \
                    func.attr in ("run", "Popen", "call", "check_call", "check_output") and \
                    "env" not in {k.arg for k in node.keywords} and rel not in UNCHECKED:
                loose.append(f"{rel}:{node.lineno}")
    assert not loose, f"children that inherit our environment: {loose}"


def test_secret_names_and_what_each_daemon_keeps() -> None:
    for name in ("RBS_BROKER_PASSWORD", "RBS_BROKER_PASSWORD_FILE", "RBS_ARTIFACT_KEY",
                 "RBS_ARTIFACT_KEY_FILE", "RBS_WEBHOOK_SECRET", "RBS_GITHUB_TOKEN_FILE",
                 "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GITHUB_TOKEN"):
        assert secret_env_name(name), name
    for name in ("PATH", "HOME", "SSH_AUTH_SOCK", "RBS_STREAM_PREFIX", "RBS_BROKER",
                 "DOCKER_HOST", "LD_LIBRARY_PATH"):
        assert not secret_env_name(name), name
    env = {"PATH": "/bin", "RBS_BROKER_PASSWORD_FILE": "/f", "RBS_WEBHOOK_SECRET": "w",
           "RBS_ARTIFACT_KEY": "k", "RBS_DATASINK_PASSWORD": "d"}
    assert without_secrets(env) == {"PATH": "/bin"}
    assert set(without_secrets(env, DAEMON_SECRETS["builder"])) == {
        "PATH", "RBS_BROKER_PASSWORD_FILE", "RBS_ARTIFACT_KEY"}


@pytest.fixture
def broker(tmp_path: Path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "broker"
    folder.mkdir()
    server = RedisServer(folder)
    server.client().config_set("requirepass", BROKER_PW)
    yield server
    server.stop()


def _watch(root_pid: int, seen: dict[int, tuple[str, str]], stop: threading.Event) -> None:
    """Every descendant of ``root_pid``: its argv and environment, read while it lives
    (once it has exec'd: a child between fork and exec still shows its parent's argv and
    environment, and was once recorded so, as the builder itself carrying its secrets)."""
    try:
        parents = {tuple(psutil.Process(root_pid).cmdline())}
    except psutil.NoSuchProcess:
        return
    while not stop.is_set():
        try:
            kids = psutil.Process(root_pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return
        for kid in kids:
            if kid.pid in seen:
                continue
            try:
                argv = kid.cmdline()
                # its parent read once: a parent that ends between two reads leaves it
                # reparented to init, and ci3 (2026-12-03) lost this watcher to that KeyError
                parent = seen.get(kid.ppid())
                if tuple(argv) in parents or (parent is not None and
                                              " ".join(argv) == parent[0]):
                    continue  # forked, not yet exec'd: read it again on the next look
                environ = Path(f"/proc/{kid.pid}/environ").read_bytes().decode(errors="replace")
                seen[kid.pid] = (" ".join(argv), environ)
            except (OSError, psutil.NoSuchProcess):
                continue
        stop.wait(0.02)


def test_the_build_sandbox_launcher_carries_no_secret(broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    names = StreamNames.with_prefix(f"sc{uuid.uuid4().hex[:8]}")
    repo = tiny_redis_repo(tmp_path / "repo")
    (repo / "src" / "server.c").write_text(SLOW_SERVER_C)
    (repo / "Makefile").write_text("all:\n\tsleep 1\n\t$(MAKE) -C src\n")
    sha = commit_all(repo, "slow")
    variants = tmp_path / "variants"
    variants.mkdir()
    (variants / "v.yml").write_text(tiny_variant_yaml("gcc:slow", ""))
    key_file = tmp_path / "artifact.key"
    key_file.write_text(ARTIFACT_KEY + "\n")
    pw_file = tmp_path / "broker.pw"
    pw_file.write_text(BROKER_PW + "\n")
    client = redis.Redis(port=broker.port, password=BROKER_PW, socket_timeout=10)
    client.xadd(names.build_requests, BuildRequest(  # type: ignore[arg-type]
        org="redis", repo="redis", branch="unstable", sha=sha, commit_time_ms=1,
        source=SourceLocation(SOURCE_GIT, str(repo)), build_variants=["gcc:slow"]).encode())
    env = daemon_env(**SECRETS, RBS_BROKER_PASSWORD=BROKER_PW,
                     RBS_ARTIFACT_KEY_FILE=str(key_file))
    builder = Daemon(["builder", "--broker", f"redis://127.0.0.1:{broker.port}",
                      "--stream-prefix", names.prefix, "--consumer", "b1", "--block-ms", "200",
                      "--build-variants-dir", str(variants), "--work-dir", str(tmp_path / "w"),
                      "--build-sandbox", "bwrap"], tmp_path / "builder.log", env)
    seen: dict[int, tuple[str, str]] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(builder.proc.pid, seen, stop), daemon=True)
    watcher.start()
    try:
        wait_until(lambda: client.xlen(names.builds) or client.xlen(names.build_failures), 120,
                   "the build ended")
    finally:
        stop.set()
        watcher.join(5)
        builder.stop()
    assert client.xlen(names.builds) == 1, builder.log()[-3000:]
    launchers = {argv for argv, _ in seen.values() if "bwrap" in argv}
    assert any(" make " in f" {a} " for a in launchers), sorted(a for a, _ in seen.values())
    assert any("redis-server --version" in a for a in launchers), sorted(launchers)
    values = [*SECRETS.values(), BROKER_PW, ARTIFACT_KEY, str(key_file)]
    for argv, environ in seen.values():
        leaked = [v for v in values if v in environ]
        assert not leaked, f"{argv!r} carries {leaked}"
        names_set = {line.split("=", 1)[0] for line in environ.split("\0") if line}
        assert not {n for n in names_set if secret_env_name(n)}, (argv, names_set)


def test_each_lab_daemon_gets_only_its_own_secrets(tmp_path: Path) -> None:
    repo = tiny_redis_repo(tmp_path / "redis")
    lab = tmp_path / "lab"
    env = {"RBS_WEBHOOK_SECRET": "hook-4251", "AWS_SECRET_ACCESS_KEY": "aws-4252",
           "GITHUB_TOKEN": "ghp_4253", "RBS_ARTIFACT_KEY": ARTIFACT_KEY}
    up = rbs("lab", "up", "--dir", str(lab), "--source", str(repo), "--platforms", "p1",
             "--agent-args", "--noise-seconds 0", env=env, timeout=180)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        services = json.loads((lab / "lab.json").read_text())["services"]
        environs = {s["name"]: Path(f"/proc/{s['pid']}/environ").read_bytes().decode()
                    for s in services}
    finally:
        rbs("lab", "down", "--dir", str(lab), timeout=300)
    for name, environ in environs.items():
        assert "hook-4251" not in environ and "ghp_4253" not in environ, name
        kind = name.split("-", 1)[0]  # the keeper restarts them: it holds theirs
        assert (ARTIFACT_KEY in environ) == (kind in ("builder", "agent", "keeper")), name
        assert ("aws-4252" in environ) == (kind in ("builder", "agent", "keeper")), name
