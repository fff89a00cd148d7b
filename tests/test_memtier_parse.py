"""memtier_benchmark: parsing every recorded sample, error detection, argv, parallel merge.

Expected values come from memtier's own fields (printed percentiles, Count, Accumulated
Latency, per-second series), never from the code under test.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from redis_benchmarks_spec.common.tools import find_tool
from redis_benchmarks_spec.loadgen.exporter import evaluate_metrics
from redis_benchmarks_spec.loadgen.memtier import (
    MemtierTarget,
    audit_reply_bytes,
    check_errors,
    count_error_lines,
    detect_error_replies,
    expected_duration,
    memtier_argv,
    memtier_version,
    merge_results,
    parse_memtier_json,
)
from redis_benchmarks_spec.loadgen.result import ServerErrorReplies, ToolOutputError, ToolResult
from redis_benchmarks_spec.suites.suite import ToolConfig

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "memtier"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "samples" / "memtier"
SAMPLES = FIXTURES if FIXTURES.is_dir() else SHARED
ALL = sorted(SAMPLES.glob("*.json"))
WRONGTYPE = SAMPLES / "memtier-hset-command-5s-WRONGTYPE-collision.json"
DEFAULT_METRICS = ['$."ALL STATS".Totals."Ops/sec"', '$."ALL STATS".Totals."Latency"',
                   '$."ALL STATS".Totals."Percentile Latencies"."p50.00"',
                   '$."ALL STATS".Totals."Percentile Latencies"."p99.00"',
                   '$."ALL STATS".Totals."Percentile Latencies"."p99.90"']


def raw(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def combined_block(data: dict[str, Any]) -> dict[str, Any]:
    """memtier's block that covers every run: ALL STATS or AGGREGATED."""
    return next(v for k, v in data.items() if k == "ALL STATS" or k.startswith("AGGREGATED"))


def per_run_blocks(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    runs = [v for k, v in data.items() if k.startswith("RUN #")]
    yield from runs or [combined_block(data)]


# ---------------------------------------------------------------------------- parsing


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_counts_and_runs_match_memtier(path: Path) -> None:
    data = raw(path)
    result = parse_memtier_json(path)
    combined = combined_block(data)
    assert result.runs == (3 if "runcount3" in path.name else 1)
    assert result.totals.latency.count == combined["Totals"]["Count"]
    for cmd, res in result.per_command.items():
        assert res.latency.count == combined[cmd]["Count"], cmd
    assert "Waits" not in result.per_command  # no WAIT sent: nothing measured
    assert result.histogram is not None and result.histogram.startswith("HIST")


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_percentiles_equal_memtier_printed_ones(path: Path) -> None:
    data = raw(path)
    result = parse_memtier_json(path)
    combined = combined_block(data)
    for cmd, res in result.per_command.items():
        printed = combined[cmd]["Percentile Latencies"]
        for label in ("p50.00", "p99.00", "p99.90"):
            assert res.latency.percentiles_ms[label] == printed[label], (cmd, label)


@pytest.mark.parametrize("path", [p for p in ALL if "ALL STATS" in raw(p)], ids=lambda p: p.name)
def test_single_run_totals_percentiles_equal_memtier(path: Path) -> None:
    totals = raw(path)["ALL STATS"]["Totals"]
    result = parse_memtier_json(path)
    for label in ("p50.00", "p99.00", "p99.90"):
        assert result.totals.latency.percentiles_ms[label] == totals["Percentile Latencies"][label]
    assert result.totals.latency.max_ms == totals["Max Latency"]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_mean_is_exact_not_memtiers_truncated_totals(path: Path) -> None:
    data = raw(path)
    result = parse_memtier_json(path)
    # per-command Accumulated Latency (ms): the AGGREGATED Totals one is 0
    commands = [sec for b in per_run_blocks(data) for name, sec in b.items()
                if isinstance(sec, dict) and sec.get("Count") and name != "Totals"]
    accumulated = sum(sec["Accumulated Latency"] for sec in commands)
    count = sum(sec["Count"] for sec in commands)
    assert result.totals.latency.mean_ms == pytest.approx(accumulated / count, rel=0.01)
    assert combined_block(data)["Totals"]["Latency"] == 0.0  # memtier's truncation
    metrics, missing = evaluate_metrics(result.data, DEFAULT_METRICS)
    assert missing == []
    assert metrics["ALL_STATS.Totals.Latency"] == pytest.approx(accumulated / count, rel=0.01)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_ops_per_sec_is_count_over_test_time(path: Path) -> None:
    """memtier's Total duration (and so its Ops/sec) is off by up to a second: the per-second
    series shows test_time full seconds. ops/sec must be Count / (runs x test_time)."""
    data = raw(path)
    test_time = data["configuration"]["test_time"]
    runs = list(per_run_blocks(data))
    for block in runs:
        series = block["Totals"].get("Time-Serie") or {}
        if series:  # test_time full seconds, then the in-flight requests' drain
            assert len(series) == test_time + 1
    result = parse_memtier_json(path)
    count = combined_block(data)["Totals"]["Count"]
    assert result.totals.ops_per_sec == pytest.approx(count / (result.runs * test_time))
    assert result.duration_s == result.runs * test_time
    assert result.data["rbs"]["memtier ALL STATS Totals"]["Ops/sec"] == \
        combined_block(data)["Totals"]["Ops/sec"]


def test_hset_sample_shows_the_duration_defect() -> None:
    data = raw(SAMPLES / "memtier-hset-command-5s.json")["ALL STATS"]
    assert data["Runtime"]["Total duration"] == 4001  # a 5 s run
    result = parse_memtier_json(SAMPLES / "memtier-hset-command-5s.json")
    assert result.totals.ops_per_sec == pytest.approx(328069 / 5)
    assert data["Totals"]["Ops/sec"] == pytest.approx(328069 / 4.001, rel=1e-4)


@pytest.mark.parametrize("name", ["memtier-runcount3-printall-2s.json",
                                  "memtier230-runcount3-printall-2s.json",
                                  "memtier-runcount3-5s.json"])
def test_multi_run_files_merge_every_run(name: str) -> None:
    data = raw(SAMPLES / name)
    aggregated = next(v for k, v in data.items() if k.startswith("AGGREGATED"))
    # memtier's AGGREGATED Totals histogram is empty (prints 0.007) though Count is the sum
    assert aggregated["Totals"]["Percentile Latencies"]["p50.00"] == 0.007
    result = parse_memtier_json(SAMPLES / name)
    assert result.runs == 3
    assert result.totals.latency.count == aggregated["Totals"]["Count"]
    assert result.totals.latency.percentiles_ms["p50.00"] != 0.007
    # memtier's per-command AGGREGATED histograms hold every run: same percentiles
    for cmd in ("Sets", "Gets"):
        printed = aggregated[cmd]["Percentile Latencies"]
        for label in ("p50.00", "p99.00", "p99.90"):
            assert result.per_command[cmd].latency.percentiles_ms[label] == printed[label]
    metrics, missing = evaluate_metrics(
        result.data, [*DEFAULT_METRICS, '$."ALL STATS".Runtime."Start time"'])
    assert missing == []
    assert metrics["ALL_STATS.Totals.Ops/sec"] == result.totals.ops_per_sec
    assert metrics["ALL_STATS.Runtime.Start_time"] > 0


def test_errors_name_the_file_and_field(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ToolOutputError, match="broken.json"):
        parse_memtier_json(broken)
    empty = tmp_path / "empty.json"
    empty.write_text('{"configuration": {}}')
    with pytest.raises(ToolOutputError, match="no 'ALL STATS'"):
        parse_memtier_json(empty)
    data = raw(SAMPLES / "memtier-basic-5s.json")
    data["ALL STATS"]["Gets"]["Count"] = "many"
    bad_field = tmp_path / "bad_field.json"
    bad_field.write_text(json.dumps(data))
    with pytest.raises(ToolOutputError, match=r"bad_field.json: ALL STATS.Gets.Count"):
        parse_memtier_json(bad_field)
    data = raw(SAMPLES / "memtier-basic-5s.json")
    data["ALL STATS"]["Sets"]["Percentile Latencies"]["Histogram log format"][
        "Compressed Histogram"] = "HISTFAAAgarbage"
    bad_hist = tmp_path / "bad_hist.json"
    bad_hist.write_text(json.dumps(data))
    with pytest.raises(ToolOutputError, match=r"ALL STATS.Sets.'Percentile Latencies'"):
        parse_memtier_json(bad_hist)


def test_password_is_redacted(tmp_path: Path) -> None:
    data = raw(SAMPLES / "memtier-basic-5s.json")
    data["configuration"]["authenticate"] = "user:s3cret"
    path = tmp_path / "auth.json"
    path.write_text(json.dumps(data))
    assert "s3cret" not in json.dumps(parse_memtier_json(path).to_dict())


def test_result_round_trips_through_its_dict() -> None:
    result = parse_memtier_json(SAMPLES / "memtier-runcount3-printall-2s.json")
    again = ToolResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.totals == result.totals and again.histogram == result.histogram


# ---------------------------------------------------------------------------- error replies


def test_wrongtype_collision_sample_is_detected_with_a_clear_message() -> None:
    assert detect_error_replies(WRONGTYPE) == 36248  # the count the samples README states
    with pytest.raises(ServerErrorReplies) as exc:
        check_errors(WRONGTYPE)
    message = str(exc.value)
    assert exc.value.count == 36248
    assert WRONGTYPE.name in message and "Hsets" in message and "error replies" in message
    argv = ["memtier_benchmark", "--command", "HSET __key__ f __data__"]
    assert detect_error_replies(WRONGTYPE, argv=argv) == 36248


@pytest.mark.parametrize("path", [p for p in ALL if p != WRONGTYPE], ids=lambda p: p.name)
def test_clean_samples_show_no_errors(path: Path) -> None:
    assert detect_error_replies(path) == 0
    assert audit_reply_bytes(path) == []
    check_errors(path, output="")


def test_counting_commands_with_many_fields_are_not_accused(tmp_path: Path) -> None:
    """A 10-field HSET answers ":10\\r\\n" (5 bytes): with the argv that is known exactly;
    without it two-digit replies are tolerated."""
    data = raw(SAMPLES / "memtier-hset-command-5s.json")
    for point in data["ALL STATS"]["Hsets"]["Time-Serie"].values():
        point["Bytes RX"] = 5 * point["Count"]
    fields = " ".join(f"f{i} __data__" for i in range(10))
    argv = ["memtier_benchmark", f"--command=HSET __key__ {fields}"]
    ten = tmp_path / "ten-fields.json"
    ten.write_text(json.dumps(data))
    assert detect_error_replies(ten) == 0
    assert detect_error_replies(ten, argv=argv) == 0
    one_field = ["memtier_benchmark", "--command", "HSET __key__ f __data__"]
    assert detect_error_replies(ten, argv=one_field) > 0  # 5-byte replies to a 1-field HSET


def test_error_lines_in_memtier_output_are_counted() -> None:
    text = ("[RUN #1] Preparing benchmark client...\n"
            "server 127.0.0.1:6379: handled response (first line): -WRONGTYPE Operation, 0 hits\n"
            "server 127.0.0.1:6379: handled response (first line): :1, 0 hits, 1 misses\n"
            "error: authentication failed [-WRONGPASS invalid username-password pair]\n")
    assert count_error_lines(text) == 2
    assert count_error_lines((SAMPLES / "memtier-basic-5s.stdout.txt").read_text()) == 0
    with pytest.raises(ServerErrorReplies, match="memtier logged"):
        check_errors(SAMPLES / "memtier-basic-5s.json", output=text)


# ---------------------------------------------------------------------------- merge


def test_merge_parallel_clients() -> None:
    a = parse_memtier_json(SAMPLES / "memtier-basic-5s.json")
    b = parse_memtier_json(SAMPLES / "memtier-runcount3-printall-2s.json")
    c = parse_memtier_json(SAMPLES / "memtier-hset-command-5s.json")
    merged = merge_results([a, b, c])
    assert merged.totals.ops_per_sec == pytest.approx(
        a.totals.ops_per_sec + b.totals.ops_per_sec + c.totals.ops_per_sec)
    assert merged.totals.latency.count == 465121 + 514077 + 328069
    assert set(merged.per_command) == {"Sets", "Gets", "Hsets"}
    # per command too: Sets of a and b merged, counts from memtier's own fields
    assert merged.per_command["Sets"].latency.count == 42295 + 46760
    assert merged.per_command["Sets"].ops_per_sec == pytest.approx(
        a.per_command["Sets"].ops_per_sec + b.per_command["Sets"].ops_per_sec)
    p99 = [r.totals.latency.percentiles_ms["p99.00"] for r in (a, b, c)]
    assert min(p99) <= merged.totals.latency.percentiles_ms["p99.00"] <= max(p99)
    assert merged.totals.latency.max_ms == max(r.totals.latency.max_ms or 0 for r in (a, b, c))
    metrics, missing = evaluate_metrics(merged.data, DEFAULT_METRICS)
    assert missing == [] and metrics["ALL_STATS.Totals.Ops/sec"] == merged.totals.ops_per_sec


def test_merge_without_histograms_keeps_a_weighted_mean() -> None:
    a = parse_memtier_json(SAMPLES / "memtier-basic-5s.json")
    b = parse_memtier_json(SAMPLES / "memtier-hset-command-5s.json")
    b.histogram, b.data, b.histograms = None, {}, {}  # a client that measured none
    merged = merge_results([a, b])
    assert merged.histogram is None and merged.totals.latency.percentiles_ms == {}
    expected = (a.totals.latency.count * (a.totals.latency.mean_ms or 0)
                + b.totals.latency.count * (b.totals.latency.mean_ms or 0)) / (465121 + 328069)
    assert merged.totals.latency.mean_ms == pytest.approx(expected)


# ---------------------------------------------------------------------------- argv


def test_argv_replaces_test_time_and_keeps_run_count(tmp_path: Path) -> None:
    cfg = ToolConfig("memtier_benchmark",
                     '"--data-size" "10" --command "HSET __key__ f __data__" --test-time 120 '
                     '--run-count 3 -s 10.0.0.1 --port=6380 -p6381 --json-out-file /x.json')
    out = tmp_path / "o.json"
    argv = memtier_argv("memtier_benchmark", cfg, MemtierTarget("127.0.0.1", 7000), out, 2)
    assert argv[:5] == ["memtier_benchmark", "--server", "127.0.0.1", "--port", "7000"]
    assert "HSET __key__ f __data__" in argv  # one argv item: never a shell
    assert argv.count("--test-time") == 1 and argv[argv.index("--test-time") + 1] == "2"
    assert not {"120", "10.0.0.1", "--port=6380", "-p6381", "/x.json"} & set(argv)
    assert argv[argv.index("--run-count") + 1] == "3" and "--print-all-runs" in argv
    assert argv[-2:] == ["--json-out-file", str(out)]
    assert expected_duration(argv) == 6.0


def test_argv_drops_the_suites_file_options(tmp_path: Path) -> None:
    cfg = ToolConfig("memtier_benchmark",
                     "--ratio 1:0 -o /home/x/.bashrc --out-file=/etc/a --client-stats /tmp/cs "
                     "--hdr-file-prefix=/root/h --data-import /etc/shadow -n 10")
    argv = memtier_argv("memtier_benchmark", cfg, MemtierTarget("127.0.0.1", 7000),
                        tmp_path / "o.json")
    suite_part = argv[:-2]  # ours: --json-out-file <tmp_path>/o.json
    assert not [a for a in suite_part if any(p in a for p in ("/home", "/etc", "/root", "/tmp"))]
    assert not {"-o", "--client-stats", "--data-import"} & set(argv)
    assert argv[argv.index("--ratio") + 1] == "1:0" and argv[argv.index("-n") + 1] == "10"


def test_argv_requests_forms_and_auth(tmp_path: Path) -> None:
    out = tmp_path / "o.json"
    for args in ("-n 5000 --ratio 1:0", "--requests=5000", "--requests 5000 --test-time=9"):
        argv = memtier_argv("m", ToolConfig("memtier_benchmark", args), MemtierTarget("h", 1),
                            out, 3)
        assert not {"-n", "5000", "--requests=5000", "--requests", "--test-time=9"} & set(argv)
        assert argv[argv.index("--test-time") + 1] == "3"
    kept = memtier_argv("m", ToolConfig("memtier_benchmark", "-n 5000 --tls -a other"),
                        MemtierTarget("h", 1, password="pw", user="u", tls=True,
                                      tls_cacert="/ca.pem", cluster_mode=True), out, None)
    assert kept[kept.index("-n") + 1] == "5000"
    assert kept.count("--tls") == 1 and "other" not in kept
    assert kept[kept.index("--authenticate") + 1] == "u:pw"
    assert kept[kept.index("--cacert") + 1] == "/ca.pem" and "--cluster-mode" in kept
    assert "--print-all-runs" not in kept and expected_duration(kept) is None


def test_version_of_something_that_is_not_memtier() -> None:
    assert memtier_version("/nonexistent/memtier_benchmark").startswith("unknown (")


# ---------------------------------------------------------------------------- real run


def test_real_memtier_run(redis_server: Any, tmp_path: Path) -> None:  # conftest fixture
    redis_port = redis_server.port
    binary = find_tool("memtier_benchmark")  # PATH, or built by scripts/setup.sh
    assert binary, "memtier_benchmark missing: run scripts/setup.sh"
    assert not memtier_version(binary).startswith("unknown")
    out = tmp_path / "m.json"
    cfg = ToolConfig("memtier_benchmark", "--test-time 60 -c 5 -t 1 --hide-histogram "
                     "--run-count 2")
    argv = memtier_argv(binary, cfg, MemtierTarget("127.0.0.1", redis_port), out, 1)
    done = subprocess.run(argv, timeout=120, capture_output=True, text=True, check=True)
    result = parse_memtier_json(out)
    assert result.runs == 2 and result.totals.latency.count > 0
    assert detect_error_replies(out, done.stdout + done.stderr, argv) == 0
    # a WRONGTYPE collision must be caught
    redis_server.client().set("memtier-1", "x")
    cfg = ToolConfig("memtier_benchmark", "--command 'HSET __key__ f __data__' "
                     "--command-key-pattern P --key-minimum 1 --key-maximum 1 -c 1 -t 1 "
                     "--hide-histogram")
    argv = memtier_argv(binary, cfg, MemtierTarget("127.0.0.1", redis_port), out, 1)
    done = subprocess.run(argv, timeout=60, capture_output=True, text=True, check=True)
    with pytest.raises(ServerErrorReplies):
        check_errors(out, done.stdout + done.stderr, argv)


def test_a_stored_rate_other_than_memtiers_says_why() -> None:
    from redis_benchmarks_spec.loadgen.memtier_rate import rate_note
    from redis_benchmarks_spec.loadgen.merge import merge_results
    path = SAMPLES / "memtier-hset-command-5s.json"  # memtier: 4001 ms for a 5 s run
    result = parse_memtier_json(path)
    printed = raw(path)["ALL STATS"]["Totals"]["Ops/sec"]
    assert abs(printed / result.totals.ops_per_sec - 1) > 0.2
    note = rate_note(result)
    assert f"memtier printed {printed:,.1f} Ops/sec" in note, note
    assert "(4.001 s for 1 run(s) of 5 s)" in note and "requests / --test-time" in note
    assert note.endswith(f"{result.totals.ops_per_sec:,.1f} ops/sec"), note
    both = merge_results([result, parse_memtier_json(path)])
    assert "summed over the 2 parallel clients" in rate_note(both)
    assert rate_note(parse_memtier_json(SAMPLES / "memtier-basic-5s.json")) == ""  # agrees
