"""A real commit of Redis history, built from the vendored bundle (benchmarks/redis_history.py),
answers PING and says it is the version and commit it was built from. It is built by the one
local build cache (``.cache/commit-builds``, or ``$RBS_TEST_CACHE``'s), which
tests/test_run_commits.py builds the same commit in: whichever runs first builds it (about
1-3 min on 2 cores), the other finds it (issue 41, "build once")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import redis

from benchmarks import redis_history as history
from redis_benchmarks_spec.builder.commit_builds import CommitBuilds
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.common.process import free_port, wait_for

#: parent of PR #11552 (GEODIST), one of benchmarks/real_prs.py's commits: the cache is shared
COMMIT = "155acef51ac7826ed294a4b61d891f1c7a9a40ac"


def _serve(binary: Path, workdir: Path) -> tuple[subprocess.Popen[bytes], redis.Redis]:
    port = free_port()
    proc = subprocess.Popen([str(binary), "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--dir", str(workdir)],
                            stdout=(workdir / "redis.log").open("ab"), stderr=subprocess.STDOUT)
    client = redis.Redis(port=port, socket_timeout=10)

    def pings() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    if not wait_for(pings, timeout=10):
        proc.kill()
        proc.wait(timeout=10)
        raise AssertionError(f"{binary} did not answer PING: {(workdir / 'redis.log').read_text()}")
    return proc, client


@pytest.mark.slow
def test_a_commit_of_the_bundle_builds_and_answers_ping(tmp_path: Path) -> None:
    repo = history.bare_repo()
    sha = history.full_sha(repo, COMMIT[:10])
    assert sha == COMMIT
    assert history.full_sha(repo, COMMIT + "^") != COMMIT
    with pytest.raises(history.HistoryError, match="not a commit sha"):
        history.full_sha(repo, "HEAD; rm -rf /")
    built = history.build(repo, sha, timeout_s=900)
    assert built.binary == history.binary_path(repo, sha) and built.binary.is_file()
    assert history.build(repo, sha).build_seconds == 0.0  # cached: nothing rebuilt
    # the cache rbs run --baseline-commit uses: the same binary, not built again
    builds = CommitBuilds(repo, load_variants()[history.VARIANT],
                          history.cache_root() / "commit-builds")
    assert builds.cached(sha) and builds.server(sha).binary == built.binary
    assert builds.made == 0

    proc, client = _serve(built.binary, tmp_path)
    try:
        assert client.ping() is True
        info = client.info("server")
        assert info["redis_version"] == history.version_of(repo, sha) == "255.255.255"
        assert str(info["redis_git_sha1"]).zfill(8) == sha[:8]
        assert client.set("k", "v") and client.get("k") == b"v"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
