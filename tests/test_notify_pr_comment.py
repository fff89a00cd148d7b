"""The pull-request comment: posted once, edited as platforms finish, against a local
stand-in of GitHub's REST API; comparisons read from a real datasink, state kept in a real
broker (redis-server)."""

from __future__ import annotations

import dataclasses
import logging
import threading
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.events.messages import (
    ArtifactRef,
    BuildEvent,
    BuildRequest,
    SourceLocation,
    event_id_for,
    new_id,
)
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.notify.github_comments import (
    GitHubConfig,
    PullRequestRef,
    upsert_comment,
)
from redis_benchmarks_spec.notify.github_config import GitHubConfigError, load_config
from redis_benchmarks_spec.notify.notifier import Links, PrNotifier
from redis_benchmarks_spec.pullrequest import state as pr_state
from redis_benchmarks_spec.pullrequest.state import PrInfo, PrInfoError, from_payload
from tests.browser import plots_of
from tests.datasink_fixtures import (  # noqa: F401  (register the fixtures)
    BUILD_VARIANT,
    METRICS,
    client_fixture,
    datasink_fixture,
    make_result,
)
from tests.github_standin import GitHubStandIn

TOKEN = "ghs_s3cr3t-t0ken-value"
BASE_SHA = "b" * 40
HEAD_SHA = "c" * 40
TESTS = ("memtier_benchmark-1Mkeys-string-get-10B", "memtier_benchmark-1Mkeys-string-set-10B")
SAMPLE = Path("/work/shared/samples/github/event_webhook_labelled_pr.json")


def _info() -> PrInfo:
    return PrInfo(org="redis", repo="redis", number=9, head_sha=HEAD_SHA, head_ref="feature",
                  base_ref="unstable", base_sha=BASE_SHA)


def _fill(client: redis.Redis, platforms: tuple[str, ...]) -> None:
    """Baseline on branch unstable (5 runs), head commit 20 % slower (3 runs), per platform."""
    docs = []
    for platform in platforms:
        for test in TESTS:
            for run in range(5):
                doc = make_result(run, test_name=test, branch="unstable", hash="a" * 40,
                                  platform=platform)
                docs.append(dataclasses.replace(
                    doc, metrics={METRICS[0]: 100_000.0 + 500 * (run % 3)},
                    run_id=f"{doc.run_id}-{platform}-base"))
            for run in range(3):
                doc = make_result(run + 10, test_name=test, branch="feature", hash=HEAD_SHA,
                                  platform=platform)
                docs.append(dataclasses.replace(
                    doc, metrics={METRICS[0]: 80_000.0 + 400 * run},
                    flags=["client-bound"] if test == TESTS[1] else [],
                    run_id=f"{doc.run_id}-{platform}-head"))
    assert not push_results(client, docs).failed


def _event(request_id: str, platforms: list[str]) -> BuildEvent:
    return BuildEvent(
        id=event_id_for(request_id, BUILD_VARIANT), request_id=request_id, org="redis",
        repo="redis", branch="feature", sha=HEAD_SHA, commit_time_ms=1_600_000_000_000,
        build_variant=BUILD_VARIANT, artifact=ArtifactRef("redis", "k", "0" * 64, 1),
        redis_version="7.2.4", pr=9, platforms=platforms, built_at_ms=1_600_000_000_000)


def _request(request_id: str, platforms: list[str]) -> BuildRequest:
    return BuildRequest(org="redis", repo="redis", branch="feature", sha=HEAD_SHA,
                        commit_time_ms=1, source=SourceLocation("git", "file:///x"),
                        id=request_id, pr=9, platforms=platforms)


def _notifier(broker: redis.Redis, sink: redis.Redis, gh: GitHubStandIn,
              names: StreamNames, reports: Path | None = None) -> PrNotifier:
    return PrNotifier(broker, names, GitHubConfig(api_url=gh.url, token=TOKEN), sink,
                      links=Links(grafana_url="https://grafana.example/d/rbs",
                                  report_base_url="https://ci.example/reports"),
                      reports_dir=reports)


def test_upsert_creates_once_then_edits_in_place() -> None:
    with GitHubStandIn(TOKEN) as gh:
        config, pr = GitHubConfig(api_url=gh.url, token=TOKEN), PullRequestRef("o", "r", 3)
        first = upsert_comment(config, pr, "<!-- m -->", "<!-- m -->\none")
        second = upsert_comment(config, pr, "<!-- m -->", "<!-- m -->\ntwo")
        other = upsert_comment(config, pr, "<!-- n -->", "<!-- n -->\nother trigger")
    assert first.created and not second.created and other.created
    assert first.comment_id == second.comment_id != other.comment_id
    assert [r.method for r in gh.requests] == ["GET", "POST", "GET", "PATCH", "GET", "POST"]
    assert gh.comments[first.comment_id]["body"].endswith("two")
    assert all(TOKEN in r.authorization for r in gh.requests)


def test_token_never_reaches_the_log_or_repr(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with GitHubStandIn(TOKEN) as gh:
        config = GitHubConfig(api_url=gh.url, token=TOKEN)
        upsert_comment(config, PullRequestRef("o", "r", 3), "<!-- m -->", "<!-- m -->\nx")
    assert "GET" in caplog.text  # PyGithub did log its requests at debug level
    assert TOKEN not in caplog.text and TOKEN not in repr(config)


def test_token_from_file_or_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RBS_GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("RBS_GITHUB_TOKEN_FILE", raising=False)
    assert load_config() is None
    monkeypatch.setenv("RBS_GITHUB_TOKEN", TOKEN)
    assert load_config("http://x").token == TOKEN  # type: ignore[union-attr]
    empty = tmp_path / "t"
    empty.write_text("\n")
    with pytest.raises(GitHubConfigError, match="is empty"):
        load_config(token_file=empty)
    with pytest.raises(GitHubConfigError, match="missing"):
        load_config(token_file=tmp_path / "missing")


def test_pr_info_from_the_recorded_delivery_and_rejects_bad_shas() -> None:
    import json
    payload = json.loads(SAMPLE.read_text())
    info = from_payload(payload)
    assert (info.number, info.base_ref, info.head_ref) == (9, "unstable", "unstable.55555")
    assert info.base_sha == payload["pull_request"]["base"]["sha"]
    payload["pull_request"]["base"]["sha"] = "$(rm -rf /)"
    with pytest.raises(PrInfoError, match="sha"):
        from_payload(payload)


def test_queued_then_one_comment_edited_per_platform(redis_server, client: redis.Redis,  # type: ignore[no-untyped-def]
                                                      tmp_path: Path) -> None:
    _fill(client, ("p1", "p2"))
    broker, names = redis_server.client(), StreamNames.with_prefix(f"t{new_id()[:6]}")
    request_id = new_id()
    with GitHubStandIn(TOKEN) as gh:
        notifier = _notifier(broker, client, gh, names, tmp_path / "reports")
        assert notifier.accepted(_request(request_id, ["p1", "p2"]), _info()) is not None
        queued = next(iter(gh.comments.values()))["body"]
        first = notifier.platform_done(_event(request_id, ["p1", "p2"]), "p1")
        middle = gh.comments[first.comment_id]["body"] if first else ""
        last = notifier.platform_done(_event(request_id, ["p1", "p2"]), "p2")
    assert first is not None and last is not None and last.comment_id == first.comment_id
    assert [r.method for r in gh.requests if r.method != "GET"] == ["POST", "PATCH", "PATCH"]
    assert "benchmarks queued on `p1`, `p2`" in queued
    assert "Still running on `p2`" in middle and "Still running" not in _body(gh)
    body = _body(gh)
    assert body.count(_info().marker) == 1
    assert HEAD_SHA[:10] in body and BASE_SHA[:10] in body  # names the commits
    assert "| `p1` | `gcc:12.2.0-amd64-debian-bookworm-default` | 2 | 0 | 0 | 0 |" in body
    assert "| `p2` | `gcc:12.2.0-amd64-debian-bookworm-default` | 2 | 0 | 0 | 0 |" in body
    assert "Regressions (2)" in body and "branch unstable (last 10 points)" in body
    assert f"`{TESTS[1]}`: client-bound" in body
    assert "https://grafana.example/d/rbs?var-platform=p1" in body
    # each platform's HTML report is written and linked
    pages = sorted((tmp_path / "reports").iterdir())
    assert len(pages) == 2 and all(f"https://ci.example/reports/{p.name})" in body
                                   for p in pages)
    found = {(kind, test) for kind, test, _ in plots_of(pages[0].read_text()).found}
    assert {("samples", TESTS[0]), ("history", TESTS[0])} <= found
    # the body as last posted is kept for the lab's site (rbs site's /pulls)
    kept = pr_state.posted_comments(broker, names)
    assert [(c.info.comment_id, c.body) for c in kept] == [(_info().comment_id, body)]


def test_two_platforms_finishing_at_once_make_one_comment(redis_server, client: redis.Redis) -> None:  # type: ignore[no-untyped-def]
    _fill(client, ("p1", "p2"))
    broker, names = redis_server.client(), StreamNames.with_prefix(f"t{new_id()[:6]}")
    request_id = new_id()
    with GitHubStandIn(TOKEN) as gh:
        threads = [threading.Thread(target=_notifier(broker, client, gh, names).platform_done,
                                    args=(_event(request_id, ["p1", "p2"]), p))
                   for p in ("p1", "p2")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    # the second writer edits, or finds the body it would write already there
    assert len(gh.calls("POST")) == 1 and len(gh.calls("PATCH")) <= 1
    assert "`p1`" in _body(gh) and "`p2`" in _body(gh)


def test_github_down_is_logged_not_raised(redis_server, client: redis.Redis,  # type: ignore[no-untyped-def]
                                          caplog: pytest.LogCaptureFixture) -> None:
    _fill(client, ("p1",))
    names = StreamNames.with_prefix(f"t{new_id()[:6]}")
    with GitHubStandIn("another-token") as gh:  # our token is refused: 401
        done = _notifier(redis_server.client(), client, gh, names).platform_done(
            _event(new_id(), ["p1"]), "p1")
    assert done is None and "not updated" in caplog.text and "redis/redis#9" in caplog.text


def _body(gh: GitHubStandIn) -> str:
    assert len(gh.comments) == 1
    return str(next(iter(gh.comments.values()))["body"])
