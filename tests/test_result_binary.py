"""What ran is recorded: each result says which binary served it (INFO's version, git sha1,
build id and allocator, and the dependency versions its artifact was built with), and
`rbs compare` names a dependency the two sides ran at different versions. A real
redis-server and redis-benchmark run; the artifact's provenance read from a real broker."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

from redis_benchmarks_spec.agent.config import AgentConfig, event_session
from redis_benchmarks_spec.analysis.context import CompareContext, SideInfo
from redis_benchmarks_spec.analysis.report import markdown_header
from redis_benchmarks_spec.builder import artifacts, signing
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results import binary
from redis_benchmarks_spec.results.document import SCHEMA_VERSION, RunContext, RunResult
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog
from tests.cli import rbs, write_suite
from tests.conftest import redis_server_bin
from tests.pipeline_fixtures import publish_event, system_artifact

SUITE = """
name: set-binary
dbconfig:
  configuration-parameters:
    save: '""'
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -c 5 -n 2000 -t set
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""
#: what the artifact's manifest says it was built with (its jemalloc is not what the
#: server runs: the server's own word on its allocator wins)
BUILD = {"build_kind": "incremental", "built_over": "a" * 40,
         "deps": {"hiredis": "1.0.3", "lua": "5.1.5", "jemalloc": "5.2.1"}}


def _version_words() -> dict[str, str]:
    """``redis-server --version``'s key=value words (malloc, build)."""
    line = subprocess.run([redis_server_bin(), "--version"], capture_output=True, text=True,
                          timeout=10, check=True).stdout
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


def _run(tmp_path: Path, results: Path) -> RunResult:
    suites = tmp_path / "suites"
    write_suite(suites, "s", SUITE)
    config = SessionConfig(tools=ToolPaths(), results_dir=results,
                           context=RunContext(build=dict(BUILD)))
    [result] = run_suites(config, load_catalog(suites).suites)
    assert result.ok, result.reason
    return result


def test_a_run_records_the_binary_that_served_it(tmp_path: Path) -> None:
    result = _run(tmp_path, tmp_path / "out")
    words = _version_words()
    served = result.binary
    assert served is not None
    assert served.redis_version == result.redis_version == "7.0.15"
    assert served.redis_git_sha1 == words["sha"].split(":")[0]
    assert served.redis_build_id == words["build"]
    assert served.mem_allocator == words["malloc"]  # "jemalloc-5.3.0" from INFO memory
    allocator, version = words["malloc"].split("-", 1)
    assert served.dependencies == {**BUILD["deps"], allocator: version}  # type: ignore[dict-item]
    stored = json.loads(next((tmp_path / "out").rglob("result.json")).read_text())
    assert stored["schema_version"] == SCHEMA_VERSION == 3
    assert stored["binary"]["mem_allocator"] == words["malloc"]
    assert stored["context"]["build"]["built_over"] == "a" * 40
    again = RunResult.from_dict(stored)
    assert again.binary == served and again.context.build == BUILD


def test_compare_names_the_dependency_the_sides_ran_at_different_versions(
        tmp_path: Path) -> None:
    result = _run(tmp_path, tmp_path / "run")
    path = next((tmp_path / "run").rglob("result.json"))
    base_dir, head_dir = tmp_path / "base", tmp_path / "head"
    shutil.copytree(tmp_path / "run", head_dir)
    shutil.copytree(tmp_path / "run", base_dir)
    raw = json.loads(path.read_text())
    # the base ran the previous jemalloc and hiredis (as the INFO of that binary says)
    raw["binary"]["mem_allocator"] = "jemalloc-5.2.1"
    raw["binary"]["dependencies"] = {**raw["binary"]["dependencies"],
                                     "jemalloc": "5.2.1", "hiredis": "1.0.0"}
    (base_dir / path.relative_to(tmp_path / "run")).write_text(json.dumps(raw))
    assert result.binary is not None
    for fmt in ("table", "markdown"):
        out = rbs("compare", "--baseline-dir", str(base_dir), "--comparison-dir",
                  str(head_dir), "--format", fmt, timeout=120)
        text = out.stdout + out.stderr
        assert "hiredis 1.0.0 → 1.0.3" in text and "jemalloc 5.2.1 → 5.3.0" in text, text
    same = rbs("compare", "--baseline-dir", str(head_dir), "--comparison-dir",
               str(head_dir), timeout=120)
    assert "dependency changed" not in same.stdout + same.stderr


def test_dependency_helpers_keep_what_has_the_form_of_a_version() -> None:
    assert binary.valid_versions({"jemalloc": "5.3.0", "x": "../etc", "Bad Name": "1"}) == \
        {"jemalloc": "5.3.0"}
    a = binary.ServerBinary(dependencies={"jemalloc": "5.2.1", "lua": "5.1.5"})
    b = binary.ServerBinary(dependencies={"jemalloc": "5.3.0", "lua": "5.1.5"})
    assert binary.agreed([a, b]) == {"lua": "5.1.5"}  # two jemallocs in one side: none
    assert binary.dependency_changes(a.dependencies, b.dependencies) == \
        ["jemalloc 5.2.1 → 5.3.0"]
    # the comparison's header carries it, through the record an A/B stores and reads back
    context = CompareContext(dependency_changes=["jemalloc 5.2.1 → 5.3.0"],
                             baseline=SideInfo(dependencies=a.dependencies))
    raw = {**context.to_dict(), "from_a_newer_writer": 1}
    raw["baseline"]["also_newer"] = 2
    again = CompareContext.from_dict(raw)
    assert again == context
    assert "> dependency changed: jemalloc 5.2.1 → 5.3.0" in markdown_header(again)


def test_the_agent_records_the_artifacts_provenance(redis_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    names = StreamNames.with_prefix("prov")
    event = publish_event(client, names, "b" * 40)
    key = artifacts.manifest_key(names.prefix, event)
    assert artifacts.provenance(client, key) == {"build_kind": "clean"}  # a manifest's default
    artifact = replace(system_artifact(), build_kind="incremental", built_over="c" * 40,
                       build_reason="", deps={"jemalloc": "5.3.0"})
    signer = artifacts.Signer(signing.load_key(), event.sha, event.build_variant)
    artifacts.store(client, key, artifact, signer)
    found = artifacts.provenance(client, key)
    assert found == {"build_kind": "incremental", "built_over": "c" * 40,
                     "deps": {"jemalloc": "5.3.0"}}
    client.hset(key, mapping={"build_kind": "trust me", "deps": '{"jemalloc": "$(id)"}'})
    assert artifacts.provenance(client, key) == {"built_over": "c" * 40}
    config = AgentConfig(names=names, platform="p", consumer="a", suites_dir=tmp_path,
                         work_dir=tmp_path, results_dir=tmp_path)
    session = event_session(config, event, Path(redis_server_bin()), found)
    assert session.context.build == found and session.context.git.hash == event.sha
