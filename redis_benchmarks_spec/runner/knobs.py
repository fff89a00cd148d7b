"""What-if knobs a lab host exposes, sweepable like clients (``rbs run --sweep KNOB=...``).

- ``server-cpus``: how many cores the server node gets (its cpuset: the CPU allocator pins
  it to that many cores of its own, or shares them when the host has too few, flagged
  ``shared-cores`` as always).
- ``io-threads``: the server's ``--io-threads N`` (with ``--io-threads-do-reads yes`` for
  N > 1), on N + 1 cores as the topology catalogue gives its io-threads entries.
- ``governor``: the CPU frequency governor of the CPUs this process may use, written to
  ``/sys/devices/system/cpu/cpuN/cpufreq/scaling_governor`` for the point and restored
  after it; only where the kernel exposes it, the file is writable and the governor is
  listed in ``scaling_available_governors``.

What the host cannot change is refused before anything runs, with the reason
(:func:`unavailable`), never faked.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from redis_benchmarks_spec.runner.cpus import host_cpus
from redis_benchmarks_spec.suites.topology import Topology

log = logging.getLogger(__name__)

KNOBS = ("server-cpus", "io-threads", "governor")
CPU_SYSFS = Path("/sys/devices/system/cpu")
MAX_IO_THREADS = 128  # Redis's own limit (IO_THREADS_MAX_NUM)


class KnobError(ValueError):
    """A knob value this host cannot apply, with the reason."""


def _governor_file(cpu: int) -> Path:
    return CPU_SYSFS / f"cpu{cpu}" / "cpufreq" / "scaling_governor"


def governor_unavailable(value: str, cpus: list[int] | None = None) -> str:
    """Why the governor cannot be set to ``value`` here ('' when it can)."""
    for cpu in cpus if cpus is not None else host_cpus():
        path = _governor_file(cpu)
        if not path.parent.is_dir():
            return (f"{path.parent} does not exist: this kernel exposes no CPU frequency "
                    f"scaling for cpu{cpu} (usual in a virtual machine, whose host owns "
                    f"the frequency)")
        if not os.access(path, os.W_OK):
            return f"{path} is not writable by this user (the governor needs root)"
        try:
            offered = (path.parent / "scaling_available_governors").read_text().split()
        except OSError as exc:
            return f"cannot read the governors cpu{cpu} offers: {exc}"
        if value not in offered:
            return f"cpu{cpu} offers the governors {', '.join(offered)}, not {value!r}"
    return ""


def unavailable(knob: str, value: int | str) -> str:
    """Why ``knob=value`` cannot be applied on this host ('' when it can)."""
    if knob == "governor":
        return governor_unavailable(str(value))
    number = int(value)
    if knob == "server-cpus" and number > len(host_cpus()):
        return (f"this process may use {len(host_cpus())} CPU(s) (os.sched_getaffinity), "
                f"fewer than {number}")
    if knob == "io-threads" and number > MAX_IO_THREADS:
        return f"Redis accepts at most {MAX_IO_THREADS} io-threads"
    return ""


def io_threads_args(threads: int) -> list[str]:
    """Server arguments for ``threads`` I/O threads (1: the main thread only)."""
    if threads <= 1:
        return ["--io-threads", "1"]
    return ["--io-threads", str(threads), "--io-threads-do-reads", "yes"]


def with_node_cpus(catalogue: dict[str, Topology], cpus: int) -> dict[str, Topology]:
    """The catalogue with every entry's nodes given ``cpus`` cores each."""
    return {name: replace(topo, cpus_override=cpus) for name, topo in catalogue.items()}


@contextlib.contextmanager
def governor_set(value: str) -> Iterator[dict[int, str]]:
    """Every usable CPU on governor ``value`` for the block; the previous ones restored
    after it (even when the block fails). Yields {cpu: previous governor}."""
    reason = governor_unavailable(value)
    if reason:
        raise KnobError(reason)
    previous: dict[int, str] = {}
    try:
        for cpu in host_cpus():
            path = _governor_file(cpu)
            previous[cpu] = path.read_text().strip()
            path.write_text(value)
        yield previous
    finally:
        for cpu, old in previous.items():
            try:
                _governor_file(cpu).write_text(old)
            except OSError as exc:
                log.warning("could not restore cpu%d's governor to %s: %s", cpu, old, exc)
