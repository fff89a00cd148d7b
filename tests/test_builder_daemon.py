"""The builder daemon on a real broker, compiling a tiny Redis-shaped tree with real gcc."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis

from redis_benchmarks_spec.builder import artifacts
from redis_benchmarks_spec.builder.compile import unpack
from redis_benchmarks_spec.builder.daemon import Builder, BuilderConfig
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.events.consumer import GroupConsumer, publish
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    BuildEvent,
    BuildFailure,
    BuildRequest,
    SourceLocation,
)
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import heartbeats
from tests.cli import RBS
from tests.pipeline_fixtures import commit_all, git, tiny_redis_repo, tiny_variant_yaml
from tests.procs import has_descendant

MARKED = "gcc:test-marker"
PLAIN = "gcc:test-plain"


@pytest.fixture
def names() -> StreamNames:
    return StreamNames.with_prefix(f"b{uuid.uuid4().hex[:8]}")


@pytest.fixture
def variants_dir(tmp_path: Path) -> Path:
    d = tmp_path / "variants"
    d.mkdir()
    (d / "marked.yml").write_text(tiny_variant_yaml(MARKED, "-O2 -DRBS_MARKER=variantmark"))
    (d / "plain.yml").write_text(tiny_variant_yaml(PLAIN, ""))
    return d


def make_builder(client: redis.Redis, names: StreamNames, variants_dir: Path,
                 tmp_path: Path, consumer: str = "builder-1") -> Builder:
    return Builder(client, BuilderConfig(
        names=names, consumer=consumer, variants=load_variants(variants_dir), block_ms=200,
        work_dir=tmp_path / "work" / consumer))


def queue(client: redis.Redis, names: StreamNames, repo: Path, sha: str,
          variants: list[str]) -> BuildRequest:
    req = BuildRequest(org="redis", repo="redis", branch="unstable", sha=sha,
                       commit_time_ms=1_700_000_000_000,
                       source=SourceLocation(SOURCE_GIT, str(repo)), build_variants=variants)
    publish(client, names.build_requests, req)
    return req


def events(client: redis.Redis, names: StreamNames) -> list[BuildEvent]:
    rows: Any = client.xrange(names.builds)
    return [BuildEvent.decode(f, i.decode()) for i, f in rows]


def failures(client: redis.Redis, names: StreamNames) -> list[BuildFailure]:
    rows: Any = client.xrange(names.build_failures)
    return [BuildFailure.decode(f, i.decode()) for i, f in rows]


def test_one_event_per_variant_with_flags_in_the_binary(redis_server, names, variants_dir,  # type: ignore[no-untyped-def]
                                                         tmp_path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    sha = git(repo, "rev-parse", "HEAD")
    queue(client, names, repo, sha, [MARKED, PLAIN])
    builder = make_builder(client, names, variants_dir, tmp_path)
    assert builder.run(max_requests=1) == 1
    assert failures(client, names) == []
    built = {e.build_variant: e for e in events(client, names)}
    assert set(built) == {MARKED, PLAIN}
    for variant, mark in ((MARKED, "variantmark"), (PLAIN, "none")):
        event = built[variant]
        assert event.sha == sha and event.branch == "unstable" and event.redis_version == "7.9.0"
        binaries = unpack(artifacts.fetch(client, event.artifact), tmp_path / variant)
        assert set(binaries) == {"redis-server", "redis-cli", "redis-benchmark"}
        out = subprocess.run([str(binaries["redis-server"]), "--version"], capture_output=True,
                             text=True, timeout=10, check=True).stdout
        assert f"build={mark}" in out  # the variant's REDIS_CFLAGS reached the compiler
    manifest = client.hgetall(built[MARKED].artifact.location)
    assert b"-DRBS_MARKER=variantmark" in manifest[b"env"]
    assert manifest[b"cflags_verified"] == b"1" and manifest[b"compiler"].startswith(b"gcc")
    assert b"build=variantmark" in manifest[b"redis_server_version"]
    assert built[MARKED].env["REDIS_CFLAGS"] == "-O2 -DRBS_MARKER=variantmark"
    assert client.xpending(names.build_requests, names.builders_group)["pending"] == 0
    assert any(h.agent == "builder-1" for h in heartbeats(client, names))


def test_broken_build_publishes_a_failure_with_the_log_tail(redis_server, names,  # type: ignore[no-untyped-def]
                                                            variants_dir, tmp_path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    (repo / "src" / "server.c").write_text("int main(void) { return syntax error }\n")
    sha = commit_all(repo, "broken")
    queue(client, names, repo, sha, [PLAIN, "gcc:no-such-variant"])
    assert make_builder(client, names, variants_dir, tmp_path).run(max_requests=1) == 1
    assert events(client, names) == []
    failed = {f.build_variant: f for f in failures(client, names)}
    assert "make failed" in failed[PLAIN].reason and "error" in failed[PLAIN].log_tail
    assert "server.c" in failed[PLAIN].log_tail
    assert "unknown build variant" in failed["gcc:no-such-variant"].reason
    assert client.xpending(names.build_requests, names.builders_group)["pending"] == 0


def test_same_sha_and_variant_reuses_the_artifact(redis_server, names, variants_dir,  # type: ignore[no-untyped-def]
                                                  tmp_path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    sha = git(repo, "rev-parse", "HEAD")
    builder = make_builder(client, names, variants_dir, tmp_path)
    queue(client, names, repo, sha, [PLAIN])
    assert builder.run(max_requests=1) == 1
    (repo / ".git").rename(tmp_path / "gone.git")  # a rebuild could not fetch the source now
    queue(client, names, repo, sha, [PLAIN])
    assert builder.run(max_requests=1) == 1
    first, second = events(client, names)
    assert failures(client, names) == []
    assert first.artifact == second.artifact and first.request_id != second.request_id


def test_variant_edited_under_the_same_id_is_rebuilt(redis_server, names, variants_dir,  # type: ignore[no-untyped-def]
                                                      tmp_path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    sha = git(repo, "rev-parse", "HEAD")
    queue(client, names, repo, sha, [MARKED])
    assert make_builder(client, names, variants_dir, tmp_path).run(max_requests=1) == 1
    (variants_dir / "marked.yml").write_text(tiny_variant_yaml(MARKED, "-DRBS_MARKER=edited"))
    queue(client, names, repo, sha, [MARKED])
    assert make_builder(client, names, variants_dir, tmp_path).run(max_requests=1) == 1
    first, second = events(client, names)
    assert first.artifact.location != second.artifact.location
    assert artifacts.fetch(client, first.artifact)  # the old build is still there, intact
    binaries = unpack(artifacts.fetch(client, second.artifact), tmp_path / "edited")
    out = subprocess.run([str(binaries["redis-server"]), "--version"], capture_output=True,
                         text=True, timeout=10, check=True).stdout
    assert "build=edited" in out


def test_malformed_request_is_dead_lettered_and_work_goes_on(redis_server, names,  # type: ignore[no-untyped-def]
                                                             variants_dir, tmp_path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    client.xadd(names.build_requests, {"kind": "build-request", "v": "1", "sha": "nope"})
    queue(client, names, repo, git(repo, "rev-parse", "HEAD"), [PLAIN])
    assert make_builder(client, names, variants_dir, tmp_path).run(max_requests=2) == 2
    (dead,) = client.xrange(names.dead_letter)
    assert b"malformed" in dead[1][b"reason"]
    assert [e.build_variant for e in events(client, names)] == [PLAIN]


def test_request_held_by_a_dead_builder_is_built_once_by_a_live_one(redis_server, names,  # type: ignore[no-untyped-def]
                                                                     variants_dir,
                                                                     tmp_path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    queue(client, names, repo, git(repo, "rev-parse", "HEAD"), [PLAIN])
    dead = GroupConsumer(redis_server.client(), names.build_requests, names.builders_group,
                         "dead-builder", block_ms=100, idle_claim_ms=500)
    assert len(dead.read()) == 1  # took the request and died without a trace
    live = make_builder(client, names, variants_dir, tmp_path, "live-builder")
    live.consumer.idle_claim_ms = 500
    time.sleep(0.7)
    assert live.run(max_requests=1) == 1
    assert [e.build_variant for e in events(client, names)] == [PLAIN]
    assert client.xpending(names.build_requests, names.builders_group)["pending"] == 0


SLOW_TOP_MAKEFILE = "all:\n\tsleep 3\n\t$(MAKE) -C src\n"


def start_builder(tmp_path: Path, broker: str, names: StreamNames, variants_dir: Path,
                  tag: str) -> subprocess.Popen[bytes]:
    log = (tmp_path / f"builder-{tag}.log").open("wb")
    return subprocess.Popen(
        [RBS, "builder", "--broker", broker, "--stream-prefix", names.prefix,
         "--consumer", "builder-host", "--block-ms", "200", "--idle-claim-ms", "60000",
         "--build-variants-dir", str(variants_dir), "--work-dir", str(tmp_path / "bwork"),
         "--git-mirror", str(tmp_path / "mirrors")],
        stdout=log, stderr=subprocess.STDOUT)


def test_kill_9_mid_build_then_restart_builds_every_queued_request(redis_server, names,  # type: ignore[no-untyped-def]
                                                                   variants_dir,
                                                                   tmp_path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    (repo / "Makefile").write_text(SLOW_TOP_MAKEFILE)
    shas = [commit_all(repo, f"c{i}") for i in range(3)]
    for sha in shas:
        queue(client, names, repo, sha, [PLAIN])
    first = start_builder(tmp_path, redis_server.url, names, variants_dir, "1")
    second = None
    try:
        deadline = time.monotonic() + 60
        while not has_descendant(first.pid, "sleep"):
            assert time.monotonic() < deadline, "the build never started"
            time.sleep(0.05)
        kids = psutil.Process(first.pid).children(recursive=True)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        for kid in kids:  # the dead builder's make and sleep, stopped by their pids
            try:
                kid.kill()
            except psutil.NoSuchProcess:
                pass
        assert events(client, names) == []
        second = start_builder(tmp_path, redis_server.url, names, variants_dir, "2")
        deadline = time.monotonic() + 120
        while len(events(client, names)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
        assert sorted(e.sha for e in events(client, names)) == sorted(shas)
        assert failures(client, names) == []
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=30) == 0
        assert client.xpending(names.build_requests, names.builders_group)["pending"] == 0
        assert len(list((tmp_path / "mirrors").glob("*.git"))) == 1  # --git-mirror was used
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
