"""How fast the lab's site answers (issue 43): each page's p50/p95 over HTTP, on a datasink
filled with a scaled-down year of the lab (benchmarks/history_lab.py, as history_scale.py
fills it).

A fresh embedded datasink (temporary directory, free port, stopped by its pid) is filled with
COMMITS x PLATFORMS x SUITES runs; the site (``web.app.create_app``) is served by waitress in
this process on a free port, and each page is requested once and then ``--repeat`` times
with urllib (the first request draws the page's charts, :mod:`web.charts` keeps them). The
figures are wall times of whole requests (read, judge, draw, render) on this machine, shared
with whatever else runs: say what ran beside them when quoting them.

Usage: .venv/bin/python benchmarks/site_pages.py [--commits 40] [--platforms 2]
           [--suites 20] [--repeat 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from history_lab import LabShape, fill

from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.web.app import SiteConfig, create_app


def _pages(shape: LabShape) -> dict[str, str]:
    newest, before = shape.sha(shape.commits - 1), shape.sha(shape.commits - 2)
    base = "/ci/redis/redis"
    return {"index": "/",
            "branch (one platform)": f"{base}/branch/unstable?platform={shape.platform(0)}",
            "test history (one platform)":
                f"{base}/test/{shape.test(0)}?platform={shape.platform(0)}",
            "test history (every platform)": f"{base}/test/{shape.test(0)}",
            "compare (one platform)":
                f"/compare?a={before}&b={newest}&platform={shape.platform(0)}",
            "compare (every platform)": f"/compare?a={before}&b={newest}"}


def _time(url: str, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=120) as resp:
            resp.read()
            assert resp.status == 200, url
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--commits", type=int, default=40)
    p.add_argument("--platforms", type=int, default=2)
    p.add_argument("--suites", type=int, default=20)
    p.add_argument("--repeat", type=int, default=10)
    args = p.parse_args()
    import waitress

    shape = LabShape(args.commits, args.platforms, args.suites,
                     end_ms=int(time.time() * 1000))
    with tempfile.TemporaryDirectory() as folder:
        sink = EmbeddedDatasink(Path(folder), port=free_port())
        sink.up()
        try:
            fill(sink.url, shape, 1)
            app = create_app(SiteConfig(sink.client, sink.url))
            port = free_port()
            server = waitress.create_server(app, host="127.0.0.1", port=port, threads=4)
            threading.Thread(target=server.run, daemon=True).start()
            print(f"{shape.runs} runs ({args.commits} commits x {args.platforms} platforms x "
                  f"{args.suites} suites); {args.repeat} requests per page, ms:")
            for name, path in _pages(shape).items():
                # the first request draws its charts; the next ones find them drawn
                first, *rest = _time(f"http://127.0.0.1:{port}{path}", args.repeat + 1)
                ms = sorted(rest)
                p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
                print(f"  {name:32s} first {first:7.1f}  then p50 {statistics.median(ms):7.1f}"
                      f"  p95 {p95:7.1f}")
        finally:
            sink.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
