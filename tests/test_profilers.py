"""Profilers for real: perf record/stat, pcm and callgrind on a redis-server the run starts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.profile import PROFILE_OK, PROFILE_UNAVAILABLE, PROFILED
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog
from redis_benchmarks_spec.telemetry.profilers.base import ProfilerError, ProfilerOptions
from redis_benchmarks_spec.telemetry.profilers.callgrind import parse_callgrind
from redis_benchmarks_spec.telemetry.profilers.instructions import METRIC, Instructions
from redis_benchmarks_spec.telemetry.profilers.perf_stat import parse_stat_csv
from redis_benchmarks_spec.telemetry.window import WindowOptions
from tests.cli import write_suite
from tests.procs import descendants

SUITE = """
version: 0.4
name: {name}
dbconfig:
  configuration-parameters:
    save: '""'
tested-groups: [{group}]
tested-commands: [{commands}]
redis-topologies: [oss-standalone]
priority: 1
clientconfig:
  tool: redis-benchmark
  arguments: {args}
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
"""


def _suite(folder: Path, name: str, args: str, commands: str = "set", group: str = "string"
           ) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_suite(folder, name, SUITE.format(name=name, args=args, commands=commands,
                                           group=group))
    return folder


def _run(suites: Path, results: Path, options: ProfilerOptions,
         test_time: int | None = None) -> RunResult:
    config = SessionConfig(tools=ToolPaths(), results_dir=results, test_time=test_time,
                           window=WindowOptions(profilers=options))
    done = run_suites(config, load_catalog(suites).suites)
    assert len(done) == 1
    result = done[0]
    assert result.ok, (result.reason, result.log_tail)
    # the document on disk says the same as the object
    again = RunResult.read(results / result.test_name / "oss-standalone" / "result.json")
    assert again.profiles.keys() == result.profiles.keys()
    return result


def _children_of_test() -> set[tuple[int, str]]:
    return {(p.pid, n) for p, n, _ in descendants(os.getpid())}


def test_perf_record_and_stat_write_a_flame_graph_and_counts(tmp_path: Path) -> None:
    suites = _suite(tmp_path / "suites", "prof-set-get", "-t set,get -n 40000 -r 1000 -c 20",
                    "set,get")
    before = _children_of_test()  # servers of session fixtures other tests started
    result = _run(suites, tmp_path / "results",
                  ProfilerOptions(names=("perf-record", "perf-stat", "pcm"), perf_frequency=999))
    assert PROFILED in result.flags

    record = result.profiles["perf-record"]
    assert record.status == PROFILE_OK, record.reason
    svg = Path(result.paths["flamegraph_svg"])
    text = svg.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    # Redis' own functions, by name, in the picture and in the top symbols
    assert re.search(r"processCommand|processInputBuffer|readQueryFromClient", text)
    folded = Path(result.paths["perf_folded"]).read_text()
    assert "processCommand" in folded or "processInputBuffer" in folded
    # user-space samples are there beside kernel ones ("_[k]"): some stacks end in a user-space
    # frame. (Which symbols make the top ten depends on the load beside the run: on a busy host
    # the kernel's scheduling and read paths can fill it, so the stacks are checked instead.)
    user_leaves = [line.rsplit(" ", 1)[0].split(";")[-1] for line in folded.splitlines()]
    assert any(leaf and not leaf.endswith("_[k]") for leaf in user_leaves), folded[:500]
    for top in (record.data["top_self"], record.data["top_total"]):
        assert top and all(0 <= s["self_pct"] <= s["total_pct"] <= 100 for s in top)

    stat = result.profiles["perf-stat"]
    assert stat.status == PROFILE_OK, stat.reason
    (pid_stats,) = stat.data["per_process"].values()
    assert pid_stats["events"]["task-clock"]["value"] > 0
    assert pid_stats["events"]["context-switches"]["value"] > 0
    counted_or_not = set(pid_stats["events"]) | set(pid_stats["unsupported"]) | \
        set(pid_stats["not_counted"])
    assert {"cycles", "instructions"} <= counted_or_not
    # an unsupported event is listed as such, never as a zero count
    assert not set(pid_stats["unsupported"]) & set(pid_stats["events"])

    pcm = result.profiles["pcm"]
    if pcm.status == PROFILE_UNAVAILABLE:  # this VM: no MSR access
        assert pcm.reason and "\n" not in pcm.reason
    else:
        assert pcm.status == PROFILE_OK and Path(result.paths["pcm_csv"]).exists()
    # nothing the profilers started is left running
    left = _children_of_test() - before
    assert not {name for _, name in left} & {"perf", "pcm", "redis-server"}, left


def _instructions(tmp_path: Path, requests: int, name: str) -> RunResult:
    suites = _suite(tmp_path / name, name, "-t set -n 1000000 -r 1000 -c 10")
    return _run(suites, tmp_path / f"results-{name}",
                ProfilerOptions(names=("instructions",), requests=requests,
                                instructions_method="callgrind"), test_time=1)


def test_instruction_count_scales_with_requests(tmp_path: Path) -> None:
    small = _instructions(tmp_path, 4000, "instr-small")
    large = _instructions(tmp_path, 12000, "instr-large")
    for result, n in ((small, 4000), (large, 12000)):
        prof = result.profiles["instructions"]
        assert prof.status == PROFILE_OK, prof.reason
        assert prof.method == "callgrind"
        assert prof.data["ops"] == n  # the fixed request count replaced -n and --test-time
        assert prof.data["instructions"] > 0
        assert result.metrics[METRIC] == pytest.approx(prof.data[METRIC])
        names = {f["function"] for f in prof.data["top_functions"]}
        assert names & {"processMultibulkBuffer", "call", "dictFind", "setGenericCommand",
                        "processCommand"}, names
        assert Path(result.paths["instructions_functions"]).exists()
    # three times the requests: about three times the instructions, the same per op
    ratio = large.profiles["instructions"].data["instructions"] / \
        small.profiles["instructions"].data["instructions"]
    assert 2.5 < ratio < 3.5, ratio
    assert large.metrics[METRIC] == pytest.approx(small.metrics[METRIC], rel=0.1)
    assert 1000 < large.metrics[METRIC] < 100_000


def test_mixed_commands_get_per_call_counts(tmp_path: Path) -> None:
    suites = _suite(tmp_path / "suites", "instr-mixed", "-t set,get -n 100000 -r 100 -c 5",
                    "set,get")
    result = _run(suites, tmp_path / "results",
                  ProfilerOptions(names=("instructions",), requests=3000,
                                  instructions_method="callgrind"), test_time=1)
    prof = result.profiles["instructions"]
    assert prof.status == PROFILE_OK, prof.reason
    assert prof.data["ops_per_command"] == {"set": 3000.0, "get": 3000.0}
    assert result.metrics["instructions_per_call.SET"] > 0
    assert result.metrics["instructions_per_call.GET"] > 0
    # SET writes (allocates, replaces a value): more work than GET
    assert result.metrics["instructions_per_call.SET"] > result.metrics["instructions_per_call.GET"]


def test_callgrind_reader_names_source_files(tmp_path: Path) -> None:
    """A binary with debug info: every function of ours gets its file, costs add up."""
    source = tmp_path / "work.c"
    source.write_text(
        "static volatile long sink;\n"
        "__attribute__((noinline)) void leaf(long n) { for (long i = 0; i < n; i++) sink += i; }\n"
        "__attribute__((noinline)) void middle(long n) { leaf(n); leaf(n); }\n"
        "int main(void) { middle(100000); leaf(1000); return 0; }\n")
    binary = tmp_path / "work"
    subprocess.run(["gcc", "-g", "-O1", "-o", str(binary), str(source)], check=True,
                   timeout=60)
    out = tmp_path / "callgrind.out"
    subprocess.run([shutil.which("valgrind") or "valgrind", "--tool=callgrind",
                    f"--callgrind-out-file={out}", str(binary)], check=True, timeout=120,
                   capture_output=True)
    profile = parse_callgrind(out.read_text())
    (leaf,) = profile.by_name("leaf")
    (middle,) = profile.by_name("middle")
    assert leaf.file is not None and leaf.file.endswith("work.c")
    assert middle.self_ir < leaf.self_ir
    # middle's inclusive cost holds its two calls of leaf: 2 of leaf's 201000 iterations
    assert middle.inclusive_ir == pytest.approx(leaf.self_ir * 200_000 / 201_000, rel=0.01)
    assert profile.total_ir == sum(f.self_ir for f in profile.functions)


def test_perf_stat_csv_lists_unsupported_events() -> None:
    text = ("# started on Mon\n\n4321.98,msec,task-clock,4321982821,100.00,0.269,CPUs utilized\n"
            "45914,,context-switches,4321982821,100.00,10.623,K/sec\n"
            "<not supported>,,cycles,0,100.00,,\n<not counted>,,branches,0,0.00,,\n")
    counts = parse_stat_csv(text)
    assert counts.events["task-clock"]["value"] == pytest.approx(4321.98)
    assert counts.unsupported == ["cycles"] and counts.not_counted == ["branches"]
    assert "ipc" not in counts.to_dict()


def test_result_keeps_profiles_and_telemetry_through_json(tmp_path: Path) -> None:
    suites = _suite(tmp_path / "suites", "telemetry-only", "-t set -n 20000 -r 100")
    result = _run(suites, tmp_path / "results", ProfilerOptions())
    assert PROFILED not in result.flags and not result.profiles
    tele = result.telemetry
    assert tele is not None and tele.window_s > 0
    (server,) = tele.servers
    kinds = {t.kind for t in server.threads}
    assert "main" in kinds and "bio" in kinds
    main = next(t for t in server.threads if t.kind == "main")
    assert main.cpu_pct > 0
    assert server.rss_samples >= 2 and server.rss_max_bytes >= server.rss_start_bytes > 0
    assert tele.host.kernel and tele.host.cpus_online
    raw = json.loads((tmp_path / "results" / "telemetry-only" / "oss-standalone" /
                      "result.json").read_text())
    assert raw["telemetry"]["servers"][0]["threads"][0]["tid"] == server.threads[0].tid


def test_profiled_runs_keep_only_instruction_counts_in_history() -> None:
    from redis_benchmarks_spec.datasink import keys
    from redis_benchmarks_spec.datasink.writer import PushOptions, skip_reason
    from redis_benchmarks_spec.results.document import GitInfo, RunContext

    ctx = RunContext(git=GitInfo(branch="unstable"))
    plain = RunResult("t", "t:1", "ok", context=ctx,
                      metrics={"ALL_STATS.Totals.Ops/sec": 1e5, METRIC: 6500.0})
    assert keys.history_metrics(plain) == ["ALL_STATS.Totals.Ops/sec", METRIC]
    profiled = RunResult("t", "t:2", "ok", context=ctx, flags=[PROFILED],
                         metrics={"ALL_STATS.Totals.Ops/sec": 4e3, METRIC: 6500.0,
                                  "instructions_per_call.SET": 3000.0})
    assert {s.metric for s in keys.series_ids(profiled)} == {METRIC,
                                                             "instructions_per_call.SET"}
    perf_only = RunResult("t", "t:3", "ok", context=ctx, flags=[PROFILED],
                          metrics={"ALL_STATS.Totals.Ops/sec": 9e4})
    assert "profiled" in skip_reason(perf_only, PushOptions())
    assert skip_reason(profiled, PushOptions()) == ""


def test_fixed_request_count_rewrites_both_tools() -> None:
    from redis_benchmarks_spec.loadgen.fixed_requests import with_request_count
    from redis_benchmarks_spec.suites.suite import ToolConfig

    rb = with_request_count(ToolConfig("redis-benchmark", "-t set -n 1000000 -r 100 -c 50"), 5000)
    assert rb.argv()[rb.argv().index("-n") + 1] == "5000"
    small = with_request_count(ToolConfig("redis-benchmark", "-t set -n 100"), 5000)
    assert small.argv()[small.argv().index("-n") + 1] == "100"  # never more than the suite's
    mt = with_request_count(ToolConfig("memtier_benchmark",
                                       "--test-time 60 -c 10 -t 2 --ratio 1:10"), 5000)
    argv = mt.argv()
    assert "--test-time" not in argv and argv[argv.index("--requests") + 1] == "250"


def test_function_movers_name_the_function_that_grew(tmp_path: Path) -> None:
    from redis_benchmarks_spec.analysis.function_movers import function_movers
    from redis_benchmarks_spec.inputs.profiles import read_functions

    def run(extra: float, noise: float) -> list[dict[str, object]]:
        funcs = [{"function": "processCommand", "file": "server.c", "self_per_op": 180 + noise},
                 {"function": "dictFind", "file": "dict.c", "self_per_op": 200.0}]
        if extra:
            funcs.append({"function": "updateCommandLatencyHistogram", "file": "server.c",
                          "self_per_op": extra})
        return funcs

    path = tmp_path / "f.json"
    path.write_text(json.dumps(run(0, 0)))
    assert read_functions(path)[0]["function"] == "processCommand"
    (tmp_path / "bad.json").write_text("{not json")
    assert read_functions(tmp_path / "bad.json") == []
    baseline = [run(0, n) for n in (0.0, 0.4, -0.3)]
    comparison = [run(95.0, n) for n in (0.1, -0.2, 0.3)]
    moves = function_movers(baseline, comparison, baseline_per_op=6000.0)
    assert moves[0].function == "updateCommandLatencyHistogram"
    assert moves[0].delta_per_op == pytest.approx(95.0)
    assert moves[0].share_of_total_pct == pytest.approx(95 / 60)
    assert moves[0].file == "server.c"
    assert all(abs(m.delta_per_op) < 1 for m in moves[1:])


def test_a_window_on_a_process_without_valgrind_fails_in_one_line(tmp_path: Path) -> None:
    """The window's commands go to vgdb (callgrind_control's own tool); a pid that is not a
    Valgrind process is an error of one line naming the command and the pid, not a hang."""
    profiler = Instructions(ProfilerOptions(names=("instructions",),
                                            instructions_method="callgrind"))
    profiler.server_wrapper(tmp_path)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        with pytest.raises(ProfilerError) as caught:
            profiler._control(sleeper.pid, ["dump window", "instrumentation off"])
    finally:
        sleeper.kill()
        sleeper.wait(timeout=10)
    message = str(caught.value)
    assert f"pid {sleeper.pid}" in message and "dump window -c instrumentation off" in message
    assert "\n" not in message
