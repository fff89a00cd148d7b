"""Suite loading and linting: the YAML contract of spec 0.4."""

from __future__ import annotations

from pathlib import Path

import pytest

from redis_benchmarks_spec.suites.catalog import SuiteFilter, load_catalog
from redis_benchmarks_spec.suites.commands import issued_commands
from redis_benchmarks_spec.suites.suite import ToolConfig
from redis_benchmarks_spec.suites.validate import lint_catalog
from tests.cli import rbs, write_suite

GOOD = """
version: 0.4
name: {name}
description: d
dbconfig:
  configuration-parameters:
    save: '""'
    io-threads: 2
  check:
    keyspacelen: 10
  preload_tool:
    tool: redis-cli
    arguments: EVAL "return 1" 0
  init_commands:
    - SET a b
    - ["HSET", "h", "f", "v"]
tested-groups: [string]
tested-commands: [get]
redis-topologies: [oss-standalone]
build-variants: [gcc:12.2.0-amd64-debian-bookworm-default]
priority: {priority}
clientconfig:
  run_image: redis:7.0.15
  tool: redis-benchmark
  arguments: -c 50 -n 1000 -r 10 GET key:__rand_int__
  resources:
    requests:
      cpus: "1"
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
"""


def test_good_suite_loads_with_all_fields(tmp_path: Path) -> None:
    write_suite(tmp_path, "a", GOOD.format(name="a", priority=2))
    (tmp_path / "defaults.yml").write_text(
        "exporter:\n  redistimeseries:\n    timemetric: '$.x'\n    metrics:\n"
        "      - $.\"ALL STATS\".Totals.\"Latency\"\n")
    catalog = load_catalog(tmp_path)
    assert catalog.problems == []
    suite = catalog.suites[0]
    assert suite.dbconfig.server_args() == ["--save", "", "--io-threads", "2"]
    assert suite.dbconfig.init_commands == [["SET", "a", "b"], ["HSET", "h", "f", "v"]]
    assert suite.dbconfig.keyspacelen == 10
    assert suite.dbconfig.preload_tool is not None
    assert suite.dbconfig.preload_tool.argv() == ["EVAL", "return 1", "0"]
    # defaults first, the suite's own metrics appended
    assert suite.exporter.metrics == ['$."ALL STATS".Totals."Latency"',
                                      '$."ALL STATS".Totals."Ops/sec"']
    assert suite.exporter.timemetric == "$.x"
    assert suite.clientconfigs[0].cpus == 1.0


def test_list_form_of_older_suites_loads(tmp_path: Path) -> None:
    write_suite(tmp_path, "old", """
name: old
dbconfig:
  - configuration-parameters:
      - save: '""'
  - check:
      keyspacelen: 0
tested-commands: [set]
clientconfig:
  - run_image: redis:7
  - tool: redis-benchmark
  - arguments: -t set -n 100
""")
    catalog = load_catalog(tmp_path)
    assert catalog.errors == []
    suite = catalog.suites[0]
    assert suite.dbconfig.configuration_parameters == {"save": '""'}
    assert suite.clientconfigs[0].tool == "redis-benchmark"


def test_broken_files_do_not_stop_the_others(tmp_path: Path) -> None:
    write_suite(tmp_path, "good", GOOD.format(name="good", priority=1))
    write_suite(tmp_path, "broken", "name: [unclosed\n  : : :")
    write_suite(tmp_path, "unknown", GOOD.format(name="unknown", priority=1) + "surprise: 1\n")
    write_suite(tmp_path, "both", GOOD.format(name="both", priority=1)
                + "clientconfigs:\n  - tool: redis-benchmark\n    arguments: -t get\n")
    write_suite(tmp_path, "neither", "name: neither\ntested-commands: [get]\n")
    write_suite(tmp_path, "dup", GOOD.format(name="good", priority=1))
    catalog = load_catalog(tmp_path)
    assert [s.name for s in catalog.suites] == ["good", "unknown"]
    text = "\n".join(str(p) for p in catalog.errors)
    assert "broken.yml" in text and "unparseable YAML" in text
    # an unknown key is a warning at load (the suite still loads), never an error
    assert "surprise" not in text
    assert "warning: " + str(tmp_path / "unknown.yml") + ": surprise: unknown key" in \
        "\n".join(str(p) for p in catalog.problems)
    assert "both.yml: clientconfig: exactly one of clientconfig or clientconfigs" in text
    assert "(both given)" in text and "(neither given)" in text
    assert "good.yml: name: duplicate suite name 'good' (also in" in text


def test_clientconfigs_list_loads(tmp_path: Path) -> None:
    text = GOOD.format(name="multi", priority=1).split("clientconfig:")[0] + """
clientconfigs:
  - tool: redis-benchmark
    arguments: -t get -n 10
  - tool: memtier_benchmark
    arguments: --command "GET __key__" --test-time 5
"""
    write_suite(tmp_path, "multi", text)
    suite = load_catalog(tmp_path).suites[0]
    assert [c.tool for c in suite.clientconfigs] == ["redis-benchmark", "memtier_benchmark"]


@pytest.mark.parametrize(("tool", "args", "expected"), [
    ("redis-benchmark", "-c 50 -n 10 -t set,get,lrange_100", {"set", "get", "lrange", "lpush"}),
    ("redis-benchmark", "-n 10 -P 10 -r 5 ZADD z __rand_int__ m", {"zadd"}),
    ("redis-benchmark", "-n 10 EVAL \"return redis.call('GET', KEYS[1])\" 1 k", {"eval", "get"}),
    ("memtier_benchmark", '--command "HSET __key__ f __data__" --ratio 1:0', {"hset"}),
    ("memtier_benchmark", "--ratio 1:0 --test-time 5", {"set"}),
    ("memtier_benchmark", "--test-time 5", {"set", "get"}),
])
def test_issued_commands(tool: str, args: str, expected: set[str]) -> None:
    assert issued_commands(ToolConfig(tool, args)) == expected


def test_lint_flags_tested_commands_never_issued(tmp_path: Path) -> None:
    write_suite(tmp_path, "liar", GOOD.format(name="liar", priority=1)
                .replace("tested-commands: [get]", "tested-commands: [get, hgetall]"))
    problems = [str(p) for p in lint_catalog(tmp_path)]
    assert any("'hgetall' is never issued" in p for p in problems), problems


def test_filter_selection(tmp_path: Path) -> None:
    write_suite(tmp_path, "a", GOOD.format(name="a-get", priority=1))
    write_suite(tmp_path, "b", GOOD.format(name="b-get", priority=4))
    suites = load_catalog(tmp_path).suites
    assert [s.name for s in SuiteFilter(priority_max=2).select(suites)] == ["a-get"]
    assert [s.name for s in SuiteFilter(tests_regexp="^b").select(suites)] == ["b-get"]
    assert SuiteFilter(groups_regexp="hash").select(suites) == []
    assert len(SuiteFilter(commands_regexp="^get$").select(suites)) == 2
    assert SuiteFilter(topology="oss-cluster-03-primaries").select(suites) == []


def test_cli_lint_exit_codes_and_list_survives(tmp_path: Path) -> None:
    write_suite(tmp_path, "good", GOOD.format(name="good", priority=1))
    assert rbs("suites", "lint", str(tmp_path)).returncode == 0
    write_suite(tmp_path, "broken", "name: [unclosed")
    write_suite(tmp_path, "unknown", GOOD.format(name="unknown", priority=1) + "surprise: 1\n")
    lint = rbs("suites", "lint", str(tmp_path))
    assert lint.returncode == 1
    assert "broken.yml" in lint.stderr and "surprise" in lint.stderr
    listed = rbs("suites", "list", str(tmp_path))
    assert listed.returncode == 0
    assert "good" in listed.stdout and "unknown" in listed.stdout


def test_bad_quoting_and_defaults_are_problems_not_crashes(tmp_path: Path) -> None:
    write_suite(tmp_path, "quotes", GOOD.format(name="quotes", priority=1).replace(
        "arguments: -c 50 -n 1000 -r 10 GET key:__rand_int__",
        "arguments: '-n 10 EVAL \"return 1 0'"))
    write_suite(tmp_path, "good", GOOD.format(name="good", priority=True))
    (tmp_path / "defaults.yml").write_text("exporter:\n  - redistimeseries:\n      metric: []\n"
                                           "typo: 1\n")
    catalog = load_catalog(tmp_path)
    text = "\n".join(str(p) for p in catalog.problems)
    assert "quotes.yml: clientconfig.arguments: cannot split the arguments" in text
    assert "defaults.yml: typo: unknown key" in text
    assert "defaults.yml: exporter.redistimeseries.metric: unknown key" in text
    assert "good.yml: priority: expected an integer, got True" in text
    assert [s.name for s in catalog.suites] == ["good"]
    assert rbs("suites", "lint", str(tmp_path)).returncode == 1


def test_list_arguments_defaults_yaml_and_missing_version(tmp_path: Path) -> None:
    (tmp_path / "defaults.yaml").write_text("exporter: {}\n")
    write_suite(tmp_path, "listargs",
                "name: listargs\ntested-commands: [get]\nclientconfig:\n"
                "  tool: redis-benchmark\n  arguments: [-n, '10', GET, 'a b']\n")
    catalog = load_catalog(tmp_path)
    assert [s.name for s in catalog.suites] == ["listargs"]
    assert catalog.suites[0].clientconfigs[0].argv() == ["-n", "10", "GET", "a b"]
    assert any(p.key == "version" and p.severity == "warning" for p in catalog.problems)
    assert catalog.errors == []
