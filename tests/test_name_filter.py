"""One meaning of the selection regexps for run, agent, trigger and compare."""

from __future__ import annotations

from redis_benchmarks_spec.common.name_filter import NameFilter
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.suites.catalog import SuiteFilter
from redis_benchmarks_spec.suites.suite import Suite

NAME = "memtier_benchmark-1Mkeys-hash-hset-10B"


def test_search_not_whole_name_and_case_rules() -> None:
    f = NameFilter(tests="hash")
    assert f.matches_test(NAME) and not NameFilter(tests="^hash$").matches_test(NAME)
    assert not NameFilter(tests="HASH").matches_test(NAME)  # test names: case-sensitive
    assert NameFilter(commands="hset").matches(NAME, [], ["HSET"])  # commands: not
    assert not NameFilter(groups="Hash").matches(NAME, ["hash"], [])  # groups: case-sensitive
    assert NameFilter(groups=".*").matches(NAME, [], [])  # ".*" filters nothing
    assert not NameFilter(groups="hash").matches(NAME, [], [])


def test_run_and_compare_filters_agree() -> None:
    suite = Suite(name=NAME, path=None, tested_groups=["hash"], tested_commands=["HSET"])  # type: ignore[arg-type]
    doc = RunResult(test_name=NAME, run_id="r", status="ok", tested_groups=["hash"],
                    tested_commands=["HSET"])
    for tests, groups, commands, expected in (("hset", ".*", ".*", True),
                                              (".*", "^hash$", "hset", True),
                                              (".*", "string", ".*", False),
                                              ("^hset", ".*", ".*", False)):
        run = SuiteFilter(tests_regexp=tests, groups_regexp=groups, commands_regexp=commands)
        compare = NameFilter(tests, groups, commands)  # what rbs compare's folder loader uses
        assert run.matches(suite) is expected
        assert compare.matches(doc.test_name, doc.tested_groups, doc.tested_commands) is expected
