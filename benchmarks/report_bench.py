"""HTML report cost (issue 14): how long `rbs report` takes and how big the page is.

Writes two results folders of TESTS tests x RUNS runs per side (result documents with a real
HDR histogram of 20,000 latencies each, as memtier results carry) into a temporary
directory, then times building the page (load, compare, every plot as SVG) and prints the
seconds, the page size, and the size per test.

Usage: .venv/bin/python benchmarks/report_bench.py [--tests 20] [--runs 10]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from redis_benchmarks_spec.analysis import html_report
from redis_benchmarks_spec.analysis.compare import CompareOptions
from redis_benchmarks_spec.inputs.reports import from_two_folders
from tests import report_fixtures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=20)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    report_fixtures.TESTS = tuple(f"bench-test-{i:03d}" for i in range(args.tests))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = report_fixtures.write_side(root / "a", report_fixtures.BASE_SHA, "7.2.4", 1.0,
                                          args.runs)
        comp = report_fixtures.write_side(root / "b", report_fixtures.COMP_SHA, "7.2.5", 0.97,
                                          args.runs)
        started = time.perf_counter()
        data = from_two_folders(base, comp, CompareOptions())
        loaded = time.perf_counter()
        page = html_report.write(data, root / "report.html")
        done = time.perf_counter()
        size = page.stat().st_size
    print(f"{args.tests} tests x {args.runs} runs per side: load+compare "
          f"{loaded - started:.2f} s, render {done - loaded:.2f} s "
          f"({(done - loaded) / args.tests * 1000:.0f} ms per test), page {size / 1e6:.2f} MB "
          f"({size / args.tests / 1000:.0f} kB per test)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
