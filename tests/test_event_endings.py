"""Every way a build event can end leaves a named state, at event and test level, that
``rbs admin``, the follower behind ``rbs trigger --wait`` and the PR comment report: delivery
limit, artifact fetch failure, build failure, agent killed, timeout. Real redis-server
brokers, real agents and builders (in process, or as ``rbs`` processes where killed)."""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.agent.agent import Agent, AgentConfig
from redis_benchmarks_spec.builder import signing
from redis_benchmarks_spec.builder.daemon import Builder, BuilderConfig
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.follow import Follower
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    ArtifactRef,
    BuildEvent,
    BuildRequest,
    RunStatus,
    SourceLocation,
    event_id_for,
    new_id,
)
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, read_statuses, record_statuses
from redis_benchmarks_spec.notify.github_comments import GitHubConfig
from redis_benchmarks_spec.notify.notifier import PrNotifier
from redis_benchmarks_spec.pullrequest.state import PrInfo, save_info
from tests.cli import RBS, rbs, write_suite
from tests.datasink_fixtures import datasink_fixture  # noqa: F401  (registers the fixture)
from tests.github_standin import GitHubStandIn
from tests.pipeline_fixtures import (
    SUITE,
    commit_all,
    publish_event,
    system_artifact,
    tiny_redis_repo,
    tiny_variant_yaml,
)
from tests.procs import descendants

SHA = "e" * 40
VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"
TINY = "gcc:test-plain"
TESTS = ("end-set-0", "end-set-1")
TOKEN = "ghs_endings-token"


@pytest.fixture
def names() -> StreamNames:
    return StreamNames.with_prefix(f"x{uuid.uuid4().hex[:8]}")


def suites(tmp_path: Path, n: int = 1000) -> Path:
    d = tmp_path / "suites"
    d.mkdir(exist_ok=True)
    for test in TESTS:
        write_suite(d, test, SUITE.format(name=test, n=n))
    return d


def make_agent(client: redis.Redis, names: StreamNames, tmp_path: Path,
               ended: list[tuple[str, str]], **kw: Any) -> Agent:
    config = AgentConfig(names=names, platform="p1", consumer=kw.pop("consumer", "agent-1"),
                         suites_dir=suites(tmp_path), work_dir=tmp_path / "work",
                         results_dir=tmp_path / "results", block_ms=200, **kw)
    return Agent(client, config, lambda results: None,
                 on_event_done=lambda event, platform, ab: ended.append((event.id, platform)))


def run_until(daemon: Agent | Builder, done: Any, timeout: float = 60) -> None:
    """Serve in a thread until ``done()``; then stop the daemon and join it."""
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    try:
        while not done():
            assert time.monotonic() < deadline, "the event did not end in time"
            time.sleep(0.1)
    finally:
        daemon.stop()
        thread.join(timeout=30)
    assert not thread.is_alive()


def states(client: redis.Redis, names: StreamNames, event_id: str) -> dict[str, tuple[str, str]]:
    """Test (and EVENT_DONE) -> (state, reason) on platform p1."""
    return {s.test_name: (s.state, s.reason) for s in read_statuses(client, names, event_id)
            if s.platform == "p1"}


def event_ended(client: redis.Redis, names: StreamNames, event_id: str) -> bool:
    return states(client, names, event_id).get(EVENT_DONE, ("", ""))[0] in (
        "completed", "failed", "dead-lettered")


def request_of(event: BuildEvent) -> BuildRequest:
    """The request the event answers (the follower follows requests)."""
    return BuildRequest(org="redis", repo="redis", branch="unstable", sha=event.sha,
                        commit_time_ms=1, source=SourceLocation(SOURCE_GIT, "file:///x"),
                        id=event.request_id, platforms=["p1"], build_variants=[VARIANT])


def admin(redis_server, names: StreamNames, action: str) -> str:  # type: ignore[no-untyped-def]
    done = rbs("admin", action, "--broker", redis_server.url,
               "--stream-prefix", names.prefix, timeout=60, env={"COLUMNS": "250"})
    assert done.returncode == 0 and "Traceback" not in done.stderr, done
    return done.stdout


def assert_dead_lettered(client: redis.Redis, names: StreamNames, event: BuildEvent,
                         mention: str) -> None:
    """The event and both its tests end "dead-lettered" naming the reason; nothing pending."""
    got = states(client, names, event.id)
    assert set(got) == {*TESTS, EVENT_DONE}, got
    for test, (state, reason) in got.items():
        assert state == "dead-lettered" and mention in reason, (test, state, reason)
    assert client.xpending(names.builds, names.platform_group("p1"))["pending"] == 0
    [(_, letter)] = client.xrange(names.dead_letter)
    assert mention in letter[b"reason"].decode()
    follower = Follower(client, names, [(request_of(event), "0-1")])
    [progress] = follower.poll()
    assert follower.finished()
    platform = progress.platforms[(event.id, "p1")]
    assert platform.state == "dead-lettered" and mention in platform.reason


# --------------------------------------------------------------------------- delivery limit


def test_delivery_limit_ends_the_event_and_its_tests_dead_lettered(redis_server, names,  # type: ignore[no-untyped-def]
                                                                   tmp_path, caplog) -> None:
    client = redis_server.client()
    event = publish_event(client, names, SHA, platforms=["p1"])
    group = names.platform_group("p1")
    client.xgroup_create(names.builds, group, id="0")
    # agent-1 took the event, recorded its tests, and crashed on it, again and again
    client.xreadgroup(group, "agent-1", {names.builds: ">"}, count=1)
    record_statuses(client, names, [
        RunStatus(event_id=event.id, platform="p1", agent="agent-1", test_name=TESTS[0],
                  state="running"),
        RunStatus(event_id=event.id, platform="p1", agent="agent-1", test_name=TESTS[1],
                  state="pending")])
    for _ in range(2):
        client.xreadgroup(group, "agent-1", {names.builds: "0"}, count=1)
    ended: list[tuple[str, str]] = []
    agent = make_agent(client, names, tmp_path, ended, max_deliveries=2)
    with caplog.at_level(logging.ERROR):
        run_until(agent, lambda: event_ended(client, names, event.id))
    assert_dead_lettered(client, names, event, "(max 2)")
    assert ended == [(event.id, "p1")]  # the PR comment hears of it like a finished event
    logged = [r.getMessage() for r in caplog.records]
    assert any(event.id in m and "dead-lettered" in m and "(max 2)" in m for m in logged), \
        logged
    [row] = [line for line in admin(redis_server, names, "events").splitlines()
             if event.id in line]
    cells = [c.strip() for c in row.split("│")]
    assert cells[3:] == ["dead-lettered", "0", "0", "0", "0", "2",
                         "delivered 4 times (max 2)", ""], cells
    assert event.id not in admin(redis_server, names, "inflight")


# --------------------------------------------------------------------------- artifact fetch


def s3_event(client: redis.Redis, names: StreamNames) -> BuildEvent:
    """An event whose signed artifact is in S3 (this host has no AWS credentials)."""
    data = system_artifact().data
    digest = hashlib.sha256(data).hexdigest()
    mac = signing.mac(signing.load_key(), SHA, VARIANT, digest, len(data))
    ref = ArtifactRef("s3", "s3://rbs-no-such-bucket/artifact.tar.gz", digest, len(data), 1,
                      mac)
    request_id = new_id()
    event = BuildEvent(id=event_id_for(request_id, VARIANT), request_id=request_id,
                       org="redis", repo="redis", branch="unstable", sha=SHA,
                       commit_time_ms=1, build_variant=VARIANT, artifact=ref,
                       redis_version="7.0.15", platforms=["p1"])
    publish(client, names.builds, event)
    return event


def expired_event(client: redis.Redis, names: StreamNames) -> BuildEvent:
    """An event whose artifact chunks expired before an agent got to it."""
    event = publish_event(client, names, SHA, platforms=["p1"])
    client.delete(*[f"{event.artifact.location}:{i}" for i in range(event.artifact.chunks)])
    return event


@pytest.mark.parametrize("make,mention", [(s3_event, "NoCredentialsError"),
                                          (expired_event, "missing")], ids=["s3", "expired"])
def test_artifact_fetch_failure_ends_the_event_dead_lettered(redis_server, names, tmp_path,  # type: ignore[no-untyped-def]
                                                             monkeypatch, make,
                                                             mention) -> None:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    # no credentials anywhere, and no metadata service asked: botocore fails before sending
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    client = redis_server.client()
    event = make(client, names)
    ended: list[tuple[str, str]] = []
    run_until(make_agent(client, names, tmp_path, ended),
              lambda: event_ended(client, names, event.id))
    assert_dead_lettered(client, names, event, mention)
    assert ended == [(event.id, "p1")]


# --------------------------------------------------------------------------- PR comment


def test_pr_comment_reports_a_dead_lettered_platform_and_stops_waiting(redis_server,  # type: ignore[no-untyped-def]
                                                                       names, tmp_path) -> None:
    client = redis_server.client()
    event = expired_event(client, names)
    info = PrInfo(org="redis", repo="redis", number=9, head_sha=SHA, head_ref="feature",
                  base_ref="unstable")
    with GitHubStandIn(TOKEN) as gh:
        notifier = PrNotifier(client, names, GitHubConfig(api_url=gh.url, token=TOKEN))
        pr_event = BuildEvent(**{**event.__dict__, "pr": 9})
        client.delete(names.builds)
        publish(client, names.builds, pr_event)
        save_info(client, names, pr_event.request_id, info)
        config = AgentConfig(names=names, platform="p1", consumer="agent-1",
                             suites_dir=suites(tmp_path), work_dir=tmp_path / "work",
                             results_dir=tmp_path / "results", block_ms=200)
        agent = Agent(client, config, lambda results: None,
                      on_event_done=notifier.platform_done)
        run_until(agent, lambda: bool(gh.comments))
        [comment] = gh.comments.values()
    body = comment["body"]
    assert "dead-lettered" in body and "missing" in body, body
    assert "Still running" not in body


# --------------------------------------------------------------------------- builds


@pytest.fixture
def variants_dir(tmp_path: Path) -> Path:
    d = tmp_path / "variants"
    d.mkdir()
    (d / "plain.yml").write_text(tiny_variant_yaml(TINY, ""))
    return d


def test_build_failure_ends_the_request_failed_and_the_pr_comment_says_so(  # type: ignore[no-untyped-def]
        redis_server, names, variants_dir, tmp_path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    (repo / "src" / "server.c").write_text("int main(void) { return syntax error }\n")
    sha = commit_all(repo, "broken")
    request = BuildRequest(org="redis", repo="redis", branch="feature", sha=sha,
                           commit_time_ms=1, source=SourceLocation(SOURCE_GIT, str(repo)),
                           build_variants=[TINY], platforms=["p1", "p2"], pr=9)
    entry_id = publish(client, names.build_requests, request)
    save_info(client, names, request.id, PrInfo(org="redis", repo="redis", number=9,
                                                head_sha=sha, head_ref="feature"))
    with GitHubStandIn(TOKEN) as gh:
        notifier = PrNotifier(client, names, GitHubConfig(api_url=gh.url, token=TOKEN))
        builder = Builder(client, BuilderConfig(
            names=names, consumer="b1", variants=load_variants(variants_dir), block_ms=200,
            work_dir=tmp_path / "work"), on_build_ended=notifier.build_ended)
        assert builder.run(max_requests=1) == 1
        [comment] = gh.comments.values()
    follower = Follower(client, names, [(request, entry_id)])
    [progress] = follower.poll()
    assert follower.finished() and "make failed" in progress.failures[0].reason
    body = comment["body"]
    assert "build failed: make failed" in body and "Still running" not in body, body
    assert "`p1`" in body and "`p2`" in body


def test_build_timeout_ends_trigger_wait_with_the_reason(redis_server, names, variants_dir,  # type: ignore[no-untyped-def]
                                                         tmp_path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    (repo / "Makefile").write_text("all:\n\tsleep 30\n\t$(MAKE) -C src\n")
    sha = commit_all(repo, "slow")
    builder = Builder(client, BuilderConfig(
        names=names, consumer="b1", variants=load_variants(variants_dir), block_ms=200,
        work_dir=tmp_path / "work", build_timeout_s=1.0))
    thread = threading.Thread(target=builder.run, kwargs={"max_requests": 1}, daemon=True)
    thread.start()
    try:
        waited = rbs("trigger", "--repo", str(repo), "--commit", sha, "--org", "redis",
                     "--repo-name", "redis", "--build-variants", TINY, "--platforms", "p1",
                     "--wait", "--timeout", "120", "--broker", redis_server.url,
                     "--stream-prefix", names.prefix, timeout=180)
    finally:
        builder.stop()
        thread.join(timeout=60)
    assert waited.returncode == 1, waited  # ended, and not well: neither 0 nor 2 (timed out)
    assert f"{TINY}: build failed: make timed out after 1s" in waited.stdout, waited.stdout


# --------------------------------------------------------------------------- agent killed


def start_agent(tmp: Path, broker: str, sink: str, prefix: str) -> subprocess.Popen[bytes]:
    log = (tmp / "agent.log").open("ab")
    return subprocess.Popen(
        [RBS, "agent", "--broker", broker, "--stream-prefix", prefix, "--platform", "p1",
         "--consumer", "agent-a", "--block-ms", "300", "--suites-dir", str(tmp / "suites"),
         "--datasink", sink, "--work-dir", str(tmp / "work"),
         "--results-dir", str(tmp / "results")], stdout=log, stderr=subprocess.STDOUT)


def test_agent_killed_mid_test_then_restarted_ends_every_test(redis_server, datasink,  # type: ignore[no-untyped-def]
                                                              names, tmp_path) -> None:
    client = redis_server.client()
    suites(tmp_path, n=200_000)
    event = publish_event(client, names, SHA, platforms=["p1"])
    procs = [start_agent(tmp_path, redis_server.url, datasink.url, names.prefix)]
    try:
        deadline = time.monotonic() + 60
        while not any(n == "redis-benchmark" for _, n, _ in descendants(procs[0].pid)):
            assert time.monotonic() < deadline, (tmp_path / "agent.log").read_text()[-2000:]
            time.sleep(0.1)
        orphans = [p.pid for p, _, _ in descendants(procs[0].pid)]
        os.kill(procs[0].pid, signal.SIGKILL)
        procs[0].wait(timeout=10)
        for pid in orphans:  # the killed agent's server and client, by their own pids
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        left = states(client, names, event.id)
        assert "running" in {s for s, _ in left.values()} and EVENT_DONE not in left
        procs.append(start_agent(tmp_path, redis_server.url, datasink.url, names.prefix))
        deadline = time.monotonic() + 120
        while not event_ended(client, names, event.id):
            assert time.monotonic() < deadline, (tmp_path / "agent.log").read_text()[-2000:]
            time.sleep(0.2)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
    got = states(client, names, event.id)
    assert got == {TESTS[0]: ("completed", ""), TESTS[1]: ("completed", ""),
                   EVENT_DONE: ("completed", "2 suite(s)")}, got
    [row] = [line for line in admin(redis_server, names, "events").splitlines()
             if event.id in line]
    assert [c.strip() for c in row.split("│")][3:] == ["done", "0", "0", "2", "0", "0",
                                                        "2 suite(s)", ""], row
