"""Describe this host as a platform and measure its noise (:mod:`results.platform`).

Facts come from /proc and /sys; what the host does not expose stays None (this VM has no
cpufreq, so no governor or turbo state, and virtio NICs report no speed). The noise is
measured by two real processes, one after the other, each pinned to the same CPU and
stopped by its own pid at a timeout: the loop of :mod:`.intrinsic_loop` (the distribution)
and ``redis-cli --intrinsic-latency`` (the figure people already quote: max and average).
"""

from __future__ import annotations

import json
import os
import platform as pyplatform
import re
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from redis_benchmarks_spec.common.process import dies_with_parent, minimal_env
from redis_benchmarks_spec.common.tools import find_tool
from redis_benchmarks_spec.results.platform import (
    IntrinsicLatency,
    Nic,
    PlatformDescription,
    PlatformRecord,
)
from redis_benchmarks_spec.telemetry.host import PROC, SYS_CPU, _read, cpu_model, turbo_state

SYS_NET = Path("/sys/class/net")
SYS_NODE = Path("/sys/devices/system/node")
OS_RELEASE = Path("/etc/os-release")
DEFAULT_THRESHOLD_US = 5.0
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
# a child gets its measuring time plus this to start, report and exit before it is killed
GRACE_S = 30.0
_CLI_MAX = re.compile(r"Max latency so far: (\d+) microseconds")
_CLI_AVG = re.compile(r"avg latency: ([0-9.]+) microseconds")
_HOST = re.compile(r"[^A-Za-z0-9._:-]")


class NoiseProbeError(RuntimeError):
    """The loop child failed or timed out; the message says which and why."""


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _topology(sys_cpu: Path = SYS_CPU) -> tuple[int | None, int | None]:
    """(sockets, physical cores) from each online CPU's topology folder."""
    packages, cores = set(), set()
    for topo in sys_cpu.glob("cpu[0-9]*/topology"):
        package = _int(_read(topo / "physical_package_id"))
        core = _int(_read(topo / "core_id"))
        if package is None or core is None:
            continue
        packages.add(package)
        cores.add((package, core))
    return (len(packages) or None, len(cores) or None)


def _memory_bytes(meminfo: str | None) -> int | None:
    for line in (meminfo or "").splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            return int(parts[1]) * 1024 if len(parts) >= 2 and parts[1].isdigit() else None
    return None


def _os_name(text: str | None) -> str | None:
    for line in (text or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.partition("=")[2].strip().strip('"') or None
    return None


def _nic(path: Path) -> Nic:
    speed = _int(_read(path / "speed"))
    driver = path / "device" / "driver"
    return Nic(name=path.name, speed_mbps=speed if speed is not None and speed > 0 else None,
               driver=driver.resolve().name if driver.exists() else None,
               mtu=_int(_read(path / "mtu")))


def nics(sys_net: Path = SYS_NET) -> tuple[Nic, ...]:
    """Interfaces backed by a device (lo, bridges, veths and ifbs have none)."""
    return tuple(_nic(p) for p in sorted(sys_net.iterdir()) if (p / "device").exists()) \
        if sys_net.is_dir() else ()


def _max_mhz() -> float | None:
    khz = _int(_read(SYS_CPU / "cpu0" / "cpufreq" / "cpuinfo_max_freq"))
    return khz / 1000.0 if khz else None


def describe() -> PlatformDescription:
    """This host's facts, read now."""
    cpuinfo = _read(PROC / "cpuinfo") or ""
    flags = next((line for line in cpuinfo.splitlines() if line.startswith("flags")), None)
    sockets, cores = _topology()
    return PlatformDescription(
        cpu_model=cpu_model(cpuinfo), sockets=sockets, cores=cores, threads=os.cpu_count(),
        numa_nodes=len(list(SYS_NODE.glob("node[0-9]*"))) or None,
        memory_bytes=_memory_bytes(_read(PROC / "meminfo")), cpu_max_mhz=_max_mhz(),
        kernel=pyplatform.release() or None, os=_os_name(_read(OS_RELEASE)),
        arch=pyplatform.machine() or None,
        virtualized=None if flags is None else "hypervisor" in flags.split(),
        nics=nics(), governor=_read(SYS_CPU / "cpu0" / "cpufreq" / "scaling_governor"),
        turbo=turbo_state(), scaling_driver=_read(SYS_CPU / "cpu0" / "cpufreq" /
                                                  "scaling_driver"))


def _run_pinned(argv: Sequence[str], cpu: int | None, timeout: float) -> str:
    """stdout of ``argv`` pinned to ``cpu``; killed by its own pid at ``timeout``. The
    child imports this very package (whatever the working directory or install)."""
    env = minimal_env({"PYTHONPATH": str(PACKAGE_ROOT)})
    proc = subprocess.Popen(dies_with_parent(argv), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        if cpu is not None:
            os.sched_setaffinity(proc.pid, {cpu})
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise NoiseProbeError(f"{Path(argv[0]).name} did not finish within {timeout:g} s "
                              "(stopped)") from None
    if proc.returncode != 0:
        raise NoiseProbeError(f"{Path(argv[0]).name} exited {proc.returncode}: "
                              f"{err.strip()[-300:]}")
    return out


def loop_latency(seconds: float, cpu: int | None, threshold_us: float) -> dict[str, object]:
    """The loop child's statistics (:mod:`.intrinsic_loop`)."""
    argv = [sys.executable, "-m", "redis_benchmarks_spec.telemetry.intrinsic_loop",
            "--seconds", f"{seconds:g}", "--threshold-us", f"{threshold_us:g}"]
    out = _run_pinned(argv, cpu, seconds + GRACE_S)
    try:
        data = json.loads(out)
    except ValueError as exc:
        raise NoiseProbeError(f"intrinsic loop printed no JSON: {exc}") from None
    if not isinstance(data, dict):
        raise NoiseProbeError("intrinsic loop printed no JSON object")
    return data


def redis_cli_latency(seconds: int, cpu: int | None, redis_cli: str | None
                      ) -> tuple[float | None, float | None, str]:
    """(max µs, average µs, note) of ``redis-cli --intrinsic-latency seconds``."""
    if redis_cli is None:
        return None, None, "redis-cli not found: its figure is not available"
    try:
        out = _run_pinned([redis_cli, "--intrinsic-latency", str(seconds)], cpu,
                          seconds + GRACE_S)
    except (NoiseProbeError, OSError) as exc:
        return None, None, f"redis-cli --intrinsic-latency: {exc}"
    maxima, avg = _CLI_MAX.findall(out), _CLI_AVG.search(out)
    if not maxima or avg is None:
        return None, None, "redis-cli --intrinsic-latency printed no summary"
    return float(maxima[-1]), float(avg.group(1)), ""


def measure_noise(seconds: float, cpu: int | None = None,
                  threshold_us: float = DEFAULT_THRESHOLD_US,
                  redis_cli: str | None = None) -> IntrinsicLatency:
    """Both measurements on ``cpu`` (default: the first CPU this process may use, where
    the CPU allocator puts the first server)."""
    if cpu is None:
        cpu = min(os.sched_getaffinity(0))
    loop = loop_latency(seconds, cpu, threshold_us)
    cli_max, cli_avg, note = redis_cli_latency(max(1, round(seconds)), cpu,
                                               redis_cli or find_tool("redis-cli"))
    try:
        return IntrinsicLatency.from_dict({**loop, "cpu": cpu, "redis_cli_max_us": cli_max,
                                           "redis_cli_avg_us": cli_avg, "redis_cli_note": note})
    except ValueError as exc:
        raise NoiseProbeError(f"intrinsic loop: {exc}") from None


def host_name() -> str:
    """This host's name as a record may hold it (other characters become ``_``)."""
    return _HOST.sub("_", socket.gethostname())[:200] or "unknown"


def record(platform: str, recorded_by: str, noise: IntrinsicLatency | None = None
           ) -> PlatformRecord:
    """This host's record for ``platform`` now, with ``noise`` when it was measured."""
    return PlatformRecord(platform=platform, host=host_name(),
                          recorded_ms=int(time.time() * 1000), recorded_by=recorded_by,
                          description=describe(), noise=noise)
