"""``perf-record``: sampled call stacks of every server process over the measured window.

``perf record --call-graph dwarf,4096 -F <freq> --max-size <cap> -p <pid,pid,...>`` starts
when the client starts and gets SIGINT when it ends, so preload and warm-up are not in the
profile. The frequency bounds the sample rate and ``--max-size`` the file.

Stacks are unwound from DWARF call-frame information by default, because distributions build
Redis without frame pointers: with ``--call-graph fp`` a profile of Debian's redis-server has
no caller above the sampled function (``processCommand`` on 0.3 % of the samples, ``aeMain``
on none); with ``dwarf`` the command path is whole (``main`` -> ``aeMain`` -> ... ->
``processCommand`` -> ``call`` -> ``setCommand``). The cost, measured on a 15 s GET/SET
window here: perf.data 0.9 MB (fp) vs 21 MB (dwarf, 4 KiB of stack per sample; 44 MB with
perf's default 8 KiB, which unwinds no deeper for Redis), post-processing 0.2 s vs 0.4 s.
``--perf-call-graph fp`` is the choice for binaries built with ``-fno-omit-frame-pointer``
and long windows (dwarf fills the 64 MB cap after about 45 s). After the window: ``perf script`` ->
folded stacks -> an SVG flame graph per test (inferno), and the top symbols by self and total
share in the result document.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from redis_benchmarks_spec.common.process import tool_env
from redis_benchmarks_spec.results.profile import ProfileSummary
from redis_benchmarks_spec.telemetry.profilers import folded
from redis_benchmarks_spec.telemetry.profilers.base import (
    FinishInput,
    ProfileOutput,
    ProfilerError,
    ProfilerOptions,
    ProfileTarget,
    WindowProcess,
    failed_output,
    one_line,
)
from redis_benchmarks_spec.telemetry.profilers.tools import find_tool, missing

NAME = "perf-record"
SCRIPT_TIMEOUT_S = 300
#: user stack copied per sample for DWARF unwinding: Redis' deepest command paths fit
DWARF_STACK_BYTES = 4096


def call_graph(mode: str) -> str:
    """``--call-graph`` value: ``dwarf`` with a bounded stack copy, or ``fp``."""
    return f"dwarf,{DWARF_STACK_BYTES}" if mode == "dwarf" else mode


class PerfRecord:
    name = NAME

    def __init__(self, options: ProfilerOptions) -> None:
        self.options = options
        self.target: ProfileTarget | None = None
        self.proc: WindowProcess | None = None
        self.error = ""

    def unavailable(self) -> str:
        return missing(["perf"], "apt-get install linux-perf") or \
            missing(["inferno-flamegraph", "inferno-collapse-perf"], folded.INFERNO_HINT)

    def server_wrapper(self, workdir: Path) -> list[str]:
        return []

    def _data_path(self) -> Path:
        assert self.target is not None
        return self.target.out_dir / "perf.data"

    def start(self, target: ProfileTarget) -> None:
        self.target = target
        perf = find_tool("perf") or "perf"
        argv = [perf, "record", "--call-graph", call_graph(self.options.perf_call_graph),
                "-F", str(self.options.perf_frequency),
                f"--max-size={self.options.perf_max_size_mb}M", "-o", str(self._data_path()),
                "-p", ",".join(str(p) for p in target.pids)]
        self.proc = WindowProcess(argv, target.out_dir / "perf-record.log", target.registry)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.exited_early():
            self.error = f"perf record exited early: {one_line(self.proc.log_tail())}"
        self.proc.stop()

    def summarize(self, finish: FinishInput) -> ProfileOutput:
        if self.proc is None or self.target is None:
            return failed_output(NAME, "perf record was never started")
        if self.error:
            return failed_output(NAME, self.error)
        data = self._data_path()
        if not data.exists() or data.stat().st_size == 0:
            return failed_output(NAME, f"no perf.data: {one_line(self.proc.log_tail())}")
        try:
            return self._fold_and_draw(data, finish.options.top_n)
        except ProfilerError as exc:
            return failed_output(NAME, str(exc))

    def _fold_and_draw(self, data: Path, top_n: int) -> ProfileOutput:
        assert self.target is not None
        out = self.target.out_dir
        folded_path, svg_path = out / "perf.folded", out / "flamegraph.svg"
        folded.collapse_perf_script(perf_script(data), folded_path)
        stacks = folded.parse_folded(folded_path.read_text(errors="replace"))
        if not stacks:
            raise ProfilerError("perf recorded no samples of the server in the window")
        folded.flamegraph(folded_path, svg_path, f"{self.target.test_name} (perf record)")
        by_self, by_total = folded.top_symbols(stacks, top_n)
        method = f"perf record --call-graph {call_graph(self.options.perf_call_graph)} " \
                 f"-F {self.options.perf_frequency}"
        summary = ProfileSummary(NAME, method=method,
                                 data={"folded_weight": sum(c for _, c in stacks),
                                       "pids": self.target.pids,
                                       "top_self": [s.to_dict() for s in by_self],
                                       "top_total": [s.to_dict() for s in by_total]})
        paths = {"perf_data": str(data), "perf_folded": str(folded_path),
                 "flamegraph_svg": str(svg_path)}
        return ProfileOutput(summary, paths)


def perf_script(data: Path) -> bytes:
    """``perf script`` of a perf.data file (stderr warnings about missing symbols ignored)."""
    perf = find_tool("perf") or "perf"
    try:
        done = subprocess.run([perf, "script", "-i", str(data)], capture_output=True,
                              timeout=SCRIPT_TIMEOUT_S, check=False, env=tool_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProfilerError(f"perf script: {exc}") from exc
    if done.returncode != 0:
        raise ProfilerError(f"perf script exited {done.returncode}: "
                            f"{one_line(done.stderr.decode(errors='replace'))}")
    return done.stdout
