"""How fast the lab's site answers (issue 43), on a year of the whole lab in the dimensions
each page reads.

A year is 4 platforms x 551 suites x 1,500 commits (history_scale.py's YEAR_*). No page
reads the whole year, so the datasink is filled with the full slice each page reads rather
than the 3.3 million runs (benchmarks/site_lab.py says which): the newest 40 commits with
every suite on every platform (what the branch page reads), the newest 12 of them with 5
runs of each suite (what a comparison judges: 551 tests x 4 platforms), and 10 tests with
their whole 1,500-commit history on every platform (what a test's history page reads).
Nothing is extrapolated.

A fresh embedded datasink (temporary directory, free port, stopped by its pid) is filled
through the agents' push path; the site (``web.app.create_app``, as ``rbs site`` builds it)
is served by waitress in this process on a free port and requested with urllib. Per page:

- ``first``: the first request of the page (nothing of it kept yet);
- ``distinct p50/p95``: one request each of ``--distinct`` different pages of the kind
  (compare of different commit pairs, history of different tests, branch of each platform),
  with the site's kept charts and verdicts emptied before them: a maintainer's requests are
  mostly first requests;
- ``again p50/p95``: ``--repeat`` more requests of the first page (what is kept is used).

The figures are wall times of whole requests (read, judge, draw, render) on this machine,
shared with whatever else runs: say what ran beside them when quoting them.

Before the timed requests the datasink's background save (an RDB snapshot or an AOF
rewrite the fill or the restart started) is waited for (:func:`settle`): a fork of a 2 GB
server and its writing would land in the timed requests otherwise.

``--sink-dir DIR`` keeps the filled datasink in ``DIR`` (its shape and end time in
``site_lab.json`` there) and the next run with the same ``DIR`` and shape reuses it instead
of filling again (a minute here, then the server's save); without it a temporary one is filled and removed.

Usage: flock /tmp/rbs-heavy.lock .venv/bin/python benchmarks/site_pages.py
           [--full 40] [--compared 12] [--reps 5] [--histories 10] [--distinct 10]
           [--repeat 10] [--commits 1500] [--suites 551] [--platforms 4] [--sink-dir DIR]
           [--client process|thread]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from site_lab import SiteLab, expected_runs, fill

from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.datasink import keys
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.web import charts, compare_page
from redis_benchmarks_spec.web.app import SiteConfig, create_app, page_workers
from redis_benchmarks_spec.web.page_workers import default_workers

BASE = "/ci/redis/redis"


def _pages(lab: SiteLab, distinct: int) -> dict[str, list[str]]:
    """Per kind of page, ``distinct`` different URLs of it (fewer where fewer exist)."""
    shape = lab.shape
    plats = [shape.platform(p) for p in range(lab.platforms)]
    tests = [shape.test(s) for s in range(min(distinct, lab.histories))]
    pairs = [(lab.newest(i + 1), lab.newest(i)) for i in range(min(distinct, lab.compared - 1))]
    return {
        "index": ["/"],
        "branch, one platform": [f"{BASE}/branch/unstable?platform={p}" for p in plats],
        "branch, every platform": [f"{BASE}/branch/unstable"],
        "test history, one platform":
            [f"{BASE}/test/{t}?platform={plats[i % len(plats)]}" for i, t in enumerate(tests)],
        "test history, every platform": [f"{BASE}/test/{t}" for t in tests],
        "compare, one platform":
            [f"/compare?a={a}&b={b}&platform={plats[i % len(plats)]}"
             for i, (a, b) in enumerate(pairs)],
        "compare, every platform": [f"/compare?a={a}&b={b}" for a, b in pairs],
    }


def _get_ms(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as resp:
        resp.read()
        if resp.status != 200:
            raise RuntimeError(f"{url}: {resp.status}")
    return (time.perf_counter() - start) * 1000


CLIENT = """
import sys, time, urllib.request
for line in sys.stdin:
    start = time.perf_counter()
    with urllib.request.urlopen(line.strip(), timeout=300) as resp:
        resp.read()
        status = resp.status
    print(status, (time.perf_counter() - start) * 1000, flush=True)
"""


class Browser:
    """Requests from another process, as a browser's come (``--client process``): in the
    site's own process the client's reads of a comparison's 670 KB took the interpreter's
    lock from the site's threads. Stopped by its own process id when done."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", CLIENT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def get_ms(self, url: str) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(url + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "200":
            raise RuntimeError(f"{url}: {line or 'no answer'}")
        return float(line[1])

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)


def _p95(ms: list[float]) -> float:
    ms = sorted(ms)
    return ms[min(len(ms) - 1, int(0.95 * len(ms)))]


def _forget() -> None:
    """Empty what the site keeps (drawn charts, judged comparisons, parsed series keys): the
    next request of any page is a first request."""
    with charts._DRAWING:
        charts._CACHE.clear()
    with compare_page._JUDGING:
        compare_page._JUDGED.clear()
    keys.parse_key.cache_clear()  # the series keys a page parsed before


def settle(client: redis.Redis, timeout_s: float = 600.0) -> float:
    """Wait until the datasink runs no background save (RDB snapshot, AOF rewrite) and has
    none due: changes not yet saved (a restart replays its AOF's tail, and those count) are
    saved first, or the server's ``save 60 1000`` forks a snapshot of the 1.4 GB datasink
    in the middle of the timed requests (seen: 36 s after a reuse, during the comparisons).
    The seconds waited."""
    started = time.monotonic()
    while True:
        info = client.info("persistence")
        busy = int(info.get("rdb_bgsave_in_progress", 0)) or \
            int(info.get("aof_rewrite_in_progress", 0)) or \
            int(info.get("aof_rewrite_scheduled", 0))
        if not busy and int(info.get("rdb_changes_since_last_save", 0)):
            client.bgsave()
            time.sleep(0.5)
            continue
        if not busy:
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"the datasink still saves after {timeout_s:.0f} s")
        time.sleep(0.5)


def measure(sites: dict[int, str], pages: dict[str, list[str]], repeat: int,
            get_ms: Callable[[str], float] = _get_ms) -> None:
    """Print each kind of page's first, distinct and repeated request times (module doc),
    on each site (by its number of page workers), one site's requests of a kind after the
    other's, so that what runs beside them falls on both alike."""
    print(f"{'page':30s} {'workers':>7s} {'first':>8s} {'distinct p50':>13s} {'p95':>8s} "
          f"{'n':>3s} {'again p50':>10s} {'p95':>8s} {'load':>5s}")
    for name, paths in pages.items():
        for workers, base in sites.items():
            _forget()
            distinct = [get_ms(base + p) for p in paths]
            again = [get_ms(base + paths[0]) for _ in range(repeat)]
            load = Path("/proc/loadavg").read_text().split()[0]
            print(f"{name:30s} {workers:7d} {distinct[0]:8.1f} "
                  f"{statistics.median(distinct):13.1f} {_p95(distinct):8.1f} "
                  f"{len(distinct):3d} {statistics.median(again):10.1f} {_p95(again):8.1f} "
                  f"{load:>5s}")


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = SiteLab()
    for name in ("full", "compared", "reps", "histories", "commits", "suites", "platforms"):
        p.add_argument(f"--{name}", type=int, default=getattr(defaults, name))
    p.add_argument("--distinct", type=int, default=10)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--workers", default=f"0,{default_workers()}",
                   help="comma-separated page worker counts, one site each (0: the pages "
                        "drawn in the site's process; default: 0 and rbs site's default)")
    p.add_argument("--client", choices=("process", "thread"), default="process",
                   help="where the requests come from: another process, as a browser's "
                        "(default), or a thread of the sites' process")
    p.add_argument("--sink-dir", type=Path, default=None,
                   help="keep the filled datasink here and reuse it next time")
    return p.parse_args()


LAB_FILE = "site_lab.json"


@contextlib.contextmanager
def filled_sink(lab: SiteLab, sink_dir: Path | None) -> Iterator[tuple[EmbeddedDatasink, SiteLab]]:
    """A running datasink holding ``lab`` (reused from ``sink_dir`` when it holds the same
    shape; its end time then is the kept one), stopped after."""
    with contextlib.ExitStack() as stack:
        folder = sink_dir.resolve() if sink_dir else Path(
            stack.enter_context(tempfile.TemporaryDirectory()))
        marker = folder / LAB_FILE
        kept = json.loads(marker.read_text()) if marker.is_file() else None
        shape = {k: v for k, v in dataclasses.asdict(lab).items() if k != "end_ms"}
        if kept is not None and {k: v for k, v in kept.items() if k != "end_ms"} != shape:
            raise SystemExit(f"{folder} holds another lab ({kept}); use another --sink-dir")
        folder.mkdir(parents=True, exist_ok=True)
        sink = EmbeddedDatasink(folder, port=free_port())
        started = time.monotonic()
        sink.up(timeout=600)
        stack.callback(sink.down)
        if kept is not None:
            lab = dataclasses.replace(lab, end_ms=kept["end_ms"])
            print(f"reused the datasink of {folder} (loaded in "
                  f"{time.monotonic() - started:.0f} s); {lab}")
        else:
            pushed, took = fill(sink.url, lab)
            memory = int(sink.client().info("memory")["used_memory"])
            print(f"filled {pushed} runs (want {expected_runs(lab)}) in {took:.0f} s; "
                  f"datasink {memory / 2**20:.0f} MiB; {lab}")
            if pushed != expected_runs(lab):
                raise RuntimeError("the fill pushed fewer runs than the lab holds")
            if sink_dir:
                marker.write_text(json.dumps(dataclasses.asdict(lab)))
        yield sink, lab


def main() -> int:
    args = _args()
    import waitress

    lab = SiteLab(args.full, args.compared, args.reps, args.histories, args.commits,
                  args.platforms, args.suites, end_ms=int(time.time() * 1000))
    with filled_sink(lab, args.sink_dir) as (sink, lab):
        print(f"waited {settle(sink.client()):.0f} s for the datasink's background save")
        apps = {}
        for workers in sorted({int(w) for w in args.workers.split(",")}):
            started = time.perf_counter()  # every site made (and forked) before any serves
            apps[workers] = create_app(SiteConfig(sink.client, sink.url, workers=workers))
            print(f"site with {workers} page workers created in "
                  f"{(time.perf_counter() - started) * 1000:.0f} ms")
        sites, servers = {}, []
        for workers, app in apps.items():
            port = free_port()
            servers.append(waitress.create_server(app, host="127.0.0.1", port=port,
                                                  threads=4))
            threading.Thread(target=servers[-1].run, daemon=True).start()
            sites[workers] = f"http://127.0.0.1:{port}"
        print(f"load average before: {Path('/proc/loadavg').read_text().split()[:3]}")
        browser = Browser() if args.client == "process" else None
        try:
            measure(sites, _pages(lab, args.distinct), args.repeat,
                    browser.get_ms if browser else _get_ms)
        finally:
            if browser:
                browser.close()
        print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")
        for server in servers:
            server.close()
        for app in apps.values():
            pool = page_workers(app)
            if pool is not None:
                pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
