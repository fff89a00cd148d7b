"""``instructions``: instructions the server executes per operation, a metric that does not
drift with the machine's noise.

Two methods, and the result says which one produced the number:

* ``callgrind`` (any host): the server starts under ``valgrind --tool=callgrind
  --instr-atstart=no`` (cache simulation is callgrind's default off), so preload and start-up
  run uninstrumented; ``instrumentation on`` at the start of the window, ``dump`` and
  ``instrumentation off`` at its end, sent with ``vgdb`` (what ``callgrind_control`` runs),
  both end commands in one call: each call costs ~0.1 s of wall time whatever it asks. The
  client sends a fixed request count (``--profile-requests``) because the server is ~50x
  slower. The dump gives the total and per-function counts (self
  and inclusive, with source file when the binary has debug info).
* ``perf`` (hosts with hardware counters): ``perf stat -e instructions:u`` on every server
  process over the window; no slowdown, no per-function counts.

Operations are the commands the server executed in the window (INFO commandstats delta),
without the harness' own INFO/CONFIG calls unless the suite tests them.

Under callgrind ``instructions_per_op`` counts the **command path**: the inclusive
instructions of ``processCommand`` (ACL, ``call()``, the command and its reply into the
client's buffer) per operation, less the command-table lookup and the entries the slow log
writes for commands slow in wall time, plus the timer's share of rehashing (each explained
at its constant). The whole process's count varies with timing:
I/O threads spin while they wait (2 io-threads made a GET cost 118,738 instructions per op,
4 made it 266,784, against 4,456 in oss-standalone), and the event loop's iterations, epoll
calls and socket writes depend on how requests batch, which the host's load decides. The
command path does not (see docs/statistics.md for the measured pair spreads), so the same
suite reads the same in every topology. The result says which scope was counted
(``scope``); a binary without symbols falls back to the whole process.

The whole-process count is kept as ``instructions_per_op_process``: it leaves out
``serverCron`` (inclusive): the timer
runs ``hz`` times per *second*, so its instructions grow with wall time, which callgrind
stretches ~50x and the host's load varies, not with requests (it was ~5 % of a SET window
here, ~0.1 % of a real run). It is kept in the data as ``timer_instructions`` and in
``instructions_per_op_with_timer``. The incremental rehashing the cron does
(``dictRehashMilliseconds``) stays in: the commands would have done it otherwise, and how the
work splits between the two varies from run to run.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC
from redis_benchmarks_spec.common.process import tool_env
from redis_benchmarks_spec.results.profile import ProfileSummary
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
from redis_benchmarks_spec.telemetry.profilers.callgrind import (
    CallgrindFormatError,
    CallgrindProfile,
    parse_callgrind,
)
from redis_benchmarks_spec.telemetry.profilers.command_path import (
    SCOPE as SCOPE_COMMAND_PATH,
)
from redis_benchmarks_spec.telemetry.profilers.command_path import (
    command_path_functions,
    command_path_instructions,
    inclusive,
)
from redis_benchmarks_spec.telemetry.profilers.perf_stat import parse_stat_csv
from redis_benchmarks_spec.telemetry.profilers.tools import find_tool, missing

NAME = "instructions"
METRIC = INSTRUCTIONS_METRIC
#: the whole process's count per op (timer left out), kept beside the command path's
PROCESS_METRIC = "instructions_per_op_process"
PER_CALL_PREFIX = "instructions_per_call."
METHOD_CALLGRIND = "callgrind"
METHOD_PERF = "perf stat -e instructions:u"
#: the harness sends these; they are not the workload unless the suite tests them
HARNESS_COMMANDS = {"info", "config", "client", "hello", "command", "cluster"}
#: functions below this share of the window are left out of the per-function artifact
FUNCTION_FLOOR_SHARE = 1e-4
CONTROL_TIMEOUT_S = 60
#: vgdb sometimes fails with EINTR on a busy host; a call is repeated, but never once its dump
#: was written (a second dump would hold only the counts since the first)
CONTROL_ATTEMPTS = 3
#: time-driven work left out of the per-op count (see module doc) ...
TIMER_FUNCTIONS = ("serverCron",)
#: ... except the hash-table rehashing the cron does on behalf of the writes: rehashing a
#: grown table costs the same whoever does it, so it stays in the count
TIMER_KEPT_FUNCTIONS = ("dictRehashMilliseconds",)
SCOPE_PROCESS = "whole process (serverCron left out)"


def hardware_instructions_counted() -> bool:
    """True when ``perf stat -e instructions:u`` counts on this host (not in most VMs)."""
    perf = find_tool("perf")
    if perf is None:
        return False
    try:
        done = subprocess.run([perf, "stat", "-x,", "-e", "instructions:u", "true"],
                              capture_output=True, text=True, timeout=30, check=False,
                              env=tool_env())
    except (OSError, subprocess.TimeoutExpired):
        return False
    counts = parse_stat_csv(done.stderr)
    return "instructions:u" in counts.events and counts.events["instructions:u"]["value"] > 0


def workload_ops(commandstats: dict[str, dict[str, float]],
                 tested_commands: list[str]) -> dict[str, float]:
    """Calls per command in the window, the harness' own commands left out."""
    tested = {c.lower() for c in tested_commands}
    out = {}
    for cmd, stats in commandstats.items():
        base = cmd.split("|")[0].lower()
        if base in HARNESS_COMMANDS and base not in tested:
            continue
        if stats.get("calls", 0) > 0:
            out[cmd] = float(stats["calls"])
    return out


def choose_method(options: ProfilerOptions) -> str:
    if options.instructions_method == "auto":
        return METHOD_PERF if hardware_instructions_counted() else METHOD_CALLGRIND
    if options.instructions_method == "perf":
        return METHOD_PERF
    return METHOD_CALLGRIND


class Instructions:
    name = NAME

    def __init__(self, options: ProfilerOptions) -> None:
        self.options = options
        self.method = choose_method(options)
        self.target: ProfileTarget | None = None
        self.procs: dict[int, WindowProcess] = {}
        self.dumps: dict[int, Path] = {}
        self.error = ""
        self._workdir: Path | None = None

    @property
    def wraps_server(self) -> bool:
        return self.method == METHOD_CALLGRIND

    def unavailable(self) -> str:
        if self.method == METHOD_PERF:
            return missing(["perf"], "apt-get install linux-perf")
        return missing(["valgrind", "vgdb"], "apt-get install valgrind")

    def server_wrapper(self, workdir: Path) -> list[str]:
        if self.method != METHOD_CALLGRIND:
            return []
        self._workdir = workdir
        # --smc-check=none: redis-server runs no code it wrote (Lua is interpreted), so the
        # checks for self-modifying code on the heap and stack are pure cost; without them a
        # preload of 1M keys written under valgrind took 25 s instead of 32 (counted runs now
        # load it: runner/preload_snapshot.py), and every function's count is the same
        return [find_tool("valgrind") or "valgrind", "--tool=callgrind", "--instr-atstart=no",
                "--smc-check=none",
                # vgdb's FIFOs in the server's folder (removed with it), not /tmp: a server
                # stopped by SIGKILL (launcher.ServerHandle.disposable) leaves them behind
                f"--vgdb-prefix={workdir / 'vgdb'}",
                f"--callgrind-out-file={workdir / 'callgrind.out.%p'}",
                f"--log-file={workdir / 'valgrind.%p.log'}"]

    # -- the window -----------------------------------------------------------------------

    def start(self, target: ProfileTarget) -> None:
        self.target = target
        if self.method == METHOD_PERF:
            perf = find_tool("perf") or "perf"
            for pid in target.pids:
                argv = [perf, "stat", "-x,", "-e", "instructions:u", "-p", str(pid), "-o",
                        str(target.out_dir / f"instructions-{pid}.csv")]
                self.procs[pid] = WindowProcess(argv, target.out_dir / f"instructions-{pid}.log",
                                                target.registry)
            return
        try:
            for pid in target.pids:
                self._control(pid, ["instrumentation on"])
        except ProfilerError as exc:
            self.error = str(exc)

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.stop()
        if self.method != METHOD_CALLGRIND or self.target is None or self.error:
            return
        try:
            for pid in self.target.pids:
                before = set(self._dump_files(pid))
                def dumped(pid: int = pid, before: set[Path] = before) -> bool:
                    return bool(self._fresh(pid, before))
                self._control(pid, ["dump window", "instrumentation off"], done=dumped)
                self.dumps[pid] = self._new_dump(pid, before)
        except ProfilerError as exc:
            self.error = str(exc)

    def _control(self, pid: int, commands: list[str],
                 done: Callable[[], bool] | None = None) -> None:
        """``vgdb --pid=<pid> <command> [-c <command>]...``, again on a failure unless
        ``done`` says the first command took effect."""
        prefix = [f"--vgdb-prefix={self._workdir / 'vgdb'}"] if self._workdir else []
        argv = [find_tool("vgdb") or "vgdb", *prefix, f"--pid={pid}"]
        for i, command in enumerate(commands):
            argv += [*(["-c"] if i else []), *command.split()]
        problem = ""
        for _ in range(CONTROL_ATTEMPTS):
            try:
                proc = subprocess.run(argv, capture_output=True, text=True,
                                      timeout=CONTROL_TIMEOUT_S, check=False,
                                      env=tool_env())
            except (OSError, subprocess.TimeoutExpired) as exc:
                problem = str(exc)
            else:
                if proc.returncode == 0:
                    return
                problem = one_line(proc.stdout + proc.stderr)
            if done is not None and done():
                return
        raise ProfilerError(f"vgdb {' -c '.join(commands)} (pid {pid}): {problem}")

    def _dump_files(self, pid: int) -> list[Path]:
        assert self._workdir is not None
        return sorted(self._workdir.glob(f"callgrind.out.{pid}.*"))

    def _fresh(self, pid: int, before: set[Path]) -> list[Path]:
        """The dumps written since ``before``, oldest first (callgrind numbers them)."""
        fresh = [p for p in self._dump_files(pid) if p not in before]
        return sorted(fresh, key=lambda p: int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)

    def _new_dump(self, pid: int, before: set[Path]) -> Path:
        fresh = self._fresh(pid, before)
        if not fresh:
            raise ProfilerError(f"callgrind wrote no dump for pid {pid}")
        assert self.target is not None
        kept = self.target.out_dir / f"callgrind.out.{pid}"
        kept.write_bytes(fresh[0].read_bytes())  # the server dir is removed after the test
        return kept

    # -- after the window -----------------------------------------------------------------

    def summarize(self, finish: FinishInput) -> ProfileOutput:
        if self.target is None:
            return failed_output(NAME, "the measured window never started")
        if self.error:
            return failed_output(NAME, self.error)
        ops = workload_ops(finish.commandstats_delta, finish.tested_commands)
        total_ops = sum(ops.values())
        if total_ops <= 0:
            return failed_output(NAME, "no commands in the window (INFO commandstats delta)")
        try:
            if self.method == METHOD_PERF:
                return self._summarize_perf(total_ops)
            return self._summarize_callgrind(ops, finish.options.top_n)
        except (OSError, ProfilerError, CallgrindFormatError) as exc:
            return failed_output(NAME, str(exc))

    def _summarize_perf(self, total_ops: float) -> ProfileOutput:
        assert self.target is not None
        total, paths = 0.0, {}
        for pid, proc in self.procs.items():
            path = self.target.out_dir / f"instructions-{pid}.csv"
            counts = parse_stat_csv(path.read_text(errors="replace") if path.exists() else "")
            if "instructions:u" not in counts.events:
                raise ProfilerError(f"perf stat counted no instructions:u for pid {pid}: "
                                    f"{one_line(proc.log_tail())}")
            total += counts.events["instructions:u"]["value"]
            paths[f"instructions_{pid}"] = str(path)
        # perf stat counts whole processes: no function scope without sampling
        data = {"instructions": total, "ops": total_ops, METRIC: total / total_ops,
                "scope": "whole process (perf stat; serverCron and I/O threads included)"}
        return ProfileOutput(ProfileSummary(NAME, method=METHOD_PERF, data=data), paths,
                             {METRIC: total / total_ops, PROCESS_METRIC: total / total_ops})

    def _summarize_callgrind(self, ops: dict[str, float], top_n: int) -> ProfileOutput:
        assert self.target is not None
        profiles = {pid: parse_callgrind(path.read_text(errors="replace"))
                    for pid, path in self.dumps.items()}
        total = sum(p.total_ir for p in profiles.values())
        total_ops = sum(ops.values())
        if total <= 0:
            raise ProfilerError("callgrind counted no instructions in the window")
        timer = max(0, inclusive(profiles.values(), TIMER_FUNCTIONS)
                    - inclusive(profiles.values(), TIMER_KEPT_FUNCTIONS))
        process_per_op = (total - timer) / total_ops
        command_path = command_path_instructions(profiles.values())
        # the functions of the scope counted: the commands' own, not the timer's or INFO's
        functions = merged_functions(command_path_functions(profiles.values()), total_ops,
                                     command_path) if command_path > 0 else \
            merged_functions(_whole(profiles.values()), total_ops, total)
        # a binary without symbols has no processCommand: the process count is all there is
        per_op, scope = (command_path / total_ops, SCOPE_COMMAND_PATH) if command_path > 0 \
            else (process_per_op, SCOPE_PROCESS)
        metrics = {METRIC: per_op, PROCESS_METRIC: process_per_op,
                   **per_call_metrics(profiles.values(), ops)}
        functions_path = self.target.out_dir / "instructions-functions.json"
        functions_path.write_text(json.dumps(functions, indent=1))
        data: dict[str, Any] = {
            "instructions": total, "ops": total_ops, METRIC: per_op, "scope": scope,
            "command_path_instructions": command_path, PROCESS_METRIC: process_per_op,
            "timer_instructions": timer, "timer_excluded": timer > 0,
            "instructions_per_op_with_timer": total / total_ops,
            "ops_per_command": ops,
            "per_call": {k[len(PER_CALL_PREFIX):]: v for k, v in metrics.items()
                         if k.startswith(PER_CALL_PREFIX)},
            "top_functions": functions[:top_n],
            "requests": self.options.requests}
        paths = {f"callgrind_{pid}": str(path) for pid, path in self.dumps.items()}
        paths["instructions_functions"] = str(functions_path)
        return ProfileOutput(ProfileSummary(NAME, method=METHOD_CALLGRIND, data=data), paths,
                             metrics)


def _whole(profiles: Any) -> list[Any]:
    """Every function of the whole process: ``(name, file, object, self, inclusive)``."""
    return [(f.name, f.file, f.obj, f.self_ir, f.inclusive_ir)
            for p in profiles for f in p.functions]


def merged_functions(costs: Any, total_ops: float, total: float) -> list[dict[str, Any]]:
    """Per function (``(name, file, object, self, inclusive)`` costs, over every server
    process, of the scope counted): self and inclusive counts, per op, share of ``total``."""
    merged: dict[tuple[str, str | None], dict[str, Any]] = {}
    for name, file, obj, self_ir, inclusive_ir in costs:
        entry = merged.setdefault((name, obj), {
            "function": name, "file": file, "object": obj, "self": 0, "inclusive": 0})
        entry["self"] += self_ir
        entry["inclusive"] += inclusive_ir
    out = []
    for entry in sorted(merged.values(), key=lambda e: -e["self"]):
        # kept when it does a share of the work itself or through its callees: the suite
        # selection asks which functions a suite runs through (inclusive), movers use self
        if max(entry["self"], entry["inclusive"]) < FUNCTION_FLOOR_SHARE * total:
            continue
        entry["self"], entry["inclusive"] = round(entry["self"]), round(entry["inclusive"])
        entry["self_per_op"] = round(entry["self"] / total_ops, 3)
        entry["inclusive_per_op"] = round(entry["inclusive"] / total_ops, 3)
        entry["self_pct"] = round(100.0 * entry["self"] / total, 3)
        out.append(entry)
    return out


def per_call_metrics(profiles: Any, ops: dict[str, float]) -> dict[str, float]:
    """Where the window mixes commands: inclusive instructions of each command's
    implementation (``<name>Command``) per call, e.g. ``instructions_per_call.SET``."""
    if len(ops) < 2:
        return {}
    out = {}
    for cmd, calls in ops.items():
        if "|" in cmd:
            continue  # subcommands share their container's implementation function
        wanted = f"{cmd.lower()}command"
        inclusive = sum(f.inclusive_ir for p in profiles for f in p.functions
                        if f.name.lower() == wanted)
        if inclusive > 0:
            out[f"{PER_CALL_PREFIX}{cmd.upper()}"] = inclusive / calls
    return out


def profile_of(path: Path) -> CallgrindProfile:
    """A kept callgrind dump, read back (used by the A/B report)."""
    return parse_callgrind(path.read_text(errors="replace"))
