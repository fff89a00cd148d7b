"""The replay's redelivery after a webhook receiver that enqueued a label and died before
answering: the same payload comes back ``202 duplicate delivery``, and the replay follows
the request that was enqueued instead of failing. A real ``rbs api`` and broker."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.lab import replay
from redis_benchmarks_spec.lab.deliveries import PullRequest, pr_deliveries
from redis_benchmarks_spec.lab.state import LabState
from tests.hostile_fixtures import Daemon, daemon_env, wait_until


def test_a_label_enqueued_before_the_receiver_died_is_followed_not_failed(
        redis_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    prefix = "rbs"  # the lab's (replay names its streams from it); a fresh broker per test
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "webhook-secret").write_text("s3cret\n")
    port = free_port()
    api = Daemon(["api", "--broker", redis_server.url, "--stream-prefix", prefix, "--port",
                  str(port), "--secret-file", str(tmp_path / "secrets" / "webhook-secret"),
                  "--repos", "redis/redis"], tmp_path / "api.log", daemon_env(), warm=True)
    state = LabState(root=str(tmp_path), broker_url=redis_server.url, datasink_url="",
                     api_url=f"http://127.0.0.1:{port}", github_url="", source="",
                     prefix=prefix, platforms={}, suites_dir="")
    client = redis_server.client()
    names = StreamNames.with_prefix(prefix)
    label = pr_deliveries([PullRequest("a" * 40, "b" * 40, "pr9", 9)],
                          "action:run-benchmark")[1]
    # the same second for both sends: the second is the same payload, as a redelivery is
    monkeypatch.setattr(replay.time, "strftime", lambda *a: "2026-11-27T00:00:00Z")
    try:
        wait_until(lambda: b"Serving" in (tmp_path / "api.log").read_bytes() or
                   _answers(port), 30, "rbs api listens")
        first = replay.send(state, client, [label], lambda line: None, 60)
        again = replay.send(state, client, [label], lambda line: None, 60)
    finally:
        api.stop()
    assert client.xlen(names.build_requests) == 1
    assert first["pr9"].head_request is not None and again["pr9"].head_request is not None
    assert again["pr9"].head_request.id == first["pr9"].head_request.id


def _answers(port: int) -> bool:
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        time.sleep(0.1)
        return False
