"""``rbs builder`` attacked through requests and pull-request code: poison requests are
dead-lettered, git never takes a request value as an option, a Makefile sees no secret, no
network and no file outside its tree, and a pre-seeded artifact manifest is never reused.
A real builder process (or daemon object), a real broker, real gcc in the sandbox."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.builder import artifacts, signing
from redis_benchmarks_spec.builder.daemon import Builder, BuilderConfig
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    BuildEvent,
    BuildFailure,
    BuildRequest,
    SourceLocation,
)
from redis_benchmarks_spec.events.names import StreamNames
from tests.hostile_fixtures import (
    ARTIFACT_KEY,
    Daemon,
    daemon_env,
    dead_letters,
    gzip_bomb,
    wait_until,
)
from tests.pipeline_fixtures import commit_all, tiny_redis_repo, tiny_variant_yaml

VARIANT = "gcc:hostile"
SECRETS = {"AWS_SECRET_ACCESS_KEY": "aws-secret-4711", "RBS_WEBHOOK_SECRET": "hook-secret-4712",
           "RBS_DATASINK": "redis://:datasink-pw-4713@127.0.0.1:1"}
EVIL_MAKEFILE = """\
all:
\t@echo ENV-BEGIN; env; echo ENV-END
\t@cat {secret_file} 2>/dev/null && echo READ-SECRET || echo NO-SECRET-FILE
\t@python3 -c "import socket; socket.create_connection(('127.0.0.1', {port}), 2)" \\
\t    && echo NET-OK || echo NET-BLOCKED
\t@touch {outside} 2>/dev/null; touch {host_dir_file} 2>/dev/null \\
\t    && echo WROTE-OUTSIDE || echo NO-WRITE-OUTSIDE
\t@exit 3
"""


@pytest.fixture
def names() -> StreamNames:
    return StreamNames.with_prefix(f"hb{uuid.uuid4().hex[:8]}")


def variants(tmp_path: Path) -> Path:
    d = tmp_path / "variants"
    d.mkdir(exist_ok=True)
    (d / "v.yml").write_text(tiny_variant_yaml(VARIANT, ""))
    return d


def request(sha: str, remote: str, **kw: object) -> BuildRequest:
    return BuildRequest(org="redis", repo="redis", branch="unstable", sha=sha,
                        commit_time_ms=1, source=SourceLocation(SOURCE_GIT, remote),
                        build_variants=[VARIANT], **kw)  # type: ignore[arg-type]


def start_builder(redis_server, names: StreamNames, tmp_path: Path, **env: str) -> Daemon:  # type: ignore[no-untyped-def]
    argv = ["builder", "--broker", redis_server.url, "--stream-prefix", names.prefix,
            "--consumer", "builder-1", "--block-ms", "200",
            "--build-variants-dir", str(variants(tmp_path)),
            "--work-dir", str(tmp_path / "area" / "work"),
            "--cache-dir", str(tmp_path / "area" / "cache")]
    return Daemon(argv, tmp_path / "builder.log", daemon_env(**env), warm=True)


def failures(client: redis.Redis, names: StreamNames) -> list[BuildFailure]:
    rows: Any = client.xrange(names.build_failures)
    return [BuildFailure.decode(f, i.decode()) for i, f in rows]


def test_poison_requests_are_dead_lettered_and_git_takes_no_option(redis_server, names,  # type: ignore[no-untyped-def]
                                                                   tmp_path) -> None:
    client = redis_server.client()
    marker = tmp_path / "pwned"
    good = request("a" * 40, "/nonexistent").encode()
    inject = f"--upload-pack=touch {marker}"
    cases: dict[str, dict[Any, Any]] = {
        "non-utf8-name": {**good, b"\xff": b"s:x"},
        "non-utf8-value": {**good, "repo": b"s:\xc3\x28"},
        "deep-json": {**good, "filters": b"j:" + b"{\"a\":" * 50_000 + b"1" + b"}" * 50_000},
        "sha-option": {**good, "sha": f"s:{inject}".encode()},
        "remote-option": {**good, "source": b'j:{"kind":"git","location":"' +
                          inject.encode() + b'","sha256":null}'},
        "sha-escape": {**good, "sha": b"s:../../../x"},
        "id-escape": {**good, "id": b"s:../../victim"},
    }
    ids = {client.xadd(names.build_requests, f).decode(): label  # type: ignore[arg-type]
           for label, f in cases.items()}
    # liveness: a valid request for an unknown variant fails at once, without compiling
    client.xadd(names.build_requests,  # type: ignore[arg-type]
                {**request("b" * 40, "/nonexistent").encode(), "build_variants": b'j:["nope"]'})
    builder = start_builder(redis_server, names, tmp_path)
    try:
        wait_until(lambda: any(f.build_variant == "nope" for f in failures(client, names)),
                   60, "the valid request after the poison was served")
        assert builder.alive(), builder.log()[-3000:]
    finally:
        builder.stop()
    letters = dead_letters(client, names)
    for entry_id, label in ids.items():
        assert entry_id in letters, f"{label} was not dead-lettered"
    assert "not UTF-8" in letters[next(i for i, lb in ids.items() if lb == "non-utf8-name")][0]
    assert not marker.exists()
    assert not list(tmp_path.glob("x*")) and not (tmp_path / "victim").exists()
    assert "Traceback" not in builder.log()


def test_pull_request_code_sees_no_secret_no_network_no_outside(redis_server, names,  # type: ignore[no-untyped-def]
                                                                tmp_path) -> None:
    client = redis_server.client()
    secret_file = tmp_path / "secrets" / "artifact.key"
    secret_file.parent.mkdir()
    secret_file.write_text(ARTIFACT_KEY + "\n")
    outside = tmp_path / "outside-marker"  # /tmp is a private tmpfs in the sandbox
    host_dir_file = Path("/var/tmp") / f"rbs-hostile-{uuid.uuid4().hex}"  # not mounted at all
    repo = tiny_redis_repo(tmp_path / "repo")
    (repo / "Makefile").write_text(EVIL_MAKEFILE.format(
        secret_file=secret_file, port=redis_server.port, outside=outside,
        host_dir_file=host_dir_file))
    sha = commit_all(repo, "evil")
    client.xadd(names.build_requests, request(sha, str(repo)).encode())  # type: ignore[arg-type]
    builder = start_builder(redis_server, names, tmp_path, RBS_ARTIFACT_KEY_FILE=str(secret_file),
                            **SECRETS)
    try:
        [failure] = wait_until(lambda: failures(client, names), 120, "the build failed")
    finally:
        builder.stop()
    log = failure.log_tail
    assert "ENV-BEGIN" in log and "ENV-END" in log, log  # the Makefile did run
    env_lines = log.split("ENV-BEGIN")[1].split("ENV-END")[0].strip().splitlines()
    assert {line.split("=")[0] for line in env_lines} <= {
        "PATH", "HOME", "LANG", "TMPDIR", "PWD", "SHLVL", "_", "MAKEFLAGS", "MFLAGS",
        "MAKELEVEL", "MAKEOVERRIDES", "CC", "CXX", "REDIS_CFLAGS", "BUILD_TLS", "V",
        "OLDPWD"}, env_lines
    for value in [*SECRETS.values(), ARTIFACT_KEY, redis_server.url]:
        assert value not in log
    assert "NO-SECRET-FILE" in log and "NET-BLOCKED" in log and "NO-WRITE-OUTSIDE" in log
    assert not outside.exists() and not host_dir_file.exists()


def test_pre_seeded_manifest_is_not_reused(redis_server, names, tmp_path) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "repo")
    sha = commit_all(repo, "clean")
    variant = load_variants(variants(tmp_path))[VARIANT]
    key = artifacts.artifact_key(names.prefix, sha, VARIANT, variant.make_env())
    evil = b"#!/bin/sh\necho owned\n"
    # the attacker writes a manifest and a chunk, with a MAC made with a key of their own
    forged_mac = signing.mac(b"attacker-key-0123456789", sha, VARIANT,
                             "e" * 64, len(evil))
    client.set(f"{key}:0", evil)
    client.hset(key, mapping={"kind": "redis", "location": key, "sha256": "e" * 64,
                              "mac": forged_mac, "size": len(evil), "chunks": 1,
                              "redis_version": "6.6.6", "env": "{}"})
    client.xadd(names.build_requests, request(sha, str(repo)).encode())  # type: ignore[arg-type]
    builder = Builder(client, BuilderConfig(
        names=names, consumer="b1", variants=load_variants(variants(tmp_path)), block_ms=200,
        work_dir=tmp_path / "work", artifact_key=ARTIFACT_KEY.encode()))
    assert builder.run(max_requests=1) == 1
    [(_, fields)] = client.xrange(names.builds)
    event = BuildEvent.decode(fields)
    assert event.redis_version == "7.9.0" and event.artifact.sha256 != "e" * 64
    assert signing.verify(ARTIFACT_KEY.encode(), event.artifact.mac, sha, VARIANT,
                          event.artifact.sha256, event.artifact.size_bytes)
    assert artifacts.fetch(client, event.artifact) != evil


def test_source_archive_bomb_fails_the_build_bounded(redis_server, names, tmp_path) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    bomb = gzip_bomb(200 * 1024 * 1024)  # ~200 KB packed
    key = f"{names.prefix}:source:{'f' * 40}:bomb"
    client.set(key, bomb)
    req = BuildRequest(org="redis", repo="redis", branch="unstable", sha="f" * 40,
                       commit_time_ms=1, build_variants=[VARIANT],
                       source=SourceLocation("redis", key,
                                             hashlib.sha256(bomb).hexdigest()))
    client.xadd(names.build_requests, req.encode())  # type: ignore[arg-type]
    builder = Builder(client, BuilderConfig(
        names=names, consumer="b1", variants=load_variants(variants(tmp_path)), block_ms=200,
        work_dir=tmp_path / "work", artifact_key=ARTIFACT_KEY.encode()))
    assert builder.run(max_requests=1) == 1
    [failure] = failures(client, names)
    assert "exceeds" in failure.reason, failure.reason
    assert not any((tmp_path / "work").rglob("redis-server"))  # cleaned up, never 200 MB
