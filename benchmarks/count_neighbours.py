"""Does an instruction count depend on its neighbours? (issue 40, item 3's check)

Runs one suite under callgrind (``rbs run --profilers instructions``) alone, several times
one after another, then the same suite beside N-1 others started at the same moment (each its
own rbs process, server, port and results folder; on this 2-core VM they share the cores, a
harder test than disjoint cores on a lab host). Prints each run's ``instructions_per_op`` and
the median of the runs beside neighbours relative to the median alone: item 3 asks for a
difference under 0.05 % before instruction-count suites may run side by side.

Usage: .venv/bin/python benchmarks/count_neighbours.py [--alone 3] [--neighbours 4]
       [--requests 5000] [--random-keys 1000] [--rounds 1] [--disjoint] [--keep DIR]
       (each run takes a few seconds under callgrind; --keep keeps the runs' results and
       callgrind dumps; the functions whose count moved most are printed after the figures)
       .venv/bin/python benchmarks/count_neighbours.py --same-server [--rounds 6]
       [--neighbours 4] [--disjoint] [--requests 5000] [--random-keys 1000]

``--same-server`` answers the question without the runs' own spread: separate runs differ by
~0.3 % (each server draws its dict hash seed at start, so the keyspace's chains differ), which
hides an effect of 0.05 % unless hundreds of runs are made. One server under callgrind instead
counts window after window of the same SETs on the same keyspace and seed, alternating alone
and beside N-1 other counted servers each under its own SET load (ABBA order, so a drift in the
keyspace cancels); the windows alone against each other are the floor the comparison is read
against.

Measured (2026-11-27, at load average 9-10): +0.270 %, all of it the slow log's entries a
descheduled server writes (now left out of the command path). Since, nothing else running
(docs/lab.md, "Count lanes"): 4 at once on the 2 cores -0.013 % on the same dumps, and with
``--disjoint`` (each run on its own core, as a lab host's count lanes) -0.041 % with one key,
+0.077 % with 1,000 random keys (their own spread 0.27 %). ``--same-server --rounds 40
--neighbours 4``: -0.032 % [-0.082, +0.019] with ``--disjoint``, +0.000 % [-0.054, +0.055]
sharing both cores (docs/lab.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scipy import stats

from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.telemetry.profilers.command_path import command_path_instructions
from redis_benchmarks_spec.telemetry.profilers.instructions import profile_of

RBS = str(Path(sys.executable).with_name("rbs"))
SUITE = """
version: 0.4
name: count-neighbours-set
dbconfig:
  configuration-parameters:
    save: '""'
tested-groups: [string]
tested-commands: [set]
redis-topologies: [oss-standalone]
clientconfig:
  tool: redis-benchmark
  arguments: -t set -n 1000000 {keys}-c 10 -d 100
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
"""


def start(suites: Path, out: Path, requests: int, cpu: int | None = None
          ) -> subprocess.Popen[str]:
    """One counted run; with ``cpu``, its server and client pinned to that CPU alone (a lane
    of one core: under callgrind the client waits on the server nearly all the time)."""
    argv = [RBS, "run", "--suites-dir", str(suites), "--profilers", "instructions",
            "--instructions-method", "callgrind", "--profile-requests", str(requests),
            "--results-dir", str(out), "--no-datasink"]
    if cpu is not None:
        argv += ["--cpus", str(cpu)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=os.environ.copy())


def count_of(out: Path) -> float:
    for path in sorted(out.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(data, dict) and "instructions_per_op" in data.get("metrics", {}):
            return float(data["metrics"]["instructions_per_op"])
    raise RuntimeError(f"no instructions_per_op under {out}")


def functions_of(out: Path) -> dict[str, float]:
    """Self instructions per op of each function the run's dump kept (its functions file)."""
    for path in sorted(out.rglob("instructions-functions.json")):
        return {f"{e['function']}": float(e["self_per_op"]) for e in json.loads(path.read_text())}
    raise RuntimeError(f"no instructions-functions.json under {out}")


def movers(alone: list[dict[str, float]], beside: list[dict[str, float]],
           top: int = 12) -> list[tuple[str, float, float]]:
    """The functions whose median self count per op moved most beside neighbours."""
    names = {n for run in alone + beside for n in run}
    rows = []
    for name in names:
        a = statistics.median(run.get(name, 0.0) for run in alone)
        b = statistics.median(run.get(name, 0.0) for run in beside)
        rows.append((name, a, b))
    rows.sort(key=lambda r: -abs(r[2] - r[1]))
    return rows[:top]


def wait_all(procs: list[subprocess.Popen[str]]) -> None:
    for p in procs:
        _, err = p.communicate(timeout=900)
        if p.returncode != 0:
            raise RuntimeError(f"rbs run exited {p.returncode}: {err[-2000:]}")


# -- one server, windows alone and beside neighbours ------------------------------------

def _callgrind(workdir: Path, port: int, cpu: int | None, at_start: bool
               ) -> subprocess.Popen[bytes]:
    """A redis-server under callgrind, as a counted run starts it (profilers/instructions.py
    ``server_wrapper``), in its own session so it is stopped by its own process group."""
    workdir.mkdir(parents=True, exist_ok=True)
    argv = [*(["taskset", "-c", str(cpu)] if cpu is not None else []),
            "valgrind", "--tool=callgrind", f"--instr-atstart={'yes' if at_start else 'no'}",
            "--smc-check=none", f"--vgdb-prefix={workdir / 'vgdb'}",
            f"--callgrind-out-file={workdir / 'callgrind.out.%p'}",
            f"--log-file={workdir / 'valgrind.log'}",
            "redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
            "--dir", str(workdir), "--logfile", str(workdir / "redis.log")]
    proc = subprocess.Popen(argv, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if _cli(port, "PING", check=False) == "PONG":
            return proc
        time.sleep(0.2)
    _stop(proc)
    raise RuntimeError(f"redis-server under callgrind on port {port} did not answer in 60 s")


def _cli(port: int, *args: str, check: bool = True) -> str:
    done = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True,
                          text=True, timeout=30, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"redis-cli {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def _stop(proc: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _sets(port: int, requests: int, keys: str, cpu: int | None, loop: bool = False
          ) -> subprocess.Popen[bytes]:
    argv = [*(["taskset", "-c", str(cpu)] if cpu is not None else []), "redis-benchmark",
            "-p", str(port), "-t", "set", "-n", str(requests), *keys.split(), "-c", "10",
            "-d", "100", "-q", *(["-l"] if loop else [])]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def _set_calls(port: int) -> int:
    for line in _cli(port, "INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_set:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def _window(workdir: Path, port: int, pid: int, requests: int, keys: str, cpu: int | None
            ) -> tuple[float, dict[str, float]]:
    """One counted window of ``requests`` SETs: command-path instructions per SET, and each
    function's self instructions per SET."""
    vgdb = ["vgdb", f"--vgdb-prefix={workdir / 'vgdb'}", f"--pid={pid}"]
    before_dumps = set(workdir.glob(f"callgrind.out.{pid}.*"))
    calls = _set_calls(port)
    subprocess.run([*vgdb, "instrumentation", "on"], check=True, timeout=60,
                   capture_output=True)
    _sets(port, requests, keys, cpu).wait(timeout=900)
    subprocess.run([*vgdb, "dump", "window", "-c", "instrumentation", "off"], check=True,
                   timeout=60, capture_output=True)
    ops = _set_calls(port) - calls
    dumps = sorted(set(workdir.glob(f"callgrind.out.{pid}.*")) - before_dumps,
                   key=lambda p: int(p.suffix[1:]))
    profile = profile_of(dumps[0])
    functions: dict[str, float] = {}
    for f in profile.functions:
        functions[f.name] = functions.get(f.name, 0.0) + f.self_ir / ops
    for dump in dumps:
        dump.unlink()
    return command_path_instructions([profile]) / ops, functions


def same_server(args: argparse.Namespace, keys: str) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    target_cpu = cpus[-1] if args.disjoint else None
    others = [c for c in cpus if c != target_cpu] if args.disjoint else [None]
    if args.disjoint and not others:
        raise SystemExit("--disjoint: the neighbours need a CPU besides the measured one")
    counts: dict[str, list[float]] = {"alone": [], "beside": []}
    counts_in_order: list[float] = []
    sides: list[str] = []
    functions: dict[str, list[dict[str, float]]] = {"alone": [], "beside": []}
    with (contextlib.nullcontext(args.keep) if args.keep else tempfile.TemporaryDirectory()
          ) as tmp:
        root = Path(tmp)
        port = free_port()
        target = _callgrind(root / "measured", port, target_cpu, at_start=False)
        neighbours: list[tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]] = []
        try:
            # the keyspace is whole (every key written) before the first window counts
            _sets(port, 10 * max(args.random_keys, 1), keys, target_cpu).wait(timeout=900)
            order = ["alone", "beside", "beside", "alone"] * ((args.rounds + 1) // 2)
            for i, side in enumerate(order[:2 * args.rounds]):
                if side == "beside" and not neighbours:
                    for k in range(args.neighbours - 1):
                        cpu = others[k % len(others)]
                        p = free_port()
                        server = _callgrind(root / f"neighbour-{k}", p, cpu, at_start=True)
                        neighbours.append((server, _sets(p, 10**9, keys, cpu, loop=True)))
                    time.sleep(2)  # their clients are sending before the window opens
                if side == "alone" and neighbours:
                    for server, client in neighbours:
                        _stop(client)
                        _stop(server)
                    neighbours = []
                count, funcs = _window(root / "measured", port, target.pid, args.requests,
                                       keys, target_cpu)
                counts[side].append(count)
                counts_in_order.append(count)
                sides.append(side)
                functions[side].append(funcs)
                print(f"window {i + 1:2d} {side:6s} {count:,.3f} instructions per SET",
                      flush=True)
        finally:
            for server, client in neighbours:
                _stop(client)
                _stop(server)
            _stop(target)
    alone, beside = counts["alone"], counts["beside"]
    a, b = statistics.mean(alone), statistics.mean(beside)
    where = " on the other CPUs (disjoint)" if args.disjoint else " sharing every CPU"
    print(f"one server, {len(alone)} windows alone, {len(beside)} beside "
          f"{args.neighbours - 1} counted servers{where}:")
    print(f"mean alone {a:,.3f}, beside {b:,.3f}: {100 * (b / a - 1):+.4f} %")
    # each window beside against the window alone next to it (ABBA: windows 1-2, 3-4, ...):
    # the server's own drift from window to window cancels in the mean of the pairs
    pairs = [(counts_in_order[i], counts_in_order[i + 1]) if sides[i] == "alone" else
             (counts_in_order[i + 1], counts_in_order[i]) for i in range(0, len(sides) - 1, 2)]
    ratios = [100 * (beside_count / alone_count - 1) for alone_count, beside_count in pairs]
    if len(ratios) >= 2:
        mean = statistics.mean(ratios)
        half = stats.t.ppf(0.975, len(ratios) - 1) * statistics.stdev(ratios) / len(ratios) ** .5
        print(f"paired with the window alone beside it ({len(ratios)} pairs): {mean:+.4f} % "
              f"[{mean - half:+.4f}, {mean + half:+.4f}] (95 %); "
              f"windows alone spread {100 * (max(alone) - min(alone)) / a:.4f} %")
    print("functions whose self instructions per SET moved most (mean alone -> beside):")
    for name, x, y in movers(functions["alone"], functions["beside"]):
        print(f"  {name:40s} {x:10.3f} -> {y:10.3f}  ({y - x:+.3f})")
    print("functions whose self instructions per SET vary most between windows alone (sd):")
    names = {n for run in functions["alone"] for n in run}
    varying = sorted(((statistics.stdev(run.get(n, 0.0) for run in functions["alone"]), n)
                      for n in names), reverse=True)[:8] if len(functions["alone"]) > 1 else []
    for sd, name in varying:
        print(f"  {name:40s} sd {sd:8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--alone", type=int, default=3, help="runs alone, one after another")
    parser.add_argument("--neighbours", type=int, default=4,
                        help="runs started at the same moment")
    parser.add_argument("--rounds", type=int, default=1,
                        help="times the runs side by side are started together")
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--random-keys", type=int, default=1000,
                        help="SET's -r (0: one key; the count of random keys moves from run "
                             "to run with the dict's hash seed)")
    parser.add_argument("--keep", help="a folder to keep the runs' results and dumps in")
    parser.add_argument("--disjoint", action="store_true",
                        help="each run on a core of its own (--cpus N): the runs alone on the "
                             "last CPU, the runs side by side one per CPU (at most one per CPU)")
    parser.add_argument("--same-server", action="store_true",
                        help="one server, its windows alone and beside neighbours alternating "
                             "(--rounds pairs of windows): no hash-seed spread between runs")
    args = parser.parse_args()
    if args.same_server:
        same_server(args, f"-r {args.random_keys}" if args.random_keys > 0 else "")
        return
    alone_n, neighbours, requests, keep = args.alone, args.neighbours, args.requests, args.keep
    keys = f"-r {args.random_keys} " if args.random_keys > 0 else ""
    cpus = sorted(os.sched_getaffinity(0))
    if args.disjoint and neighbours > len(cpus):
        parser.error(f"--disjoint: {neighbours} runs side by side need {neighbours} CPUs, "
                     f"this process may use {len(cpus)}")
    with (contextlib.nullcontext(keep) if keep else tempfile.TemporaryDirectory()) as tmp:
        root = Path(tmp)
        suites = root / "suites"
        suites.mkdir(parents=True, exist_ok=True)
        (suites / "count-neighbours-set.yml").write_text(SUITE.format(keys=keys))
        alone, alone_functions = [], []
        for i in range(alone_n):
            out = root / f"alone-{i}"
            wait_all([start(suites, out, requests, cpus[-1] if args.disjoint else None)])
            alone.append(count_of(out))
            alone_functions.append(functions_of(out))
        outs = []
        for r in range(args.rounds):
            batch = [root / f"side-{r * neighbours + i}" for i in range(neighbours)]
            wait_all([start(suites, out, requests, cpus[i] if args.disjoint else None)
                      for i, out in enumerate(batch)])
            outs += batch
        beside = [count_of(out) for out in outs]
        beside_functions = [functions_of(out) for out in outs]
    a, b = statistics.median(alone), statistics.median(beside)
    print("alone:  " + ", ".join(f"{v:,.2f}" for v in alone))
    print(f"beside {neighbours - 1} others{' (disjoint cores)' if args.disjoint else ''}: " + ", ".join(f"{v:,.2f}" for v in beside))
    spread = 100 * (max(alone) - min(alone)) / a
    print(f"median alone {a:,.2f}, beside {b:,.2f}: {100 * (b / a - 1):+.3f} % "
          f"(spread alone {spread:.3f} %)")
    print("functions whose self instructions per op moved most (median alone -> beside):")
    for name, x, y in movers(alone_functions, beside_functions):
        print(f"  {name:40s} {x:10.2f} -> {y:10.2f}  ({y - x:+.2f})")


if __name__ == "__main__":
    main()
