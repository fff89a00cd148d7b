"""Common random numbers for counted runs (runner/seeds.py): the seed library pins what a
redis-server and redis-benchmark draw, so the two runs of a pair do the same work; and a real
counted A/A of the suite whose counts wandered most by seed (EXPIRE on 1K keys: the dict hash
seed sets its key compares, the command table's its propagation lookups) has pairs that
agree where unpinned pairs of the same binary spread 1.4 % (benchmarks/count_spread.py)."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
from pathlib import Path

import redis

from redis_benchmarks_spec.common.process import free_port, minimal_env, wait_for
from redis_benchmarks_spec.runner.seeds import SEEDS_NOTE, env_prefix, seed_env, shim_library
from tests.cli import rbs
from tests.conftest import redis_server_bin

SUITE = "redis-benchmark-1Kkeys-generic-expire"


def _server(library: Path, seed: str, workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([*env_prefix(library, seed), redis_server_bin(), "--port",
                             str(port), "--save", "", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=minimal_env())
    client = redis.Redis(port=port)

    def up() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False
    assert wait_for(up, 15), "redis-server did not start"
    return proc, port


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(timeout=15)


def _run_id_and_keys(library: Path, server_seed: str, client_seed: str,
                     workdir: Path) -> tuple[str, set[bytes]]:
    proc, port = _server(library, server_seed, workdir)
    try:
        subprocess.run(["redis-benchmark", "-p", str(port), "-n", "50", "-c", "1", "-r",
                        "1000000", "SET", "key:__rand_int__", "x"], check=True, timeout=60,
                       capture_output=True, env=minimal_env(seed_env(library, client_seed)))
        client = redis.Redis(port=port)
        return str(client.info("server")["run_id"]), set(client.keys("*"))
    finally:
        _stop(proc)


def test_the_library_pins_the_servers_and_the_clients_randomness(tmp_path: Path) -> None:
    library = shim_library(tmp_path / "cache")
    assert library is not None and library.exists()
    first = _run_id_and_keys(library, "pair0/node0", "pair0/client0", tmp_path / "a")
    again = _run_id_and_keys(library, "pair0/node0", "pair0/client0", tmp_path / "b")
    other = _run_id_and_keys(library, "pair1/node0", "pair1/client0", tmp_path / "c")
    # getRandomBytes (the hash seed's and the run id's source) and random() repeat
    assert first == again
    assert first[0] != other[0] and first[1] != other[1]
    assert len(first[1]) > 40  # 50 random keys of a million: the sequence, not a constant


def _counts(folder: Path) -> dict[tuple[int, str], tuple[float, list[str]]]:
    out = {}
    for path in folder.rglob("result.json"):
        doc = json.loads(path.read_text())
        if doc.get("test_name") != SUITE or doc.get("status") != "ok":
            continue
        ctx = doc["context"]
        out[(int(ctx["repetition"]), ctx["ab_side"])] = (
            float(doc["metrics"]["instructions_per_op"]), list(doc.get("notes", [])))
    return out


def test_a_counted_pair_draws_the_same_seeds_on_both_sides(tmp_path: Path) -> None:
    server = redis_server_bin()
    out = rbs("run", "--test", SUITE, "--baseline-server", server, "--comparison-server",
              server, "--profilers", "instructions", "--instructions-method", "callgrind",
              "--profile-requests", "2000", "--repetitions", "3", "--results-dir",
              str(tmp_path / "results"), "--no-datasink", "--no-noise-prior", timeout=1200)
    assert out.returncode in (0, 1), out.stdout + out.stderr
    counts = _counts(tmp_path / "results")
    assert len(counts) == 6, sorted(counts)
    assert all(SEEDS_NOTE in notes for _, notes in counts.values())
    ratios = [math.log(counts[(r, "comparison")][0] / counts[(r, "baseline")][0])
              for r in range(3)]
    # one pair's two runs do the same work: alone they agreed to 0.2 %, beside the parallel
    # test phase to 0.46 % (the order 50 connections' requests arrive in still moves a
    # write); unpinned, this suite's pairs were 0.3-2.0 % apart (-1.5 % and -2.0 % in one run)
    assert max(abs(r) for r in ratios) < 0.008, ratios
    assert statistics.stdev(ratios) < 0.006, ratios
