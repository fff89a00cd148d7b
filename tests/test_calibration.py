"""Each host's own noise (issue 28): calibration A/A sessions set each test's timed noise
floor, per family, under the host fingerprint they ran on; CPU placement is recorded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from redis_benchmarks_spec.agent import calibration
from redis_benchmarks_spec.agent.ab_event import host_line
from redis_benchmarks_spec.agent.platform_config import (
    CalibrationConfig,
    PlatformConfigError,
    load,
)
from redis_benchmarks_spec.analysis.compare import CompareOptions, compare_paired
from redis_benchmarks_spec.analysis.noise import (
    MIN_CALIBRATED_FLOOR_PCT,
    NoiseBook,
)
from redis_benchmarks_spec.analysis.verdict import (
    DEFAULT_METRIC,
    DEFAULT_NOISE_FLOOR_PCT,
    HostNoise,
)
from redis_benchmarks_spec.inputs import noise_file
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import RunContext, RunResult
from redis_benchmarks_spec.runner.ab_files import save_book
from redis_benchmarks_spec.runner.ab_session import ABSessionResult
from redis_benchmarks_spec.runner.cpus import host_cpus
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.catalog import load_catalog
from redis_benchmarks_spec.telemetry.fingerprint import changes, fingerprint_id, host_fingerprint

SUITES = Path(__file__).resolve().parent.parent / "test-suites"
GET = "redis-benchmark-1Kkeys-string-get-100B"
OPS = DEFAULT_METRIC


def _pairs(*ratios: float) -> list[tuple[float, float]]:
    return [(100_000.0, 100_000.0 * r) for r in ratios]


def test_floors_come_from_the_largest_a_a_offset_of_the_test_or_its_family(
        tmp_path: Path) -> None:
    book = NoiseBook(tmp_path / "noise.json")
    book.record("get", OPS, "vm", _pairs(1.05, 1.02, 1.04, 1.03), "string")  # offset +3.5 %
    book.record("get", OPS, "vm", _pairs(0.99, 1.0, 1.01, 1.0), "string")    # offset ~0
    book.record("hget", OPS, "vm", _pairs(1.001, 0.999, 1.0), "hash")        # tiny offset
    noise = book.host_noise(OPS, "vm", {"get": "string", "set": "string", "hget": "hash",
                                        "zadd": "sorted-set"})
    floors, note = noise.floors, noise.note
    assert floors["get"] == pytest.approx(3.5, abs=0.1)  # the largest of its sessions
    assert floors["set"] == floors["get"]  # its family's
    assert floors["hget"] == MIN_CALIBRATED_FLOOR_PCT  # never below 1 %
    assert "zadd" not in floors and "1 test(s) without a calibration" in note
    # another platform's calibration says nothing about this one
    assert book.host_noise(OPS, "other", {"get": "string"}).floors == {}
    # the spread a timed interval may assume is the test's pooled A/A spread
    assert noise.spreads["get"] == pytest.approx(book.entries["vm|" + OPS + "|get"].sd)
    # the book round-trips through its file with the offsets and families
    save_book(book)
    again = noise_file.load(book.path)
    assert again.host_noise(OPS, "vm", {"set": "string"}).floors == {"set": floors["get"]}


def test_a_row_is_judged_against_its_host_noise_and_says_which() -> None:
    """A quiet calibrated host decides a -3 % change in 4 pairs; the same pairs of a test the
    host never calibrated are judged on the assumed 15 % pair spread and 5 % floor."""
    four = _pairs(0.965, 0.97, 0.968, 0.966)
    pairs = {"a": four, "b": [*four, *_pairs(0.967)], "c": four}
    host = HostNoise(floors={"a": 2.0}, spreads={"a": 0.01}, note="from a test")
    rows = {r.test: r for r in compare_paired(pairs, CompareOptions().with_host(host)).rows}
    assert rows["a"].verdict == "REGRESSION" and rows["a"].noise_floor_pct == 2.0
    assert "host's spread (calibrated on this host: 1.0 %)" in rows["a"].method
    assert rows["b"].noise_floor_pct == DEFAULT_NOISE_FLOOR_PCT
    assert rows["b"].verdict == "UNKNOWN" and "throughput prior (no calibration of this host)" in rows["b"].method
    assert rows["b"].ci_low_pct is not None and rows["b"].ci_low_pct < -15
    # an assumed spread does not let 4 pairs decide: the signed-rank interval, unbounded
    assert rows["c"].verdict == "UNKNOWN" and rows["c"].ci_low_pct is None
    assert rows["a"].pair_sd_pct is not None and rows["a"].pair_sd_pct < 1.0
    # a session noisier than its host's spread keeps its own, wider interval
    noisy = {"a": _pairs(0.80, 1.1, 0.9, 1.05)}
    row = compare_paired(noisy, CompareOptions().with_host(host)).rows[0]
    assert "host's spread" not in row.method


def test_a_changed_fingerprint_drops_the_timed_entries_and_is_due(tmp_path: Path) -> None:
    book = NoiseBook(tmp_path / "noise.json")
    host = host_fingerprint()
    assert host["kernel"] and len(fingerprint_id(host)) == 12
    assert calibration.due(book, "vm", host, 3600, 0) == "never calibrated"
    book.record("get", OPS, "vm", _pairs(1.05, 1.02, 1.04), "string")
    book.record("get", "instructions_per_op", "vm", _pairs(1.0, 1.0001, 0.9999), "string")
    assert book.calibrated("vm", host, 1000, ["get"]) == []
    assert calibration.due(book, "vm", host, 3600, 2000) == ""
    assert "ago" in calibration.due(book, "vm", host, 3600, 1000 + 3600_000)
    other = dict(host, microcode="0xdead", governor="powersave")
    assert calibration.due(book, "vm", other, 3600, 2000) == "the host fingerprint changed"
    changed = book.calibrated("vm", other, 3000, ["get"])
    assert any(c.startswith("microcode:") for c in changed) and changes(host, other) == changed
    # the timed entry is gone (it described another host), instruction counts stay
    assert {e.metric for e in book.entries.values()} == {"instructions_per_op"}


def test_platform_config_calibration_section(tmp_path: Path) -> None:
    path = tmp_path / "p.yml"
    path.write_text(f"calibration:\n  tests: [{GET}]\n  pairs: 4\n  every: 12h\n")
    cal = load(path).calibration
    assert cal == CalibrationConfig((GET,), 4, 12 * 3600, 2, None)
    for bad, word in (("tests: []", "calibration.tests"), (f"tests: [{GET}]\n  pairs: 1",
                      "calibration.pairs"), (f"tests: [{GET}]\n  server: relative/x",
                                             "calibration.server"),
                      (f"tests: [{GET}]\n  colour: red", "calibration: unknown key")):
        path.write_text(f"calibration:\n  {bad}\n")
        with pytest.raises(PlatformConfigError, match=word.replace(".", r"\.")):
            load(path)


def test_calibration_runs_an_a_a_session_and_sets_the_floor(tmp_path: Path) -> None:
    """A real A/A (the installed redis-server on both sides, 3 pairs of 1 s) recorded under
    this host's fingerprint; the next check finds nothing due; the runs record where their
    CPUs were placed and never put the server on CPU 0 when another CPU exists."""
    catalog = load_catalog(SUITES)
    suites = [s for s in catalog.suites if s.name == GET]
    assert suites
    session = SessionConfig(tools=ToolPaths(redis_server=shutil.which("redis-server") or ""),
                            results_dir=tmp_path / "out",
                            context=RunContext(triggering_env="calibration", platform="vm"),
                            topology_filter="oss-standalone")
    plan = CalibrationConfig((GET,), pairs=3, every_s=3600, test_time=1)
    book_path = tmp_path / "noise.json"
    outcome = calibration.calibrate_if_due(session, suites, plan, book_path)
    assert outcome is not None and outcome.why == "never calibrated" and outcome.recorded >= 1
    book = noise_file.load(book_path)
    entry = next(e for e in book.entries.values() if e.metric == OPS)
    assert entry.test == GET and entry.family == "string" and len(entry.offsets) == 1
    assert book.host_noise(OPS, "vm", {GET: "string"}).floors[GET] >= MIN_CALIBRATED_FLOOR_PCT
    assert book.calibrations["vm"].fingerprint == host_fingerprint()
    assert calibration.calibrate_if_due(session, suites, plan, book_path) is None
    docs = [RunResult.from_dict(json.loads(p.read_text()))
            for p in (tmp_path / "out").rglob("result.json")]
    assert len(docs) == 6
    for doc in docs:
        assert doc.cpus["server"] and doc.cpus["server"] != doc.cpus["client"]
        if len(host_cpus()) > 1:
            assert 0 not in doc.cpus["server"], doc.cpus
        assert doc.cpu_placement == "" or "handed out last" in doc.cpu_placement


def test_the_pull_request_comment_names_the_host_and_its_noise() -> None:
    """The agent's A/B record carries the host fingerprint and where the timed floor came
    from, as a note every platform section of the comment shows."""
    report = compare_paired({"t": _pairs(0.99, 1.01, 1.0, 0.98, 1.02)},
                            CompareOptions().with_host(None))
    line = host_line(ABSessionResult([], report, None))
    fp = host_fingerprint()
    assert line.startswith("Host: ") and f"fingerprint {fingerprint_id(fp)}" in line
    assert f"kernel {fp['kernel']}" in line
    assert "Timed noise: no calibration of this host" in line
