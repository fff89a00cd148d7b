"""HDR histogram decoding, merging and percentiles, checked against what memtier printed.

Every expected value here is memtier's own output (its printed ``Percentile Latencies``,
``Count``, ``Min/Max Latency``, ``Accumulated Latency``), never something computed the way
the code under test computes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from redis_benchmarks_spec.loadgen import histogram as hdr

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "memtier"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "samples" / "memtier"
SAMPLES = FIXTURES if FIXTURES.is_dir() else SHARED
ALL = sorted(SAMPLES.glob("*.json"))
PRINTED = (("p50.00", 50.0), ("p99.00", 99.0), ("p99.90", 99.9))


def sections(path: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(block, command, section) for every section that carries a histogram."""
    data = json.loads(path.read_text())
    for block, body in data.items():
        if not isinstance(body, dict):
            continue
        for cmd, sec in body.items():
            if isinstance(sec, dict) and "Percentile Latencies" in sec:
                yield block, cmd, sec


def encoded(sec: dict[str, Any]) -> str:
    return sec["Percentile Latencies"]["Histogram log format"]["Compressed Histogram"]


# digests of ../shared/samples/memtier as recorded: the copies are checked against them in
# every checkout (the shared folder itself is only there on the development machines)
SAMPLE_SHA256 = {
    "memtier-basic-5s.json": "82bc6def21dbd50e4d4806e1583f66ff4c5d8fdb6d630e5f1aed3b4616c2ec01",
    "memtier-hset-command-5s-WRONGTYPE-collision.json":
        "ebc91cebe6b9c65139379692a560dcd1fed686d31cb86940332055a942fac3ee",
    "memtier-hset-command-5s.json":
        "72957131e90fec85809ba3c4757cb634169e1426114a0f57ff1a8d66c3fdd5d6",
    "memtier-runcount3-5s.json":
        "43857a2624ec52d41479a2507de9ac695d8f329412a128f1465e5589892bfb9a",
    "memtier-runcount3-printall-2s.json":
        "1341aa67eec3446bf5689e6b8aa62b0464c8f388a4c3d424056778e68da03d68",
    "memtier230-runcount3-printall-2s.json":
        "b2c947b36e2708ad794ceccc6b5c3fe3736d7c88679ecf9c142b543b67d760ea",
}


def test_fixture_copies_match_the_shared_samples() -> None:
    assert {p.name for p in ALL} == set(SAMPLE_SHA256)
    for path in ALL:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == SAMPLE_SHA256[path.name], \
            path.name
        if SHARED.is_dir():
            assert path.read_bytes() == (SHARED / path.name).read_bytes(), path.name


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_percentiles_equal_what_memtier_printed_exactly(path: Path) -> None:
    checked = 0
    for block, cmd, sec in sections(path):
        hist = hdr.decode(encoded(sec))
        for label, p in PRINTED:
            # memtier prints value/1000 with "%.3f"; values are whole microseconds, so the
            # float parsed from the JSON must be exactly the same float
            assert hdr.percentile_ms(hist, p) == sec["Percentile Latencies"][label], \
                (block, cmd, label)
            checked += 1
    assert checked >= 6  # Hsets + Totals, x3 percentiles, in the smallest file


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_decoded_count_min_max_equal_memtier(path: Path) -> None:
    for block, cmd, sec in sections(path):
        hist = hdr.decode(encoded(sec))
        if hist.get_total_count() == 0:
            continue  # AGGREGATED Totals / Waits: checked in the empty-histogram test
        summary = hdr.summarize(hist)
        assert summary.count == sec["Count"], (block, cmd)
        assert summary.min_ms == sec["Min Latency"], (block, cmd)
        assert summary.max_ms == sec["Max Latency"], (block, cmd)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_histogram_mean_within_one_percent_of_memtier_average(path: Path) -> None:
    checked = 0
    for block, cmd, sec in sections(path):
        if not sec["Count"] or not sec["Accumulated Latency"]:
            continue
        mean = hdr.summarize(hdr.decode(encoded(sec))).mean_ms
        # Accumulated Latency (ms) / Count is the true mean in every block
        assert mean == pytest.approx(sec["Accumulated Latency"] / sec["Count"], rel=0.01), \
            (block, cmd)
        if cmd != "Totals" and not block.startswith("AGGREGATED"):
            # per-command averages of one run; Totals' is truncated to whole ms and the
            # AGGREGATED one is a mean of the runs' means
            assert mean == pytest.approx(sec["Average Latency"], rel=0.01), (block, cmd)
        checked += 1
    assert checked >= 2


def test_python_ranking_differs_from_c_only_where_it_matters() -> None:
    """memtier prints 0.007 for an empty histogram (C's highest_equivalent_value(0));
    the C rule reproduces it, and the summary refuses to invent latencies from it."""
    path = SAMPLES / "memtier-basic-5s.json"
    waits = json.loads(path.read_text())["ALL STATS"]["Waits"]
    hist = hdr.decode(encoded(waits))
    assert hist.get_total_count() == 0 and waits["Percentile Latencies"]["p50.00"] == 0.007
    assert hdr.percentile_ms(hist, 50.0) == 0.007
    assert hdr.summarize(hist).percentiles_ms == {} and hdr.summarize(hist).count == 0


@pytest.mark.parametrize("name", ["memtier-runcount3-printall-2s.json",
                                  "memtier230-runcount3-printall-2s.json"])
def test_merging_three_runs_gives_the_aggregated_count(name: str) -> None:
    data = json.loads((SAMPLES / name).read_text())
    aggregated = next(v for k, v in data.items() if k.startswith("AGGREGATED"))
    runs = [data[f"RUN #{i} RESULTS"] for i in (1, 2, 3)]
    merged = hdr.merge(hdr.decode(encoded(r["Totals"])) for r in runs)
    assert merged is not None
    assert merged.get_total_count() == aggregated["Totals"]["Count"]
    for cmd in ("Sets", "Gets"):
        per_cmd = hdr.merge(hdr.decode(encoded(r[cmd])) for r in runs)
        assert per_cmd is not None
        # memtier hdr_adds the runs into the AGGREGATED per-command histograms: the merge
        # must give back exactly its printed percentiles, min and max
        for label, p in PRINTED:
            assert hdr.percentile_ms(per_cmd, p) == aggregated[cmd]["Percentile Latencies"][label]
        assert hdr.summarize(per_cmd).max_ms == aggregated[cmd]["Max Latency"]
        assert per_cmd.get_total_count() == aggregated[cmd]["Count"]


def test_merged_histogram_survives_encoding() -> None:
    data = json.loads((SAMPLES / "memtier-runcount3-printall-2s.json").read_text())
    parts = [encoded(data[f"RUN #{i} RESULTS"]["Totals"]) for i in (1, 2, 3)]
    merged = hdr.merge_encoded(parts)
    assert merged is not None and merged.startswith("HIST")
    total = sum(data[f"RUN #{i} RESULTS"]["Totals"]["Count"] for i in (1, 2, 3))
    assert hdr.summarize_encoded(merged).count == total
    # merging is associative: re-merging the encoded merge with nothing changes nothing
    assert hdr.summarize_encoded(hdr.merge_encoded([merged])) == hdr.summarize_encoded(merged)


def test_merge_of_nothing_is_none() -> None:
    empty = encoded(json.loads((SAMPLES / "memtier-basic-5s.json").read_text())
                    ["ALL STATS"]["Waits"])
    assert hdr.merge([]) is None
    assert hdr.merge_encoded([empty]) is None
    assert hdr.summarize_encoded(None).count == 0


@pytest.mark.parametrize("garbage", ["", "HISTFAAAxyz", "HISTxx==", "not a histogram"])
def test_garbage_is_a_value_error(garbage: str) -> None:
    with pytest.raises(ValueError, match="HdrHistogram"):
        hdr.decode(garbage)


def test_summary_has_all_six_percentiles_in_order() -> None:
    sec = json.loads((SAMPLES / "memtier-basic-5s.json").read_text())["ALL STATS"]["Totals"]
    summary = hdr.summarize(hdr.decode(encoded(sec)))
    assert list(summary.percentiles_ms) == ["p50.00", "p90.00", "p95.00", "p99.00", "p99.90",
                                            "p99.99"]
    values = list(summary.percentiles_ms.values())
    assert values == sorted(values)
    assert summary.min_ms is not None and summary.max_ms is not None
    assert summary.min_ms <= values[0] and values[-1] <= summary.max_ms
