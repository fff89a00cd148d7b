"""Common random numbers for counted runs: both sides of a pair draw the same seeds.

A counted run's instructions per op moved by up to 1.4 % between runs of one binary
(``benchmarks/count_spread.py``, A/A, 5 pairs): each redis-server draws its dict hash seed
from ``/dev/urandom`` (which keys share a bucket, so how many keys a lookup compares:
TTL's ``dictSdsKeyCompare`` 415-444 instructions per op over ten runs) and seeds
``random()`` from the clock (the levels of a sorted set's skiplist), and redis-benchmark
seeds the ``__rand_int__`` keys from the clock (which members ZINCRBY moves). Nothing in the
command path is wrong there; the runs simply do different work. As pyperf pins
``PYTHONHASHSEED``, a counted run here starts its servers and clients with a small
``LD_PRELOAD`` library (``seed_shim.c``, compiled once with the host's C compiler) and
``RBS_SEED`` set from the pair's repetition (and the node: cluster nodes need distinct ids):
the baseline and the comparison run of pair *k* draw the same seeds, so their difference is
the code's, and pairs draw different seeds, so the estimate averages over layouts.

Only process-launched servers and local clients are pinned (a Docker image holds no copy of
the library, and a client host runs its own tools); a run says whether it was pinned
(``SEEDS_NOTE``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import platformdirs

from redis_benchmarks_spec.common.process import tool_env

log = logging.getLogger(__name__)

SOURCE = "seed_shim.c"
ENV_SEED = "RBS_SEED"
COMPILE_TIMEOUT_S = 60
SEEDS_NOTE = "seeds pinned per pair (hash seed, random(), client keys: runner/seeds.py)"


def _cache_dir() -> Path:
    return Path(platformdirs.user_cache_dir("redis-benchmarks-spec")) / "seed-shim"


def shim_library(cache: Path | None = None) -> Path | None:
    """The compiled library (built once per source version), or None when this host has no
    C compiler or it failed (the run is then unpinned, and logged)."""
    source = resources.files("redis_benchmarks_spec.runner").joinpath(SOURCE).read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    folder = cache or _cache_dir()
    library = folder / f"seed-shim-{digest}.so"
    if library.exists():
        return library
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        log.warning("no C compiler: counted runs keep their own seeds")
        return None
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / f"seed-shim-{digest}.c"
    src.write_bytes(source)
    partial = folder / f".seed-shim-{digest}.{os.getpid()}.so"
    try:
        done = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(partial),
                               str(src), "-ldl"], capture_output=True, text=True,
                              timeout=COMPILE_TIMEOUT_S, check=False, env=tool_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("the seed library did not compile (%s): counted runs keep their own seeds",
                    exc)
        return None
    if done.returncode != 0:
        log.warning("the seed library did not compile: %s", done.stderr.strip()[-300:])
        partial.unlink(missing_ok=True)
        return None
    partial.replace(library)  # atomic: concurrent runs build the same file
    return library


def seed_env(library: Path, seed: str) -> dict[str, str]:
    """The environment that pins a process's seeds to ``seed``."""
    return {"LD_PRELOAD": str(library), ENV_SEED: seed}


def env_prefix(library: Path, seed: str) -> list[str]:
    """An argv prefix that starts the command with :func:`seed_env` (for a server whose argv
    already begins with a wrapper, valgrind: the library goes to the server it runs)."""
    return ["env", *(f"{k}={v}" for k, v in seed_env(library, seed).items())]
