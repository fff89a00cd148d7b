"""`rbs bisect` through the pipeline: a real `rbs builder` and a real `rbs agent` (with the
instructions profiler, callgrind) on a real Redis broker, over the busy-loop history of
tests/bisect_fixtures.py.

The builder does not compile here: its local artifact cache (``--cache-dir``) is filled
with the redis-server each commit was built into by ``rbs bisect --local``'s work tree
(.cache/bisect-test, built now if missing), packaged the way the builder packages a build.
Everything after that is the real path: build requests on the stream, the builder's build
events and stored artifacts (MAC-checked by the agent), the agent's runs, its ledger."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import tarfile
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.analysis.compare import CompareOptions
from redis_benchmarks_spec.bisection.agent_results import ResultRejected, event_metric
from redis_benchmarks_spec.bisection.local import BisectPlan, Builds
from redis_benchmarks_spec.bisection.search import Budget
from redis_benchmarks_spec.bisection.watch_range import RangeBisector, RangeSetup
from redis_benchmarks_spec.builder import artifacts, signing
from redis_benchmarks_spec.builder import cache as build_cache
from redis_benchmarks_spec.builder.compile import Artifact
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.watch_store import SeriesStep
from redis_benchmarks_spec.events.messages import BuildRequest
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.intake.trigger import RequestOptions
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import GitInfo, RunContext, RunResult
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.suite import Suite
from tests.bisect_fixtures import BUSY_LOOP, VARIANT, WORK, bisect_suites, make_history
from tests.cli import RBS, WarmProcess, rbs_daemon
from tests.datasink_fixtures import datasink_fixture  # noqa: F401  (registers the fixture)

SHA = "a" * 40


def fill_builder_cache(repo: Path, shas: list[str], cache: Path, tmp: Path) -> None:
    """The builder's cache entry of each commit, from the bisect work tree's builds."""
    variant = load_variants()[VARIANT]
    plan = BisectPlan(repo=repo, good=shas[0], bad=shas[-1], suite=Suite(path=tmp, name="unused"),
                      variant=variant, work_dir=WORK,
                      session=SessionConfig(tools=ToolPaths(), results_dir=tmp),
                      options=CompareOptions(), budget=Budget())
    builds = Builds(plan)
    cache.mkdir(parents=True)
    digest = artifacts.env_digest(variant.make_env())
    for sha in shas:
        server, _ = builds.server(sha)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(server, arcname="redis-server")
        data = buf.getvalue()
        entry = cache / f"{sha}-{VARIANT.replace(':', '_')}-{digest}.json"  # as the builder's
        # saved and signed as the builder saves its entries (issue 31), with the same key;
        # built from verified source
        build_cache.save(entry, build_cache.Identity(signing.load_key(), sha, VARIANT),
                         Artifact(data=data, sha256=hashlib.sha256(data).hexdigest(),
                                  variant=VARIANT, env=variant.make_env(),
                                  redis_version="7.0.15",
                                  compiler_version="gcc (bisect work tree)", build_seconds=0.0,
                                  files=["redis-server"], source_sha=sha))


def daemon(tmp: Path, name: str, *args: str) -> subprocess.Popen[bytes] | WarmProcess:
    return rbs_daemon(list(args), tmp / f"{name}.log", os.environ)


def stop(procs: list[subprocess.Popen[bytes] | WarmProcess]) -> list[int]:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    codes = []
    for proc in procs:
        try:
            codes.append(proc.wait(timeout=120))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(proc.wait(timeout=10))
    return codes


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_bisect_through_builder_and_agent_on_instruction_counts(  # type: ignore[no-untyped-def]
        redis_server, datasink: EmbeddedDatasink, tmp_path: Path) -> None:
    repo, shas = make_history(tmp_path / "src", BUSY_LOOP)
    fill_builder_cache(repo, shas, tmp_path / "cache", tmp_path / "unused")
    prefix = f"bi{uuid.uuid4().hex[:6]}"
    common = ["--broker", redis_server.url, "--stream-prefix", prefix, "--block-ms", "300"]
    procs = [
        daemon(tmp_path, "builder", "builder", *common, "--consumer", "b1",
               "--cache-dir", str(tmp_path / "cache"), "--work-dir", str(tmp_path / "b")),
        daemon(tmp_path, "agent", "agent", *common, "--platform", "p1", "--consumer", "a1",
               "--suites-dir", str(bisect_suites(tmp_path / "suites")),
               "--datasink", datasink.url, "--work-dir", str(tmp_path / "a"),
               "--results-dir", str(tmp_path / "results"),
               "--profilers", "instructions", "--profile-requests", "1000")]
    bisect = [RBS, "bisect", "--repo", str(repo), "--good", shas[0], "--bad", shas[-1],
              "--test", "bisect-get", *common[:4], "--platform", "p1", "--org", "redis",
              "--repo-name", "redis", "--repetitions", "2", "--format", "json"]
    try:
        proc = subprocess.run(bisect, capture_output=True, text=True, timeout=3000,
                              check=False)
        logs = {n: (tmp_path / f"{n}.log").read_text()[-2000:] for n in ("builder", "agent")}
        assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:], logs)
        data = json.loads(proc.stdout)
        assert data["first_bad"] == shas[2], data
        assert data["metric"] == "instructions_per_op", data  # auto: the agent counts them
        probes = {p["sha"]: p for p in data["probes"]}
        assert probes[shas[3]]["verdict"] == "REGRESSION" and probes[shas[3]]["pairs"] == 6
        assert probes[shas[2]]["bad"] and not probes[shas[1]]["bad"]
        assert data["builds"] == 4

        # a budget too small for one probe: the probe's requests are cancelled, exit 1
        spent = subprocess.run([*bisect, "--time-budget", "1s"], capture_output=True,
                               text=True, timeout=600, check=False)
        assert spent.returncode == 1, (spent.stdout[-2000:], spent.stderr[-2000:])
        assert "budget spent" in json.loads(spent.stdout)["reason"]

        # the watch's bisection of a skipped range (docs/watch.md) is this prober too; over
        # the two commits after the comment-only one (the same search, one midpoint fewer)
        found = RangeBisector(RangeSetup(
            redis.Redis.from_url(redis_server.url), StreamNames.with_prefix(prefix), repo,
            RequestOptions(org="redis", repo_name="redis", triggering_env="bisect"),
            Budget(pairs=2), probe_timeout_s=1200)).place(
                shas[1], shas[-1], SeriesStep("bisect-get", "p1", VARIANT,
                                              "instructions_per_op", 47.0))
        assert found.first_bad == shas[2], (found.reason, found.probes)
    finally:
        codes = stop(procs)
    assert codes == [0, 0]
    broker = redis.Redis.from_url(redis_server.url)
    names = StreamNames.with_prefix(prefix)
    assert broker.xlen(names.build_failures) == 0
    # 12 requests for the bad end, 4 per midpoint (2 pairs: a midpoint is placed by its
    # change, which 2 pairs of instruction counts give), 12 cancelled by the budget; then the
    # range bisection's bad end and its one midpoint
    assert broker.xlen(names.build_requests) == 12 + 2 * 4 + 12 + 12 + 4
    assert broker.scard(names.cancelled) == 12
    # every probe is detached: nothing landed in the history of the checked-out branch
    requests = broker.xrange(names.build_requests)
    assert all(BuildRequest.decode(f, i).branch is None for i, f in requests)
    sink = redis.Redis.from_url(datasink.url)
    assert sink.keys("ci.benchmarks.redis/by.branch/*") == []
    assert sink.keys("ci.benchmarks.redis/by.hash/bisect/*")
    builder_log = (tmp_path / "builder.log").read_text()
    # no compile in this test: the first request of each commit comes from the cache, the
    # later ones reuse the artifact the builder stored in the broker
    assert builder_log.count("reusing locally cached build") == 4, builder_log[-3000:]


def _stored(client: redis.Redis, names: StreamNames, docs: object) -> tuple[str, str]:
    key = ("ev-1", "p1")
    client.hset(names.ledger_results_key(*key), "t",
                docs if isinstance(docs, (bytes, str)) else json.dumps(docs))
    return key


def test_agent_results_are_validated(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    names = StreamNames.with_prefix("v")
    good = RunResult(test_name="t", run_id="r1", status="ok", metrics={"m": 5.0},
                     context=RunContext(platform="p1", git=GitInfo(hash=SHA)))
    key = _stored(client, names, [good.to_dict()])
    assert event_metric(client, names, key, "t", SHA, "m") == 5.0
    # a newer agent's document (a field this reader does not know) reads: the field is
    # ignored, never used (issue 32; common/records.py)
    newer = _stored(client, names, [{**good.to_dict(), "surprise": 1}])
    assert event_metric(client, names, newer, "t", SHA, "m") == 5.0
    bad_cases = {
        "not json": "{",
        "deep": "[" * 100 + "]" * 100,
        "not a list": {"a": 1},
        "other commit": [replace(good, context=RunContext(platform="p1",
                                                          git=GitInfo(hash="b" * 40))).to_dict()],
        "other test": [replace(good, test_name="u").to_dict()],
        "failed run": [replace(good, status="failed", reason="boom").to_dict()],
        "nan": [{**good.to_dict(), "metrics": {"m": float("nan")}}],
        "string metric": [{**good.to_dict(), "metrics": {"m": "5"}}],
        "metrics not a dict": [{**good.to_dict(), "metrics": [1]}],
        "empty": [],
        "huge": "x" * (4 * 1024 * 1024 + 1),
    }
    for case, docs in bad_cases.items():
        key = _stored(client, names, docs)
        with pytest.raises(ResultRejected):
            event_metric(client, names, key, "t", SHA, "m")
            pytest.fail(case)
    with pytest.raises(ResultRejected, match="no result recorded"):
        event_metric(client, names, ("ev-2", "p1"), "t", SHA, "m")
