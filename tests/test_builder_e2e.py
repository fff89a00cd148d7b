"""End to end on one machine: trigger a real Redis source tree (Debian's 7.0.15 source
package), the builder compiles it for a build variant, an agent runs a suite with the built
redis-server. The compiled artifact is cached in .cache/builds between test runs."""

from __future__ import annotations

import os
import subprocess
import tarfile
import uuid
from pathlib import Path

import pytest

from benchmarks.redis_history import cache_root
from redis_benchmarks_spec.agent.agent import Agent, AgentConfig
from redis_benchmarks_spec.agent.push import DatasinkPusher
from redis_benchmarks_spec.builder import artifacts
from redis_benchmarks_spec.builder.compile import unpack
from redis_benchmarks_spec.builder.daemon import Builder, BuilderConfig
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.events.messages import BuildEvent
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.intake.trigger import (
    RedisSourceStore,
    RequestOptions,
    Selection,
    trigger,
)
from redis_benchmarks_spec.results.document import RunResult
from tests.cli import write_suite
from tests.datasink_fixtures import (  # noqa: F401  (registers the fixture)
    datasink_fixture,
    series_of_test,
)
from tests.pipeline_fixtures import SUITE

REPO = Path(__file__).resolve().parents[1]
VARIANT = "gcc:12.2.0-amd64-debian-bookworm-o3"


# fixed identity and dates: the same tree gives the same commit sha on every run, so the
# builder's local artifact cache (.cache/builds) saves the compile after the first run
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **GIT_ENV}).stdout.strip()


@pytest.fixture(scope="module")
def redis_source_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository holding Debian's redis 7.0.15 source tree."""
    out = subprocess.run([str(REPO / "scripts" / "fetch-redis-source.sh")], check=True,
                         capture_output=True, text=True, timeout=600).stdout.strip()
    tarball = Path(out.splitlines()[-1])
    root = tmp_path_factory.mktemp("redis-src")
    with tarfile.open(tarball) as tar:
        tar.extractall(root, filter="data")
    repo = next(p for p in root.iterdir() if p.is_dir())
    git(repo, "init", "-q", "-b", "unstable")
    git(repo, "add", "-A", "--force")  # as in redis.git, which commits deps/jemalloc/configure
    git(repo, "commit", "-q", "-m", "7.0.15")
    return repo


def test_trigger_build_agent_end_to_end(redis_server, redis_source_repo: Path,  # type: ignore[no-untyped-def]
                                        datasink: EmbeddedDatasink, tmp_path: Path) -> None:
    names = StreamNames.with_prefix(f"e2e{uuid.uuid4().hex[:6]}")
    client = redis_server.client()
    queued = trigger(client, names, str(redis_source_repo), Selection(branch="unstable"),
                     RequestOptions(org="redis", repo_name="redis", build_variants=(VARIANT,)),
                     RedisSourceStore(ttl_s=3600))
    sha = queued[0].request.sha
    builder = Builder(client, BuilderConfig(
        names=names, consumer="builder-1", variants=load_variants(), block_ms=200,
        work_dir=tmp_path / "build", cache_dir=cache_root() / "builds"))
    assert builder.run(max_requests=1) == 1
    failures = [(f.get(b"reason"), f.get(b"log_tail", b"")[-800:]) for _, f in client.xrange(names.build_failures)]
    assert failures == []
    (entry_id, fields), = client.xrange(names.builds)
    event = BuildEvent.decode(fields, entry_id.decode())
    assert event.sha == sha and event.branch == "unstable" and event.build_variant == VARIANT
    assert event.env["REDIS_CFLAGS"] == "-O3 -DRBS_BUILD_VARIANT_O3"
    manifest = client.hgetall(event.artifact.location)
    assert manifest[b"cflags_verified"] == b"1"  # the flags were on the compiler command lines
    binaries = unpack(artifacts.fetch(client, event.artifact), tmp_path / "bin")
    version = subprocess.run([str(binaries["redis-server"]), "--version"], capture_output=True,
                             text=True, timeout=10, check=True).stdout
    assert "v=7.0.15" in version
    # the same sha and variant again: the stored artifact is reused, not rebuilt
    trigger(client, names, str(redis_source_repo), Selection(branch="unstable"),
            RequestOptions(org="redis", repo_name="redis", build_variants=(VARIANT,)),
            RedisSourceStore(ttl_s=3600))
    assert builder.run(max_requests=1) == 1
    events = [BuildEvent.decode(f, i.decode()) for i, f in client.xrange(names.builds)]
    assert [e.artifact.location for e in events] == [event.artifact.location] * 2

    suites = tmp_path / "suites"
    suites.mkdir()
    for name, command in (("e2e-set", "set"), ("e2e-get", "get")):
        write_suite(suites, name, SUITE.format(name=name, n=5000).replace(
            "build-variants: [gcc:12.2.0-amd64-debian-bookworm-default]",
            f"build-variants: ['{VARIANT}']").replace("-t set", f"-t {command}"))
    pushed: list[RunResult] = []
    sink = DatasinkPusher(datasink.client())

    def push(results: list[RunResult]) -> None:
        pushed.extend(results)
        sink(results)

    agent = Agent(client, AgentConfig(names=names, platform="local", consumer="agent-1",
                                      suites_dir=suites, work_dir=tmp_path / "work",
                                      results_dir=tmp_path / "results", block_ms=200),
                  push=push)
    assert agent.run(max_events=2) == 2
    assert sorted(r.test_name for r in pushed) == ["e2e-get", "e2e-get", "e2e-set", "e2e-set"]
    for result in pushed:
        assert result.ok, result.reason
        assert result.context.git.hash == sha and result.context.git.branch == "unstable"
        assert result.context.build_variant == VARIANT and result.context.platform == "local"
        assert result.redis_version == "7.0.15"
        # the artifact's binary, unpacked in the agent's work dir, not the system one
        assert result.redis_server.startswith(str(tmp_path / "work"))
    keys = [k.decode() for k in series_of_test(datasink.client(), "e2e-set", "platform=local")]
    assert any(k.startswith("ci.benchmarks.redis/by.hash/") and
               f"/oss-standalone/{sha}/" in k for k in keys), keys
    assert any(k.startswith("ci.benchmarks.redis/by.branch/") and
               "/oss-standalone/unstable/" in k for k in keys), keys
    assert all(f"/{VARIANT}/local/oss-standalone/" in k for k in keys)
