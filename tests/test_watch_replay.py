"""The tracked-branch mode of `rbs lab replay` (--range): its delivery source, the webhook
receiver it starts, and the errors a user sees for bad flags. The real replay through the
lab is benchmarks/watch_replay.py (minutes per commit)."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.messages import BuildRequest, SourceLocation
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.lab.deliveries import DeliveryError, range_deliveries
from redis_benchmarks_spec.lab.watch_replay import WebhookLog, parent_of, subject_of
from redis_benchmarks_spec.notify.watch_alert import Alert, post_webhook
from redis_benchmarks_spec.notify.watch_confirm import BrokerReruns
from tests.cli import RBS
from tests.pipeline_fixtures import commit_all, tiny_redis_repo


def _repo(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = tiny_redis_repo(tmp_path / "redis")
    shas = [subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                           text=True, check=True, timeout=30).stdout.strip()]
    for n in range(3):
        (repo / "src" / f"f{n}.c").write_text(f"int f{n};\n")
        shas.append(commit_all(repo, f"Change {n} (#{1000 + n})"))
    return repo, shas


def test_one_push_per_first_parent_commit_in_order(tmp_path: Path) -> None:
    repo, shas = _repo(tmp_path)
    items = range_deliveries(repo, f"{shas[0][:8]}..{shas[3]}")
    assert [i.event for i in items] == ["push"] * 3
    assert [i.payload["after"] for i in items] == shas[1:]
    assert [i.payload["before"] for i in items] == shas[:3]
    assert items[0].payload["ref"] == "refs/heads/unstable"
    assert subject_of(repo)(shas[2]) == "Change 1 (#1001)"
    assert parent_of(repo)(shas[2]) == shas[1]


def test_a_skipped_commit_comes_with_the_next_push(tmp_path: Path) -> None:
    repo, shas = _repo(tmp_path)
    items = range_deliveries(repo, f"{shas[0]}..{shas[3]}", (shas[2][:9],))
    assert [(i.payload["before"], i.payload["after"]) for i in items] == [
        (shas[0], shas[1]), (shas[1], shas[3])]
    for bad in (shas[3][:8], shas[0][:8], "zz12345", "abc"):  # the last, outside, not hex
        try:
            range_deliveries(repo, f"{shas[0]}..{shas[3]}", (bad,))
            raise AssertionError(f"--skip {bad} accepted")
        except DeliveryError as exc:
            assert f"--skip {bad}" in str(exc)


def test_a_bad_range_names_itself(tmp_path: Path) -> None:
    repo, shas = _repo(tmp_path)
    for spec in ("HEAD~2..HEAD", f"{shas[0]}", f"{shas[3]}..{shas[0]}", "--exec=x..abc1234"):
        try:
            range_deliveries(repo, spec)
            raise AssertionError(f"{spec} accepted")
        except DeliveryError as exc:
            assert spec in str(exc)


def test_the_receiver_writes_each_post_as_a_line(tmp_path: Path) -> None:
    log = WebhookLog(tmp_path / "out" / "webhook.jsonl")
    try:
        alert = Alert("a" * 40, 11552, "Speedup GEODIST (#11552)", ["geo"], ["lab-a"],
                      "instructions_per_op", -8.5, -8.7, -8.3)
        assert post_webhook(log.url, alert) == 200
        assert post_webhook(log.url, alert) == 200
        bad = urllib.request.Request(log.url, data=b"{", method="POST")
        try:
            urllib.request.urlopen(bad, timeout=10)
            raise AssertionError("a broken body was accepted")
        except urllib.error.HTTPError as exc:
            assert exc.code == 400
    finally:
        log.close()
    lines = [json.loads(x) for x in (tmp_path / "out" / "webhook.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and lines[0]["rbs"]["pr"] == 11552
    assert "Improvement -8.50% instructions per operation" in lines[0]["text"]


def test_the_command_refuses_bad_flags_in_one_line(tmp_path: Path) -> None:
    repo, shas = _repo(tmp_path)
    base = [RBS, "lab", "replay", "--dir", str(tmp_path / "lab"), "--source", str(repo),
            "--out", str(tmp_path / "out")]
    for extra, words in ((["--range", "nonsense"], "--range nonsense"),
                         (["--range", f"{shas[0]}..{shas[3]}", "--fingerprint-change-at",
                           "abcdef1"], "--fingerprint-change-at abcdef1"),
                         (["--range", f"{shas[0]}..{shas[3]}", "--prs", "x"], "not allowed")):
        done = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 2 and words in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "lab").exists()  # nothing was started


def test_reruns_copy_the_request_that_brought_the_commit(redis_server: Any) -> None:
    broker = redis_server.client()
    names = StreamNames("rbs")
    sha, other = "a" * 40, "b" * 40
    # the newest request of sha is a bisect probe (no branch): never the one copied
    for s, pr, branch in ((other, None, "unstable"), (sha, None, "unstable"), (sha, 77, "unstable"),
                          (sha, None, None)):
        publish(broker, names.build_requests, BuildRequest(
            org="redis", repo="redis", branch=branch, sha=s, commit_time_ms=1,
            source=SourceLocation("git", "https://github.com/redis/redis.git"), pr=pr,
            build_variants=["gcc:12.2.0-amd64-debian-bookworm-default"], base_sha="d" * 40))
    reruns = BrokerReruns(broker, names)
    ref = reruns.request(sha, ["t-1", "t.2"], ["lab-b"])
    request_id, _, entry = ref.partition("@")
    (row,) = broker.xrange(names.build_requests, min=entry, max=entry)
    copy = BuildRequest.decode(row[1], entry)
    assert (copy.id, copy.sha, copy.pr, copy.platforms) == (request_id, sha, None, ["lab-b"])
    assert copy.branch == "unstable"
    assert copy.base_sha is None  # the push's base is not copied: no selection of a re-run
    assert re.fullmatch(copy.filters.tests_regexp, "t.2")
    assert not re.fullmatch(copy.filters.tests_regexp, "t-2")  # names, not patterns
    assert reruns.ended([ref]) is False  # nothing was built yet
    try:
        reruns.request("c" * 40, ["t-1"], ["lab-b"])
        raise AssertionError("a commit never requested was re-run")
    except LookupError as exc:
        assert "cccccccccc" in str(exc)
