"""memtier_benchmark parsing over every recorded sample, plus argv building."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from redis_benchmarks_spec.loadgen import histogram as hdr
from redis_benchmarks_spec.loadgen.exporter import evaluate_metrics, metric_name
from redis_benchmarks_spec.loadgen.memtier import (
    MemtierTarget,
    audit_reply_bytes,
    check_errors,
    count_error_lines,
    memtier_argv,
    merge_results,
    parse_memtier_json,
)
from redis_benchmarks_spec.loadgen.result import ServerErrorReplies, ToolOutputError
from redis_benchmarks_spec.spec.suite import ToolConfig

SAMPLES = Path(__file__).resolve().parent / "fixtures" / "memtier"
ALL = sorted(SAMPLES.glob("*.json"))
RESULT_BLOCKS = ("ALL STATS", "RUN #1 RESULTS", "RUN #2 RESULTS", "RUN #3 RESULTS",
                 "BEST RUN RESULTS")


def raw(path: Path) -> dict:
    return json.loads(path.read_text())


def sections(path: Path):
    """(block, command, section) for every command section with requests, as memtier wrote it."""
    data = raw(path)
    for block in RESULT_BLOCKS:
        for cmd, sec in data.get(block, {}).items():
            if isinstance(sec, dict) and sec.get("Count"):
                yield block, cmd, sec


def test_every_sample_is_present() -> None:
    assert len(ALL) == 6


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_decoded_percentiles_equal_what_memtier_printed(path: Path) -> None:
    checked = 0
    for block, cmd, sec in sections(path):
        pct = sec["Percentile Latencies"]
        hist = hdr.decode(pct["Histogram log format"]["Compressed Histogram"])
        assert hist.get_total_count() == sec["Count"], (block, cmd)
        for label, p in (("p50.00", 50.0), ("p99.00", 99.0), ("p99.90", 99.9)):
            assert hist.get_value_at_percentile(p) / 1000.0 == pytest.approx(pct[label],
                                                                               abs=1e-9)
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_histogram_mean_matches_per_command_average(path: Path) -> None:
    for block, cmd, sec in sections(path):
        if cmd == "Totals":
            # memtier truncates Totals.Latency to whole ms: compare with Accumulated/Count
            expected = sec["Accumulated Latency"] / sec["Count"]
        else:
            expected = sec["Average Latency"]
        summary = hdr.summarize(hdr.decode(
            sec["Percentile Latencies"]["Histogram log format"]["Compressed Histogram"]))
        assert summary.mean_ms == pytest.approx(expected, rel=0.01), (block, cmd)


def test_parsed_totals_fix_memtier_truncation() -> None:
    path = SAMPLES / "memtier-basic-5s.json"
    assert raw(path)["ALL STATS"]["Totals"]["Latency"] == 0.0  # memtier's defect
    result = parse_memtier_json(path)
    assert result.totals.latency.mean_ms == pytest.approx(99858 / 465121, rel=0.01)
    assert result.totals.ops_per_sec == pytest.approx(93011.76, rel=1e-6)
    assert result.totals.latency.percentiles_ms["p99.90"] == 4.127
    assert set(result.totals.latency.percentiles_ms) == {
        "p50.00", "p90.00", "p95.00", "p99.00", "p99.90", "p99.99"}
    assert result.histogram and result.histogram.startswith("HIST")
    metrics, missing = evaluate_metrics(result.data, [
        '$."ALL STATS".Totals."Latency"', '$."ALL STATS".Totals."Ops/sec"',
        '$."ALL STATS".Totals."Percentile Latencies"."p99.99"'])
    assert missing == []
    assert metrics["ALL_STATS.Totals.Latency"] == pytest.approx(result.totals.latency.mean_ms)


@pytest.mark.parametrize("name", ["memtier-runcount3-printall-2s.json",
                                  "memtier230-runcount3-printall-2s.json"])
def test_merging_three_runs_gives_the_aggregated_count(name: str) -> None:
    path = SAMPLES / name
    data = raw(path)
    aggregated = next(v for k, v in data.items() if k.startswith("AGGREGATED"))
    runs = [hdr.decode(data[f"RUN #{i} RESULTS"]["Totals"]["Percentile Latencies"]
                       ["Histogram log format"]["Compressed Histogram"]) for i in (1, 2, 3)]
    merged = hdr.merge(runs)
    assert merged is not None and merged.get_total_count() == aggregated["Totals"]["Count"]
    result = parse_memtier_json(path)
    assert result.runs == 3
    assert result.totals.latency.count == aggregated["Totals"]["Count"]
    # the merged histogram is kept, re-decodable, and re-merges to the same count
    assert hdr.decode(result.histogram).get_total_count() == aggregated["Totals"]["Count"]
    # a merged ALL STATS block exists so "$.ALL STATS" exporter paths work for multi-run
    assert result.data["ALL STATS"]["Totals"]["Ops/sec"] == result.totals.ops_per_sec


def test_aggregated_only_file_uses_per_command_histograms() -> None:
    path = SAMPLES / "memtier-runcount3-5s.json"
    data = raw(path)
    agg = data["AGGREGATED AVERAGE RESULTS (3 runs)"]
    assert agg["Totals"]["Percentile Latencies"]["p50.00"] == 0.007  # memtier's empty histogram
    result = parse_memtier_json(path)
    assert result.totals.latency.count == agg["Sets"]["Count"] + agg["Gets"]["Count"]
    assert result.totals.latency.percentiles_ms["p50.00"] == 0.159


def test_wrongtype_collision_sample_fails_with_a_clear_message() -> None:
    bad = SAMPLES / "memtier-hset-command-5s-WRONGTYPE-collision.json"
    good = SAMPLES / "memtier-hset-command-5s.json"
    assert audit_reply_bytes(good) == []
    with pytest.raises(ServerErrorReplies) as exc:
        check_errors(bad, output="")
    assert "36,248 if -WRONGTYPE" in str(exc.value)
    assert "error replies" in str(exc.value)
    check_errors(good, output="")  # no error: no exception
    for path in ALL:
        if path != bad:
            assert audit_reply_bytes(path) == [], path.name


def test_error_lines_in_memtier_output_are_counted() -> None:
    text = ("[RUN #1] Preparing benchmark client...\n"
            "server 127.0.0.1:6379 handle error response: -WRONGTYPE Operation against a key\n"
            "server 127.0.0.1:6379 handle error response: -ERR unknown command\n")
    assert count_error_lines(text) == 2
    assert count_error_lines((SAMPLES / "memtier-basic-5s.stdout.txt").read_text()) == 0


def test_bad_files_name_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ToolOutputError, match="broken.json"):
        parse_memtier_json(broken)
    empty = tmp_path / "empty.json"
    empty.write_text('{"configuration": {}}')
    with pytest.raises(ToolOutputError, match="no 'ALL STATS'"):
        parse_memtier_json(empty)


def test_merge_parallel_clients() -> None:
    a = parse_memtier_json(SAMPLES / "memtier-basic-5s.json")
    b = parse_memtier_json(SAMPLES / "memtier-hset-command-5s.json")
    merged = merge_results([a, b])
    assert merged.totals.ops_per_sec == pytest.approx(a.totals.ops_per_sec + b.totals.ops_per_sec)
    assert merged.totals.latency.count == 465121 + 328069
    assert set(merged.per_command) == {"Sets", "Gets", "Hsets"}
    lo = min(a.totals.latency.percentiles_ms["p50.00"], b.totals.latency.percentiles_ms["p50.00"])
    hi = max(a.totals.latency.percentiles_ms["p50.00"], b.totals.latency.percentiles_ms["p50.00"])
    assert lo <= merged.totals.latency.percentiles_ms["p50.00"] <= hi


def test_argv_replaces_test_time_and_keeps_run_count(tmp_path: Path) -> None:
    cfg = ToolConfig("memtier_benchmark",
                     '"--data-size" "10" --command "HSET __key__ f __data__" --test-time 120 '
                     '--run-count 3 -s 10.0.0.1 --port=6380 --json-out-file /x.json')
    out = tmp_path / "o.json"
    argv = memtier_argv("memtier_benchmark", cfg, MemtierTarget("127.0.0.1", 7000), out, 2)
    assert argv[:5] == ["memtier_benchmark", "--server", "127.0.0.1", "--port", "7000"]
    assert "HSET __key__ f __data__" in argv  # one argv item: never a shell
    assert argv.count("--test-time") == 1 and argv[argv.index("--test-time") + 1] == "2"
    assert "120" not in argv and "10.0.0.1" not in argv and "--port=6380" not in argv
    assert argv[argv.index("--run-count") + 1] == "3"
    assert argv[-2:] == ["--json-out-file", str(out)]
    requests = ToolConfig("memtier_benchmark", "-n 5000 --ratio 1:0")
    argv = memtier_argv("m", requests, MemtierTarget("h", 1), out, 3)
    assert "-n" not in argv and argv[argv.index("--test-time") + 1] == "3"
    kept = memtier_argv("m", requests, MemtierTarget("h", 1, password="pw", tls=True), out, None)
    assert kept[kept.index("-n") + 1] == "5000" and "--tls" in kept and "pw" in kept


def test_metric_name_normalisation() -> None:
    assert metric_name('$."ALL STATS".Totals."Ops/sec"') == "ALL_STATS.Totals.Ops/sec"
    assert metric_name('$."ALL STATS".Totals."Percentile Latencies"."p50.00"') == \
        "ALL_STATS.Totals.Percentile_Latencies.p50.00"
    assert metric_name('$."BEST RUN RESULTS".Totals."Ops/sec"') == \
        "BEST_RUN_RESULTS.Totals.Ops/sec"


@pytest.mark.skipif(shutil.which("memtier_benchmark") is None,
                    reason="memtier_benchmark not on PATH (not installable here)")
def test_real_memtier_run(redis_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "m.json"
    cfg = ToolConfig("memtier_benchmark", "--test-time 2 -c 5 -t 1 --hide-histogram")
    argv = memtier_argv(shutil.which("memtier_benchmark") or "", cfg,
                        MemtierTarget("127.0.0.1", redis_server.port), out)
    subprocess.run(argv, check=True, timeout=60, capture_output=True)
    result = parse_memtier_json(out)
    assert result.totals.ops_per_sec > 0 and result.totals.latency.count > 0
