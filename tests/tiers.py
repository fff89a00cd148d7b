"""Which tests run where (issue 41): in parallel, alone, or in the fast tier.

``make test`` runs the suite in two phases (scripts/test.sh): every test not marked
``timing`` in parallel processes (pytest-xdist, ``--dist loadgroup``), then the ``timing``
tests alone, one at a time, on a machine nothing else of the suite loads. The lists below
are the one place that says which module belongs where; tests/conftest.py applies them at
collection, so a test module needs no decorator to land in the right phase.

- ``TIMING_MODULES``/``TIMING_TESTS``: tests that judge time or CPU (throughput, latency,
  CPU shares, a foreign load noticed, a slowdown found by a timed metric). A neighbour would
  change their answer, so they never share the machine with the parallel phase.
- ``GROUPS``: modules that share something on disk or on the host that is not per test (a
  kept Redis build tree, the Docker engine's containers of our label, a downloaded corpus):
  a group runs in one worker, its modules one after another.
- ``FAST_MODULES``: pure logic and parsers over recorded real outputs (``make test-fast``);
  tests/test_tiers.py checks their text, and under ``make test-fast`` (``RBS_FAST_TIER=1``)
  a test that starts a process fails (tests/conftest.py).
"""

from __future__ import annotations

TIMING_MODULES = frozenset({
    "test_adaptive_run",       # --until-decided on fsync-always throughput
    "test_bisect",             # a usleep found on throughput
    "test_bisect_reports",     # appendfsync always found on throughput; a busy host
    "test_calibration",        # A/A sessions set timed noise floors
    "test_changepoints",       # a real series whose server gains appendfsync always
    "test_concurrency_sweep",  # warm-up rates size the runs
    "test_disturbed",          # a foreign busy loop must be the only neighbour
    "test_rate",               # offered vs achieved rate, saturation, a stall
    "test_saturation",         # client-bound vs server-bound runs
    "test_sweep",              # a knee found on a real sweep
    "test_two_hosts",          # latency rises by the link's delay
})

#: single tests of otherwise parallel modules (``module::test``)
TIMING_TESTS = frozenset({
    "test_agent_ab::test_pr_event_runs_interleaved_pairs_until_decided",
    "test_platforms::test_host_noise_is_measured_by_real_processes_that_are_gone_after",
})

GROUPS: dict[str, str] = {
    # one kept tree per cache (.cache/bisect-test, .cache/builds, .cache/lab-builds)
    "test_bisect_remote": "redis-builds",
    "test_builder_e2e": "redis-builds",
    "test_kept_tree_history": "redis-builds",
    "test_lab": "redis-builds",
    "test_wheel": "redis-builds",
    "test_run_commits": "redis-builds",  # .cache/commit-builds: two commits of the history
    # containers with our label are listed host-wide; the corpus is downloaded once
    "test_docker_launcher": "docker",
    "test_hostile_docker": "docker",
    "test_hostile_build_docker": "docker",
    "test_topologies": "docker",
    "test_corpus_conformance": "docker",
    "test_corpus_memtier_run": "docker",
}

FAST_MODULES = frozenset({
    "test_bisect_search",
    "test_compare",
    "test_datasink_keys",
    "test_driver_registry",
    "test_exporter",
    "test_false_decisions",
    "test_histogram",
    "test_lab_comment",
    "test_layers",
    "test_metric_choice",
    "test_metrics_catalogue",
    "test_name_filter",
    "test_numbers",
    "test_one_judgment",
    "test_paired_stats",
    "test_paths_at_the_edge",
    "test_reports_text",
    "test_result_versions",
    "test_sequential",
    "test_server_cpu",
    "test_stats",
    "test_watch_arrival",
    "test_words",
})


#: single tests of fast modules that start a process (a real tool or a session)
NOT_FAST_TESTS = frozenset({
    "test_driver_registry::test_corpus_tools_without_driver_skip_with_their_name",
    "test_driver_registry::test_a_new_tool_is_one_module",
})

#: fixtures that start a real server: a test of a fast module that asks for one is not fast
REAL_FIXTURES = frozenset({"redis_server", "datasink", "client"})


def is_fast(module: str, name: str, fixtures: list[str]) -> bool:
    """True for a test of the fast tier: a pure module's test that starts no server."""
    return (module in FAST_MODULES and f"{module}::{name}" not in NOT_FAST_TESTS
            and not REAL_FIXTURES.intersection(fixtures))


def is_timing(module: str, name: str) -> bool:
    """True for a test that must run alone (``name`` without its parameters)."""
    return module in TIMING_MODULES or f"{module}::{name}" in TIMING_TESTS


def group_of(module: str) -> str:
    """The xdist group a module's tests run in: its shared group, or the module itself (a
    module's fixtures are set up once, in one worker)."""
    return GROUPS.get(module, module)
