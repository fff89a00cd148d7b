"""Conformance with the performance team's corpus: redis-benchmarks-specification 0.3.47.

The package is downloaded at test time with pip (never committed) into .cache/corpus/ and
reused by later runs (tests/corpus.py). Its 551 suites must load (0 rejected), carry no key we do not know
(the one exception: a file whose first key is misspelled `ersion`; it is otherwise complete
and the team runs it daily, so it loads with that one warning and `lint --strict` fails it),
and dry-run: every suite planned on every topology it names, or skipped with a one-line
reason naming the tool this host lacks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.loadgen.registry import NO_DRIVER
from redis_benchmarks_spec.runner.session import SessionConfig, plan_tests
from redis_benchmarks_spec.suites.catalog import (
    SuiteCatalog,
    default_suites_dir,
    load_catalog,
    suite_files,
)
from redis_benchmarks_spec.suites.lint import lint_suite, name_collisions
from redis_benchmarks_spec.suites.problems import (
    ERROR,
    NAME_COLLISION,
    UNKNOWN_KEY,
    UNPARSEABLE,
)
from tests.corpus import corpus_suites

MISSPELLED = "memtier_benchmark-10Kkeys-load-list-rpush-bulkload-pipeline-50.yml"


@pytest.fixture(scope="module")
def corpus() -> Path:
    return corpus_suites()


@pytest.fixture(scope="module")
def catalog(corpus: Path) -> SuiteCatalog:
    """Loaded once: 551 files take a while through the guarded YAML loader."""
    return load_catalog(corpus)


pytestmark = pytest.mark.slow


def test_every_file_loads_and_every_key_is_known(corpus: Path, catalog: SuiteCatalog) -> None:
    assert len(suite_files(corpus)) == 551
    assert len(catalog.suites) == 551  # 0 rejected
    assert [p for p in catalog.problems if p.kind == UNPARSEABLE] == []
    assert catalog.errors == []
    unknown = [(p.path.name, p.key) for p in catalog.problems if p.kind == UNKNOWN_KEY]
    assert unknown == [(MISSPELLED, "ersion")]
    assert sum(s.tools == ["memtier_benchmark"] for s in catalog.suites) >= 530
    used = {"init_lua": 11, "dataset": 9, "rdb_checks": 24, "preload_timeout": 18,
            "preload_before_replica": 15, "wait_for_bgsave": 2, "skip_throughput_floor": 26,
            "low_throughput_benchmark": 26, "capabilities": 26, "scalability": 2}
    db = [s.dbconfig for s in catalog.suites]
    found = {"init_lua": sum(bool(d.init_lua) for d in db),
             "dataset": sum(bool(d.dataset) for d in db),
             "rdb_checks": sum(d.rdb_checks is not None for d in db),
             "preload_timeout": sum(bool(d.preload_tool and d.preload_tool.timeout_s)
                                    for d in db),
             "preload_before_replica": sum(d.preload_before_replica for d in db),
             "wait_for_bgsave": sum(d.wait_for_bgsave for d in db),
             "skip_throughput_floor": sum(d.skip_throughput_floor for d in db),
             "low_throughput_benchmark": sum(d.low_throughput_benchmark for d in db),
             "capabilities": sum(bool(s.required_capabilities) for s in catalog.suites),
             "scalability": sum(bool(c.scalability) for s in catalog.suites
                                for c in s.clientconfigs)}
    assert found == used


def test_dry_run_plans_every_suite_on_every_topology(corpus: Path,
                                                    catalog: SuiteCatalog) -> None:
    suites = catalog.suites
    # memtier_benchmark as installed here (scripts/setup.sh builds it)
    tools = ToolPaths().resolve()
    assert tools.memtier, tools.unavailable("memtier_benchmark")
    config = SessionConfig(tools=tools, results_dir=corpus / "none",
                           capabilities=frozenset({"local-disk"}))
    plans = plan_tests(config, suites)
    assert len(plans) == sum(len(s.topologies) for s in suites)
    skipped = [p for p in plans if p.skip_reason]
    assert all(p.topology is not None for p in plans)  # every named topology is catalogued
    for plan in skipped:
        missing = [t for t in plan.suite.tools if t in NO_DRIVER]
        assert missing and plan.skip_reason.startswith(f"client tool {missing[0]} ("), \
            (plan.suite.name, plan.skip_reason)
    assert len({p.suite.name for p in skipped}) == 15  # 6 + 4 + sidekiq 2, bullmq, celery, resque


def test_lint_over_the_corpus_and_our_names(corpus: Path, catalog: SuiteCatalog) -> None:
    strict = [p.strict() for p in catalog.problems]
    assert [(p.path.name, p.key) for p in strict if p.severity == ERROR] == \
        [(MISSPELLED, "ersion")]
    linted = [p for s in catalog.suites for p in lint_suite(s)]
    assert [p for p in linted if p.kind == UNKNOWN_KEY] == []
    # none of our suites shares a name with a different suite of theirs
    ours = load_catalog(default_suites_dir())
    assert [str(p) for p in name_collisions(ours.suites, {corpus: catalog.suites})] == []
    assert [str(p) for p in ours.problems if p.kind == NAME_COLLISION] == []
