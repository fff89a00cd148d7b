"""Host context of a test: CPU model, kernel, frequency policy, and contention in the window.

Everything is read from /proc and /sys; a field the host does not expose stays None. Steal
time (a hypervisor giving our vCPU to someone else) and the whole host's busy share are
measured over the measured window from two reads of /proc/stat.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.results.profile import HostContext

PROC = Path("/proc")
SYS_CPU = Path("/sys/devices/system/cpu")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cpu_model(cpuinfo: str | None = None) -> str | None:
    """The first ``model name`` of /proc/cpuinfo."""
    text = cpuinfo if cpuinfo is not None else _read(PROC / "cpuinfo")
    for line in (text or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model Name"):
            return value.strip()
    return None


def turbo_state(sys_cpu: Path = SYS_CPU) -> str | None:
    """"on"/"off" from intel_pstate's no_turbo or cpufreq's boost; None when neither exists."""
    no_turbo = _read(sys_cpu / "intel_pstate" / "no_turbo")
    if no_turbo in ("0", "1"):
        return "off" if no_turbo == "1" else "on"
    boost = _read(sys_cpu / "cpufreq" / "boost")
    if boost in ("0", "1"):
        return "on" if boost == "1" else "off"
    return None


@dataclass(frozen=True)
class CpuTimes:
    """The aggregate ``cpu`` line of /proc/stat, in clock ticks."""

    busy: int
    steal: int
    total: int

    @classmethod
    def parse(cls, stat: str) -> CpuTimes:
        for line in stat.splitlines():
            if line.startswith("cpu "):
                values = [int(v) for v in line.split()[1:]]
                # user nice system idle iowait irq softirq steal [guest guest_nice]
                idle = values[3] + (values[4] if len(values) > 4 else 0)
                steal = values[7] if len(values) > 7 else 0
                total = sum(values[:8])
                return cls(busy=total - idle - steal, steal=steal, total=total)
        raise ValueError("no aggregate cpu line in /proc/stat")

    @classmethod
    def now(cls) -> CpuTimes | None:
        text = _read(PROC / "stat")
        try:
            return cls.parse(text) if text else None
        except (ValueError, IndexError):
            return None


def _load_1m() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


class HostWindow:
    """Static host facts plus load and steal between :meth:`start` and :meth:`stop`."""

    def __init__(self) -> None:
        self.context = HostContext()
        self._start: CpuTimes | None = None

    def start(self) -> None:
        ctx = self.context
        ctx.cpu_model = cpu_model()
        ctx.cpus_online = os.cpu_count()
        ctx.kernel = platform.release() or None
        ctx.governor = _read(SYS_CPU / "cpu0" / "cpufreq" / "scaling_governor")
        ctx.turbo = turbo_state()
        ctx.load_1m_start = _load_1m()
        self._start = CpuTimes.now()

    def stop(self) -> HostContext:
        ctx = self.context
        ctx.load_1m_end = _load_1m()
        end = CpuTimes.now()
        if self._start is not None and end is not None and end.total > self._start.total:
            span = end.total - self._start.total
            ctx.steal_pct = round(100.0 * (end.steal - self._start.steal) / span, 2)
            ctx.busy_pct = round(100.0 * (end.busy - self._start.busy) / span, 2)
        return ctx
