"""A lab upgrades its agents one host at a time. An agent of the previous release (the tree
at ``OLD``, the last commit whose CI passed before result documents were versioned, taken
from this repository's own history with ``git archive``) and an agent of this tree run side
by side on one broker and one datasink, each a platform of the lab; every event published is
done by both, and every result either of them stored reads here: its status, its document in
the broker, its document and series in the datasink. Real ``rbs agent`` processes, a real
redis-server broker, the embedded RedisTimeSeries datasink, real redis-server and
redis-benchmark children."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.datasink import keys, reader, run_reader
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.events.messages import BuildEvent
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, read_statuses
from redis_benchmarks_spec.results.document import SCHEMA_VERSION, RunResult
from tests.cli import write_suite
from tests.conftest import RedisServer
from tests.datasink_fixtures import datasink_fixture  # noqa: F401  (registers the fixture)
from tests.hostile_fixtures import Daemon, daemon_env, event, signed_ref, wait_until
from tests.pipeline_fixtures import SUITE, system_artifact

ROOT = Path(__file__).resolve().parents[1]
OLD = "313c2e5208ed6b48dce488a257efbb8d3287fac9"  # stop 26's main: RunResult without schema version 2 and its new fields
TEST = "fleet-set"
METRIC = "ALL_STATS.Totals.Ops/sec"
SHAS = ["d" * 40, "e" * 40]


@pytest.fixture(scope="module")
def old_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The previous release's package, unpacked from this repository's history."""
    known = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{OLD}^{{commit}}"],
                           capture_output=True, timeout=30, check=False)
    assert known.returncode == 0, f"commit {OLD} is not in this clone's history (a " \
                                  "shallow clone?): the mixed-fleet test needs it"
    out = tmp_path_factory.mktemp("old-release")
    # the whole tree: a source checkout finds its setups/ beside the package
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", OLD],
                             capture_output=True, timeout=60, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, timeout=60, check=True)
    assert (out / "redis_benchmarks_spec" / "cli" / "entry.py").is_file()
    return out


def start(broker: RedisServer, names: StreamNames, tmp: Path, platform: str, datasink_url: str,
          package: Path | None) -> Daemon:
    """``rbs agent`` of this tree (``package`` None) or of the package folder given."""
    work = tmp / platform
    write_suite(work / "suites", "s", SUITE.format(name=TEST, n=20_000))
    argv = ["-v", "agent", "--broker", f"redis://127.0.0.1:{broker.port}",
            "--stream-prefix", names.prefix, "--platform", platform, "--consumer",
            f"{platform}-1", "--block-ms", "200", "--suites-dir", str(work / "suites"),
            "--work-dir", str(work / "work"), "--results-dir", str(work / "results"),
            "--datasink", datasink_url, "--no-noise"]
    env = daemon_env()
    env["PYTHONPATH"] = str(package or ROOT)
    # the old package through its own entry point, with this interpreter and its libraries
    command = [sys.executable, "-P", "-c",  # -P: not the working directory first
               "import sys; from redis_benchmarks_spec.cli.entry import main; sys.exit(main())"]
    return Daemon(argv, work / "agent.log", env, command, warm=True)


def test_an_older_agent_beside_a_newer_one_loses_nothing(  # type: ignore[no-untyped-def]
        redis_server, tmp_path: Path, old_tree: Path, datasink: EmbeddedDatasink) -> None:
    names = StreamNames.with_prefix(f"mf{uuid.uuid4().hex[:8]}")
    broker = redis_server.client()
    url = datasink.url or ""
    old = start(redis_server, names, tmp_path, "p-old", url, old_tree)
    new = start(redis_server, names, tmp_path, "p-new", url, None)
    events = []
    try:
        for sha in SHAS:
            ev = event(signed_ref(broker, names, sha, system_artifact().data), sha)
            broker.xadd(names.builds, ev.encode())  # type: ignore[arg-type]
            events.append(ev)
        pending = [(ev.id, p) for ev in events for p in ("p-old", "p-new")]

        def all_done() -> bool:
            pending[:] = [(e, p) for e, p in pending if _state(broker, names, e, p) != "completed"]
            return not pending

        try:
            wait_until(all_done, 300, "both agents finished every event")
        except AssertionError:
            raise AssertionError(f"not finished: {pending}; logs: {_logs(tmp_path)}") from None
    finally:
        assert old.stop() is not None and new.stop() is not None
    assert old.log().count("Traceback") == new.log().count("Traceback") == 0, _logs(tmp_path)
    raw = _broker_documents(broker, names, events)
    stored = [(platform, RunResult.from_dict(doc)) for platform, doc in raw]  # every one reads
    assert {(platform, doc.context.git.hash) for platform, doc in stored} == \
        {(p, sha) for p in ("p-old", "p-new") for sha in SHAS}
    assert all(doc.status == "ok" and doc.metrics.get(METRIC, 0) > 0 for _, doc in stored), \
        [(p, d.status, d.reason) for p, d in stored]
    written = {platform: {doc.get("schema_version") for p, doc in raw if p == platform}
               for platform in ("p-old", "p-new")}
    assert written["p-new"] == {SCHEMA_VERSION} and written["p-old"] == {1}, written
    _datasink_has_every_run(datasink, events)


def _state(client: redis.Redis, names: StreamNames, event_id: str, platform: str) -> str | None:
    found = [s.state for s in read_statuses(client, names, event_id)
             if s.test_name == EVENT_DONE and s.platform == platform]
    return found[0] if found else None


def _logs(tmp: Path) -> dict[str, str]:
    return {p.parent.name: p.read_text(errors="replace")[-1500:]
            for p in tmp.glob("p-*/agent.log")}


def _broker_documents(client: redis.Redis, names: StreamNames,
                      events: list[BuildEvent]) -> list[tuple[str, dict[str, Any]]]:
    """Every result document both agents stored in the broker, as stored."""
    out = []
    for ev in events:
        for platform in ("p-old", "p-new"):
            raw = client.hvals(f"{names.prefix}:results:{ev.id}:{platform}")
            assert raw, (ev.id, platform)
            for value in raw:  # one field per test: the list of its runs' documents
                runs = json.loads(value)
                assert isinstance(runs, list) and runs, value
                out += [(platform, doc) for doc in runs]
    return out


def _datasink_has_every_run(datasink: EmbeddedDatasink, events: list[BuildEvent]) -> None:
    client = datasink.client()
    docs = run_reader.result_documents(client, run_reader.list_runs(client, keys.Scope()))
    seen = {(d.context.platform, d.context.git.hash) for d in docs.values()
            if d.test_name == TEST}
    assert seen >= {(p, ev.sha) for p in ("p-old", "p-new") for ev in events}, seen
    for platform in ("p-old", "p-new"):
        points = reader.points(client, reader.SeriesSelector(
            metric=METRIC, side=keys.Side("branch", "unstable"), test_name=TEST,
            platform=platform))
        assert len(points) >= len(events), (platform, points)
        assert all(value > 0 for _ms, value in points)
