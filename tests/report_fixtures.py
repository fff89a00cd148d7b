"""Results folders for report tests: two sides of real result documents (built directly,
with a real HDR histogram and a log file beside each), differing by commit and version."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram

from redis_benchmarks_spec.loadgen import histogram
from tests.datasink_fixtures import METRICS, make_result

BASE_SHA = "1" * 40
COMP_SHA = "2" * 40
TESTS: tuple[str, ...] = ("memtier_benchmark-1Mkeys-string-get-10B",
                         "memtier_benchmark-1Mkeys-string-set-10B")


def latency_histogram(seed: int, median_us: float) -> str:
    """A real encoded HdrHistogram (memtier's layout) of 20,000 log-normal latencies."""
    hist = HdrHistogram(1, 60_000_000, 2)
    for value in np.random.default_rng(seed).lognormal(np.log(median_us), 0.4, 20_000):
        hist.record_value(int(value))
    return histogram.encode(hist)


def write_side(root: Path, sha: str, version: str, scale: float, runs: int = 5) -> Path:
    """``runs`` result.json per test under ``root`` (ops/sec scaled by ``scale``)."""
    for test in TESTS:
        for run in range(runs):
            doc = make_result(run, test_name=test, hash=sha, version=version)
            doc = dataclasses.replace(doc, metrics={
                METRICS[0]: (100_000.0 + 700 * (run % 3)) * scale,
                METRICS[1]: (0.25 + run / 400) / scale})
            doc = dataclasses.replace(doc, run_id=f"{doc.run_id}-{sha[:4]}")
            assert doc.result is not None
            doc.result.histogram = latency_histogram(run, 250 / scale)
            where = root / f"rep-{run:02d}" / test / "oss-standalone"
            where.mkdir(parents=True)
            (where / "server.log").write_text("server log\n")
            doc = dataclasses.replace(doc, paths={"server_log": str(where / "server.log")})
            doc.write(where / "result.json")
    return root


def two_sides(tmp: Path) -> tuple[Path, Path]:
    """A baseline folder and a comparison folder 10 % slower."""
    return (write_side(tmp / "base", BASE_SHA, "7.2.4", 1.0),
            write_side(tmp / "comp", COMP_SHA, "7.2.5", 0.9))
