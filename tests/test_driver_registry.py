"""The client-driver registry, tools without a driver, and runner capabilities."""

from __future__ import annotations

from pathlib import Path

import pytest

from redis_benchmarks_spec.agent.selection import select_suites
from redis_benchmarks_spec.cli.display import summary_line
from redis_benchmarks_spec.common import tools as common_tools
from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent
from redis_benchmarks_spec.loadgen import registry
from redis_benchmarks_spec.loadgen.drivers import ToolPaths, make_driver
from redis_benchmarks_spec.results.document import STATUS_OK, STATUS_SKIPPED
from redis_benchmarks_spec.runner.session import SessionConfig, plan_tests, run_suites
from redis_benchmarks_spec.suites.catalog import SuiteFilter, load_catalog
from tests.cli import write_suite

SUITE = """
version: 0.4
name: {name}
{extra}
dbconfig:
  configuration-parameters:
    save: '""'
tested-groups: [string]
tested-commands: [get]
redis-topologies: [oss-standalone]
{clients}
"""
ONE = "clientconfig:\n  tool: {tool}\n  arguments: -n 2000 GET a\n"
TWO = """clientconfigs:
  - tool: redis-benchmark
    arguments: -n 2000 GET a
  - tool: {tool}
    arguments: -clients 10
"""


def write(directory: Path, name: str, clients: str, extra: str = "") -> None:
    write_suite(directory, name, SUITE.format(name=name, clients=clients,
                                              extra=extra))


def test_missing_binary_reason_names_the_flag(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing installed, on PATH or set up here
    monkeypatch.delenv("RBS_TOOLS_DIR", raising=False)
    monkeypatch.setattr(common_tools, "REPO_TOOLS", tmp_path)
    tools = ToolPaths().resolve()
    reason = tools.unavailable("memtier_benchmark")
    assert reason.startswith("memtier_benchmark not found (give --memtier-bin or put it on "
                             "PATH; scripts/setup.sh builds it")
    assert "Redis's APT repository, Homebrew" in reason and "\n" not in reason
    assert make_driver("memtier_benchmark", tools) is None
    given = ToolPaths(memtier=str(tmp_path)).resolve()  # a directory is no binary
    assert "is not an executable file" in given.unavailable("memtier_benchmark")


def test_tools_built_by_setup_are_found_without_path(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    built = tmp_path / "bin" / "memtier_benchmark"
    built.parent.mkdir()
    built.write_text("#!/bin/sh\n")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("RBS_TOOLS_DIR", raising=False)
    monkeypatch.setattr(common_tools, "REPO_TOOLS", built.parent)
    assert ToolPaths().resolve().unavailable("memtier_benchmark") != ""  # not executable yet
    built.chmod(0o755)
    tools = ToolPaths().resolve()
    assert tools.memtier == str(built) and tools.unavailable("memtier_benchmark") == ""
    # $RBS_TOOLS_DIR comes before the repository's folder
    other = tmp_path / "other" / "memtier_benchmark"
    other.parent.mkdir()
    other.write_bytes(built.read_bytes())
    other.chmod(0o755)
    monkeypatch.setenv("RBS_TOOLS_DIR", str(other.parent))
    assert ToolPaths().resolve().memtier == str(other)


def test_corpus_tools_without_driver_skip_with_their_name(tmp_path: Path) -> None:
    write(tmp_path, "pubsub", TWO.format(tool="pubsub-sub-bench"))
    write(tmp_path, "bcast", TWO.format(tool="bcast-listener"))
    for tool in ("sidekiq-bench", "bullmq-bench", "celery-bench", "resque-bench"):
        write(tmp_path, tool, ONE.format(tool=tool))
    write(tmp_path, "plain", ONE.format(tool="redis-benchmark"))
    write(tmp_path, "odd", ONE.format(tool="odd-bench"))
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out")
    plans = {p.suite.name: p.skip_reason for p in
             plan_tests(config, load_catalog(tmp_path).suites)}
    assert plans["plain"] == ""
    # clientconfigs run together: one missing tool skips the whole suite, named
    assert plans["pubsub"].startswith("client tool pubsub-sub-bench (the Redis pub/sub")
    assert plans["bcast"].startswith("client tool bcast-listener (")
    for tool in ("sidekiq-bench", "bullmq-bench", "celery-bench", "resque-bench"):
        assert plans[tool].startswith(f"client tool {tool} (") and "\n" not in plans[tool]
    assert plans["odd"] == "unknown client tool 'odd-bench' (no driver)"
    results = run_suites(config, load_catalog(tmp_path).suites)
    assert sum(r.status == STATUS_SKIPPED for r in results) == 7
    line = summary_line(results)
    assert line.startswith("8 test run(s): 1 ok, 0 failed, 7 skipped")
    assert "1 for lack of pubsub-sub-bench" in line and "1 for lack of bcast-listener" in line


def test_a_new_tool_is_one_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "copy", ONE.format(tool="rb-copy"))
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out")
    assert plan_tests(config, load_catalog(tmp_path).suites)[0].skip_reason.startswith(
        "unknown client tool 'rb-copy'")
    monkeypatch.setattr(registry, "DRIVER_MODULES",
                        (*registry.DRIVER_MODULES, "tests.registry_tool"))
    assert plan_tests(config, load_catalog(tmp_path).suites)[0].skip_reason == ""
    [result] = run_suites(config, load_catalog(tmp_path).suites)
    assert result.status == STATUS_OK, result.reason
    assert result.argv[0][0].endswith("redis-benchmark")


def test_capabilities_rbs_run_and_agent(tmp_path: Path) -> None:
    write(tmp_path, "disk", ONE.format(tool="redis-benchmark"),
          "required-runner-capabilities: [local-disk]")
    write(tmp_path, "any", ONE.format(tool="redis-benchmark"))
    suites = load_catalog(tmp_path).suites
    local = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out",
                          capabilities=frozenset({"local-disk"}))
    assert [p.skip_reason for p in plan_tests(local, suites)] == ["", ""]
    bare = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out",
                         capabilities=frozenset())
    reasons = {p.suite.name: p.skip_reason for p in plan_tests(bare, suites)}
    assert reasons == {"any": "", "disk": "requires runner capabilities this host does not "
                                           "offer: local-disk (offered: none; --capability)"}
    ref = ArtifactRef("redis", "rbs:artifact:x", "0" * 64, 1, 1, "")
    event = BuildEvent(id="e", request_id="r", org="redis", repo="redis", branch="unstable",
                       sha="a" * 40, commit_time_ms=1, artifact=ref, build_variant="v",
                       redis_version="7.0.15")
    qualified = SuiteFilter(capabilities=frozenset({"local-disk"}))
    plain = SuiteFilter(capabilities=frozenset())
    assert [s.name for s in select_suites(event, qualified, suites)] == ["any", "disk"]
    assert [s.name for s in select_suites(event, plain, suites)] == ["any"]
