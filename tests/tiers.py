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
})

#: single tests of otherwise parallel modules (``module::test``)
TIMING_TESTS = frozenset({
    "test_agent_ab::test_pr_event_runs_interleaved_pairs_until_decided",
    "test_platforms::test_host_noise_is_measured_by_real_processes_that_are_gone_after",
    # latency rises by the link's delay (the module's other tests are kills, argv and
    # addresses: structure, in the parallel phase)
    "test_two_hosts::test_two_namespace_run_names_both_hosts_and_latency_rises_by_the_netem_delay",
    # the settle waits for the server's cron to stop moving the allocator's figures; a
    # server starved of CPU by the parallel phase runs no cron and looks settled early
    # (ci2 2026-12-02: allocator_allocated 13.25 MB kept, 12.72 MB a second later)
    "test_memory::test_node_memory_waits_for_the_allocator_after_a_preload",
})

#: tests of timing modules that judge no time (structure, parsing, limits, deterministic
#: counts of a large change): they run in the parallel phase
NOT_TIMING_TESTS = frozenset({
    # a busy loop's instruction counts: +100 % per op, far past what a neighbour moves
    "test_bisect::test_bisect_on_instruction_counts_finds_a_busy_loop",
    "test_bisect::test_bisect_usage_errors",
    # how many documents, which labels, in which order; not how fast
    "test_adaptive_run::test_repetitions_without_ab_stores_n_results_per_test",
    "test_adaptive_run::test_a_suite_in_two_topologies_is_two_tests_of_the_ab",
    "test_adaptive_run::test_a_skipped_topology_keeps_the_labels_of_the_run_in_its_report",
    # descriptor limits raised and read back from /proc
    "test_concurrency_sweep::test_points_raise_the_limits_of_the_processes_they_start",
    "test_concurrency_sweep::test_points_a_tool_or_host_cannot_reach_are_refused_before_running",
    "test_concurrency_sweep::test_the_governor_is_not_available_where_the_host_cannot_change_it",
    "test_concurrency_sweep::test_without_privilege_the_hard_limit_is_the_ceiling",
    "test_concurrency_sweep::test_a_cluster_client_needs_descriptors_for_every_primary",
    "test_concurrency_sweep::test_the_points_go_to_history_as_a_curve",
    "test_concurrency_sweep::test_minimum_rule_sizes_the_run_from_the_warm_up_rate",
    "test_concurrency_sweep::test_a_redis_benchmark_warm_up_is_sized_by_count_not_an_assumed_rate",
    # pure logic over given numbers
    "test_changepoints::test_known_steps_found_at_their_index_with_covering_intervals",
    "test_changepoints::test_flat_series_have_no_change_point",
    "test_changepoints::test_since_last_change_and_magnitude_filter",
    "test_changepoints::test_changepoints_usage_errors",
    "test_bisect_reports::test_the_answer_names_pr_and_size_or_the_range_left",
    "test_bisect_reports::test_a_busy_host_is_its_own_outcome_not_a_usage_error",
    "test_bisect_reports::test_a_probe_that_cannot_finish_in_the_budget_is_not_started",
    "test_sweep::test_parse_sweep_and_its_errors",
    "test_sweep::test_swept_arguments_replace_every_spelling",
    "test_sweep::test_swept_value_never_lands_after_the_redis_benchmark_command",
    "test_sweep::test_swept_series_get_their_own_key_and_labels",
    "test_sweep::test_knee_is_where_throughput_stops_and_latency_grows",
    "test_sweep::test_a_knee_after_which_throughput_falls_says_so_in_plain_numbers",
    "test_rate::test_rate_sweep_values_parse",
    "test_rate::test_memtier_pacing_arithmetic_and_arguments",
    "test_rate::test_rate_refuses_a_tool_that_cannot_pace",
    "test_rate::test_a_percentage_too_low_for_the_connections_is_skipped_with_the_reason",
    "test_saturation::test_thresholds",
    "test_calibration::test_platform_config_calibration_section",
    "test_calibration::test_floors_come_from_the_largest_a_a_offset_of_the_test_or_its_family",
    "test_calibration::test_a_row_is_judged_against_its_host_noise_and_says_which",
    "test_calibration::test_a_changed_fingerprint_drops_the_timed_entries_and_is_due",
    "test_calibration::test_the_pull_request_comment_names_the_host_and_its_noise",
    "test_disturbed::test_an_ab_leaves_the_pair_of_a_disturbed_run_out_and_says_so",
    "test_disturbed::test_instruction_counts_keep_every_pair_and_a_busy_time_metric_says_busy",
})

GROUPS: dict[str, str] = {
    # one kept tree (.cache/bisect-test): the bisect tests build its commits in turn; every
    # other build cache is one module's (lab-builds, commit-builds, builds, kept-tree-history)
    "test_bisect": "bisect-tree",
    "test_bisect_remote": "bisect-tree",
    # containers with our label are listed host-wide; the corpus is downloaded once
    "test_docker_launcher": "docker",
    "test_hostile_docker": "docker",
    "test_hostile_build_docker": "docker",
    "test_topologies": "docker",
    "test_corpus_conformance": "docker",
    "test_corpus_memtier_run": "docker",
}

#: the parallel phase's longest groups, with their seconds in a warm run (scripts/test.sh,
#: 2026-12-01, the test cache outside the clone warm): they are handed to the workers first,
#: longest first (tests/conftest.py orders the collection, scripts/test.sh keeps that order
#: with ``--no-loadscope-reorder``). pytest-xdist's own order is by number of tests per
#: group, so these few-test groups came last and the phase ended on them alone (837 s for
#: 750 s of work a worker). A group not listed follows them in collection order.
LONG_GROUPS: dict[str, int] = {
    "bisect-tree": 395,
    "test_lab": 252,
    "test_kept_tree_history": 191,  # at -O0 (277 s at -O3 with LTO; 69 s alone)
    "docker": 130,
    "test_profilers_ab": 98,
    "test_lab_any_folder": 81,
    "test_adaptive_run": 78,
    "test_memory": 75,
    "test_run_commits": 70,
    "test_one_verdict": 63,
    "test_hostile_agent": 59,
    "test_shown_metrics": 57,
    "test_two_hosts": 56,
    "test_html_report": 55,
    "test_false_decisions": 47,
    "test_history_shapes": 44,
    "test_platforms": 39,
    "test_ab": 39,
    "test_hostile_secrets": 39,
    "test_runner": 38,
    "test_agent_ab": 37,
    "test_agent_processes": 36,
    "test_noise_priors": 36,
    "test_event_endings": 34,
}

FAST_MODULES = frozenset({
    "test_bisect_search",
    "test_cli_commands",
    "test_command_path",
    "test_count_lanes",
    "test_counted_topologies",
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
    "test_unpaired_many",
    "test_paired_stats",
    "test_paths_at_the_edge",
    "test_preload_snapshot_rules",
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
    "test_count_lanes::test_two_count_tests_run_at_once_each_in_its_lane",
    "test_count_lanes::test_a_stop_asked_in_one_lane_stops_the_others_and_is_raised",
})

#: fixtures that start a real server: a test of a fast module that asks for one is not fast
REAL_FIXTURES = frozenset({"redis_server", "datasink", "client"})


def is_fast(module: str, name: str, fixtures: list[str]) -> bool:
    """True for a test of the fast tier: a pure module's test that starts no server."""
    return (module in FAST_MODULES and f"{module}::{name}" not in NOT_FAST_TESTS
            and not REAL_FIXTURES.intersection(fixtures))


def is_timing(module: str, name: str) -> bool:
    """True for a test that must run alone (``name`` without its parameters)."""
    test = f"{module}::{name}"
    return (module in TIMING_MODULES and test not in NOT_TIMING_TESTS) or test in TIMING_TESTS


def dispatch_rank(group: str) -> int:
    """Where a group's tests are handed out in the parallel phase: the longest first
    (:data:`LONG_GROUPS`), every other group after them."""
    return -LONG_GROUPS.get(group, 0)


def group_of(module: str) -> str:
    """The xdist group a module's tests run in: its shared group, or the module itself (a
    module's fixtures are set up once, in one worker)."""
    return GROUPS.get(module, module)
