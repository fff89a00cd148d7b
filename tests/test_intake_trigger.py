"""``rbs trigger`` with a real temporary git repository and a real redis-server."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from redis_benchmarks_spec.events.messages import BuildRequest, SuiteFilters
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.intake.gitsource import GitError
from redis_benchmarks_spec.intake.trigger import (
    RedisSourceStore,
    RequestOptions,
    Selection,
    TriggerError,
    trigger,
)
from tests.cli import rbs_in_process

NAMES = StreamNames.with_prefix("trig")


def _git(repo: Path, *args: str, date: str = "") -> str:
    env = {"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x", "PATH": "/usr/bin:/bin", "HOME": str(repo)}
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True,
                          timeout=30, env=env)
    return done.stdout.decode().strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with 4 commits on branch ``unstable`` and a tag ``v7.9.1`` on the 2nd."""
    path = tmp_path / "redis"
    path.mkdir()
    _git(path, "init", "-q", "-b", "unstable")
    _git(path, "remote", "add", "origin", "https://github.com/redis/redis.git")
    for i in range(4):
        (path / "src").mkdir(exist_ok=True)
        (path / "src" / "version.h").write_text(f"#define REDIS_VERSION \"7.9.{i}\"\n")
        (path / f"file{i}.txt").write_text(f"commit {i}\n")
        _git(path, "add", "-A")
        env_date = f"2024-01-0{i + 1}T10:00:00+00:00"
        _git(path, "commit", "-q", "-m", f"commit {i}", "--date", env_date, date=env_date)
        if i == 1:
            _git(path, "tag", "v7.9.1")
    return path


def _shas(repo: Path, n: int) -> list[str]:
    return list(reversed(_git(repo, "log", f"-n{n}", "--format=%H").splitlines()))


def _queued(client) -> list[BuildRequest]:  # type: ignore[no-untyped-def]
    return [BuildRequest.decode(f, i.decode()) for i, f in client.xrange(NAMES.build_requests)]


def test_archive_stored_with_ttl_and_extracts_to_committed_files(redis_server, repo) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    head = _shas(repo, 1)[0]
    [done] = trigger(client, NAMES, str(repo), Selection(commit=head),
                     RequestOptions(pr=42, filters=SuiteFilters(tests_regexp="get")),
                     RedisSourceStore(ttl_s=600))
    [req] = _queued(client)
    assert req == done.request
    assert (req.org, req.repo, req.sha, req.pr, req.branch) == ("redis", "redis", head, 42,
                                                                 "unstable")
    assert req.source.kind == "redis"
    assert 0 < client.ttl(req.source.location) <= 600
    data = client.get(req.source.location)
    import hashlib
    assert hashlib.sha256(data).hexdigest() == req.source.sha256
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        names = sorted(m.name for m in tar.getmembers() if m.isfile())
        assert names == ["file0.txt", "file1.txt", "file2.txt", "file3.txt", "src/version.h"]
        assert tar.extractfile("src/version.h").read() == b'#define REDIS_VERSION "7.9.3"\n'  # type: ignore[union-attr]
    assert req.filters.tests_regexp == "get"


def test_last_three_enqueues_three_requests_in_commit_order(redis_server, repo) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    trigger(client, NAMES, str(repo), Selection(branch="unstable", last=3), RequestOptions(),
            RedisSourceStore())
    queued = _queued(client)
    assert [r.sha for r in queued] == _shas(repo, 3)
    times = [r.commit_time_ms for r in queued]
    assert times == sorted(times) and times[0] == 1704189600000  # 2024-01-02T10:00Z
    assert {r.branch for r in queued} == {"unstable"}
    assert len({r.source.location for r in queued}) == 3


def test_tag_sets_tag_and_version(redis_server, repo) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    trigger(client, NAMES, str(repo), Selection(tag="v7.9.1"), RequestOptions(),
            RedisSourceStore())
    [req] = _queued(client)
    assert (req.tag, req.version, req.sha) == ("v7.9.1", "7.9.1", _shas(repo, 3)[0])


def test_from_a_remote_url_clones_first(redis_server, repo) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    trigger(client, NAMES, f"file://{repo}", Selection(branch="unstable", last=2),
            RequestOptions(org="me", repo_name="fork"), RedisSourceStore())
    assert [(r.org, r.repo, r.sha) for r in _queued(client)] == [
        ("me", "fork", s) for s in _shas(repo, 2)]


def test_unknown_revision_and_bad_selection_enqueue_nothing(redis_server, repo) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    with pytest.raises(GitError, match="nope"):
        trigger(client, NAMES, str(repo), Selection(branch="nope"), RequestOptions(),
                RedisSourceStore())
    with pytest.raises(TriggerError):
        trigger(client, NAMES, str(repo), Selection(), RequestOptions(), RedisSourceStore())
    assert client.exists(NAMES.build_requests) == 0


def test_cli_trigger(redis_server, repo, capsys) -> None:  # type: ignore[no-untyped-def]
    rc = rbs_in_process(["trigger", "--repo", str(repo), "--branch", "unstable", "--last", "2",
                         "--broker", redis_server.url, "--stream-prefix", "trig", "--platforms",
                         "icelake,cascadelake", "--build-variants", "gcc-default",
                         "--tests-regexp", "memtier.*", "--source-ttl", "120"])
    assert rc == 0
    queued = _queued(redis_server.client())
    assert [r.sha for r in queued] == _shas(repo, 2)
    assert queued[0].platforms == ["icelake", "cascadelake"]
    assert queued[0].build_variants == ["gcc-default"]
    assert queued[0].filters.tests_regexp == "memtier.*"
    assert queued[0].id in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--branch", "feat..x"], ["--branch", "has space"],
                                  ["--commit", "HEAD", "--branch=-x"],
                                  ["--tag", "v1..2"], ["--branch", "unstable\u202e"],
                                  ["--branch", "fe\u200bat"]])
def test_cli_trigger_bad_ref_is_one_usage_line(redis_server, repo, argv) -> None:  # type: ignore[no-untyped-def]
    from tests.hostile_fixtures import RBS, daemon_env
    done = subprocess.run([*RBS, "trigger", "--repo", str(repo), *argv, "--broker",
                           redis_server.url, "--stream-prefix", "trig"], capture_output=True,
                          text=True, timeout=120, env=daemon_env(), check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "internal error" not in done.stderr and "branch/tag name" in lines[0], lines
    assert redis_server.client().exists(NAMES.build_requests) == 0
