"""memtier_benchmark: command line, JSON parsing with exact numbers, error-reply detection.

What memtier 2.x writes (checked against ``../shared/samples/memtier`` and memtier's
``run_stats.cpp``), and what is done about it:

- One run: an ``ALL STATS`` block. ``--run-count N``: ``BEST RUN RESULTS`` and ``WORST RUN
  RESULTS`` (copies of single runs, chosen by the unreliable Ops/sec below; both were run #1
  in the samples), ``AGGREGATED AVERAGE RESULTS (N runs)`` and, with ``--print-all-runs``,
  ``RUN #n RESULTS``.
- In the AGGREGATED block the per-command histograms hold every run's requests (memtier
  ``hdr_add``\\ s them), but the Totals histogram is empty (memtier never adds the runs' totals
  into it: its p50 prints as 0.007 and ``Accumulated Latency`` as 0) although Totals.Count is
  the sum; its ``Average Latency`` is the mean of the runs' means, not the count-weighted mean.
  So latency is taken from the ``RUN #n`` per-command histograms when they are printed, else
  from the AGGREGATED per-command histograms, and Totals is their merge.
- ``Totals.Latency`` / ``"Average Latency"`` are truncated to whole milliseconds: the mean
  comes from the decoded histogram instead.
- ``Runtime."Total duration"``, and so every ``Ops/sec``, is off by up to a second with
  several threads (memtier averages the threads' start/end ``timeval``\\ s field by field,
  truncating): a 2 s run reported 1000, 2001 and 3002 ms while its per-second series shows two
  full seconds. For a ``--test-time`` run that was not interrupted, ops/sec is therefore
  ``Count / test_time``; otherwise memtier's own Ops/sec is used.

``ToolResult.data`` is memtier's JSON with one ``ALL STATS`` block (created for multi-run
files) holding those exact numbers, every percentile recomputed from the histogram and the
merged histograms, so the suites' ``$."ALL STATS"...`` exporter paths read exact values.
memtier's original Totals fields are kept under ``data["rbs"]["memtier ALL STATS Totals"]``,
and the password memtier echoes in ``configuration.authenticate`` is redacted.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from redis_benchmarks_spec.loadgen import histogram as hdr
from redis_benchmarks_spec.loadgen.result import (
    CommandResult,
    LatencySummary,
    ServerErrorReplies,
    ToolOutputError,
    ToolResult,
)
from redis_benchmarks_spec.suites.suite import ToolConfig

TOOL = "memtier_benchmark"
SINGLE = "ALL STATS"
AGGREGATED = re.compile(r"^AGGREGATED AVERAGE RESULTS \((\d+) runs?\)$")
RUN = re.compile(r"^RUN #(\d+) RESULTS$")
REDACTED = "<redacted>"

# ---------------------------------------------------------------------------- command line

# options the driver owns, removed from the suite's arguments (value-taking ones)
OWNED_VALUE_OPTS = {"-s", "--server", "-p", "--port", "--json-out-file", "-S", "--unix-socket",
                    "-a", "--authenticate", "--uri", "--cert", "--key", "--cacert", "--sni"}
TIME_OPTS = {"--test-time", "-n", "--requests"}
OWNED_FLAGS = {"--tls", "--tls-skip-verify", "--cluster-mode"}


@dataclass(frozen=True)
class MemtierTarget:
    """Where memtier connects, and how (auth, TLS, cluster)."""

    host: str
    port: int
    password: str | None = None
    user: str | None = None
    tls: bool = False
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_cacert: str | None = None
    tls_skip_verify: bool = False
    cluster_mode: bool = False


def _option(arg: str, names: set[str]) -> tuple[bool, bool]:
    """(is one of ``names``, carries its value inline) for ``--opt=v`` and ``-pV`` forms."""
    if arg.startswith("--"):
        name = arg.split("=", 1)[0]
        return name in names, "=" in arg
    if len(arg) > 2 and arg[:2] in names:
        return True, True
    return arg in names, False


def _strip(argv: list[str], value_opts: set[str]) -> list[str]:
    """Drop ``value_opts`` (with their values) and the owned flags from ``argv``."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        owned, inline = _option(argv[i], value_opts)
        if owned:
            i += 1 if inline else 2
            continue
        if argv[i] not in OWNED_FLAGS:
            out.append(argv[i])
        i += 1
    return out


def _target_args(target: MemtierTarget) -> list[str]:
    args = ["--server", target.host, "--port", str(target.port)]
    if target.password:
        auth = f"{target.user}:{target.password}" if target.user else target.password
        args += ["--authenticate", auth]
    if target.tls:
        args.append("--tls")
        for opt, value in (("--cert", target.tls_cert), ("--key", target.tls_key),
                           ("--cacert", target.tls_cacert)):
            if value:
                args += [opt, value]
        if target.tls_skip_verify:
            args.append("--tls-skip-verify")
    if target.cluster_mode:
        args.append("--cluster-mode")
    return args


def memtier_argv(binary: str, cfg: ToolConfig, target: MemtierTarget, json_out: Path,
                 test_time: int | None = None) -> list[str]:
    """The argv (never a shell) for one memtier run of ``cfg`` against ``target``.

    The suite's arguments are split with shlex; its server, port, auth, TLS, cluster and
    ``--json-out-file`` options are replaced by ours. ``test_time`` replaces the suite's
    ``--test-time`` or ``-n``/``--requests`` with ``--test-time N``; ``--run-count`` is kept.
    """
    owned = OWNED_VALUE_OPTS | (TIME_OPTS if test_time is not None else set())
    args = _strip(cfg.argv(), owned)
    timing = ["--test-time", str(test_time)] if test_time is not None else []
    if _run_count(args) > 1 and "--print-all-runs" not in args:
        # without it memtier writes no per-run blocks: no per-run histograms or byte counts
        args.append("--print-all-runs")
    return [binary, *_target_args(target), *args, *timing, "--json-out-file", str(json_out)]


def _option_values(argv: Sequence[str], names: set[str]) -> list[str]:
    """Values of ``names`` in ``argv`` (``--opt v``, ``--opt=v`` and ``-xV`` forms)."""
    values = []
    for i, arg in enumerate(argv):
        matched, inline = _option(arg, names)
        if matched and inline:
            values.append(arg.split("=", 1)[1] if arg.startswith("--") else arg[2:])
        elif matched and i + 1 < len(argv):
            values.append(argv[i + 1])
    return values


def _run_count(argv: Sequence[str]) -> int:
    values = [v for v in _option_values(argv, {"--run-count", "-x"}) if v.isdigit()]
    return int(values[-1]) if values else 1


def expected_duration(argv: list[str]) -> float | None:
    """Seconds the run should take (test time x run count), when the argv says."""
    times = [v for v in _option_values(argv, {"--test-time"}) if v.isdigit()]
    return float(int(times[-1]) * _run_count(argv)) if times else None


# ---------------------------------------------------------------------------- parsing


@dataclass
class _Command:
    """One command type across the blocks being combined."""

    count: int = 0
    memtier_ops: list[float] = field(default_factory=list)
    histograms: list[HdrHistogram] = field(default_factory=list)


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ToolOutputError(f"{path}: cannot read memtier JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ToolOutputError(f"{path}: memtier JSON is not an object")
    return data


def _result_blocks(data: dict[str, Any], path: Path) -> tuple[list[str], int]:
    """The blocks whose histograms are combined, and the number of runs they cover."""
    if SINGLE in data:
        return [SINGLE], 1
    runs = sorted((k for k in data if RUN.match(k)), key=_run_number)
    if runs:
        return runs, len(runs)
    for key in data:
        match = AGGREGATED.match(key)
        if match:
            return [key], int(match.group(1))
    raise ToolOutputError(f"{path}: no 'ALL STATS', 'RUN #n RESULTS' or 'AGGREGATED AVERAGE "
                          f"RESULTS' block (found: {', '.join(data) or 'nothing'})")


def _run_number(block: str) -> int:
    match = RUN.match(block)
    return int(match.group(1)) if match else 0


def _number(section: dict[str, Any], key: str, where: str) -> float:
    value = section.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolOutputError(f"{where}.{key}: expected a number, got {value!r}")
    return float(value)


def _histogram(section: dict[str, Any], where: str) -> HdrHistogram | None:
    try:
        encoded = section["Percentile Latencies"]["Histogram log format"]["Compressed Histogram"]
    except (KeyError, TypeError):
        return None
    try:
        return hdr.decode(encoded)
    except ValueError as exc:
        raise ToolOutputError(f"{where}.'Percentile Latencies'.'Histogram log format'."
                              f"'Compressed Histogram': {exc}") from exc


def _command_sections(block: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(block, dict):
        raise ToolOutputError(f"{where}: expected an object, got {type(block).__name__}")
    return {name: sec for name, sec in block.items()
            if isinstance(sec, dict) and "Count" in sec and name != "Totals"}


def _collect(data: dict[str, Any], blocks: list[str], path: Path) -> dict[str, _Command]:
    commands: dict[str, _Command] = {}
    for block in blocks:
        for name, sec in _command_sections(data[block], f"{path}: {block}").items():
            where = f"{path}: {block}.{name}"
            count = int(_number(sec, "Count", where))
            if count == 0:
                continue  # e.g. "Waits" when no WAIT was sent: nothing was measured
            acc = commands.setdefault(name, _Command())
            acc.count += count
            acc.memtier_ops.append(_number(sec, "Ops/sec", where))
            hist = _histogram(sec, where)
            if hist is not None:
                acc.histograms.append(hist)
    if not commands:
        raise ToolOutputError(f"{path}: no command with requests in {', '.join(blocks)}")
    return commands


def _run_seconds(data: dict[str, Any], blocks: list[str]) -> float | None:
    """Length of one run when it can be trusted: the configured test time, unless a run
    was interrupted (then memtier's own Ops/sec is all there is)."""
    config = data.get("configuration")
    test_time = config.get("test_time") if isinstance(config, dict) else None
    interrupted = any(str((data[b].get("Runtime") or {}).get("Interrupted", "false")).lower()
                      == "true" for b in blocks)
    if isinstance(test_time, int) and not isinstance(test_time, bool) and test_time > 0 \
            and not interrupted:
        return float(test_time)
    return None


def _ops(acc: _Command, runs: int, seconds: float | None) -> float:
    if seconds is not None:
        return acc.count / (runs * seconds)
    return sum(acc.memtier_ops) / len(acc.memtier_ops)  # per-run rates: their mean


def parse_memtier_json(path: Path) -> ToolResult:
    """Parse a ``--json-out-file`` into a :class:`ToolResult` with exact latencies.

    Raises :class:`ToolOutputError` naming the file and the field when the file cannot be
    read, has no result block, a field is not a number or a histogram cannot be decoded.
    """
    data = _load(path)
    blocks, runs = _result_blocks(data, path)
    commands = _collect(data, blocks, path)
    seconds = _run_seconds(data, blocks)
    merged = {name: hdr.merge(acc.histograms) for name, acc in commands.items()}
    per_command = {name: CommandResult(_ops(acc, runs, seconds), hdr.summarize(merged[name]))
                   for name, acc in commands.items()}
    total_hist = hdr.merge(h for h in merged.values() if h is not None)
    if total_hist is None:
        raise ToolOutputError(f"{path}: no 'Percentile Latencies'.'Histogram log format'."
                              f"'Compressed Histogram' with requests in {', '.join(blocks)}")
    totals = CommandResult(sum(c.ops_per_sec for c in per_command.values()),
                           hdr.summarize(total_hist))
    duration = runs * seconds if seconds is not None else _memtier_duration_s(data, blocks)
    result = ToolResult(tool=TOOL, totals=totals, per_command=per_command, data=data,
                        histogram=hdr.encode(total_hist), runs=runs, duration_s=duration)
    _normalise_data(data, blocks, result, {**merged, "Totals": total_hist})
    return result


def _memtier_duration_s(data: dict[str, Any], blocks: list[str]) -> float | None:
    total = sum(float((data[b].get("Runtime") or {}).get("Total duration", 0)) for b in blocks)
    return total / 1000.0 or None


# ---------------------------------------------------------------------------- normalised data


def _latency_fields(latency: LatencySummary, hist: HdrHistogram | None,
                    pct: dict[str, Any]) -> dict[str, Any]:
    """memtier's latency fields from the histogram; labels memtier printed are recomputed."""
    if hist is None or latency.count == 0:
        return {}
    labels = dict(latency.percentiles_ms)
    for label in pct:
        if re.fullmatch(r"p\d+(\.\d+)?", label) and label not in labels:
            labels[label] = hdr.percentile_ms(hist, float(label[1:]))
    return {"Latency": latency.mean_ms, "Average Latency": latency.mean_ms,
            "Min Latency": latency.min_ms, "Max Latency": latency.max_ms,
            "Percentile Latencies": {**pct, **labels, "Histogram log format": {
                "Compressed Histogram": hdr.encode(hist)}}}


def _section(base: dict[str, Any], res: CommandResult,
             hist: HdrHistogram | None) -> dict[str, Any]:
    """A memtier-shaped command section: ``base``'s fields with exact count, rate, latency."""
    section = dict(base)
    section.update({"Count": res.latency.count or section.get("Count", 0),
                    "Ops/sec": res.ops_per_sec})
    section.update(_latency_fields(res.latency, hist, section.get("Percentile Latencies") or {}))
    return section


def _base_block(data: dict[str, Any], blocks: list[str]) -> dict[str, Any]:
    """memtier's own combined block: ALL STATS, else AGGREGATED, else the first run."""
    if blocks == [SINGLE]:
        return data[SINGLE]
    return next((data[k] for k in data if AGGREGATED.match(k)), data[blocks[0]])


def _runtime(data: dict[str, Any], duration_s: float | None) -> dict[str, Any]:
    """A Runtime for a combined block: first start, last finish, the trusted duration."""
    # every block: the AGGREGATED one carries zeros, BEST/WORST the real clock times
    runtimes = [b.get("Runtime") or {} for b in data.values() if isinstance(b, dict)]
    starts = [r["Start time"] for r in runtimes if r.get("Start time")]
    finishes = [r["Finish time"] for r in runtimes if r.get("Finish time")]
    runtime: dict[str, Any] = {"Time unit": "MILLISECONDS"}
    if starts:
        runtime["Start time"] = min(starts)
    if finishes:
        runtime["Finish time"] = max(finishes)
    if duration_s is not None:
        runtime["Total duration"] = round(duration_s * 1000)
    return runtime


def _normalise_data(data: dict[str, Any], blocks: list[str], combined: ToolResult,
                    hists: dict[str, HdrHistogram | None]) -> None:
    """Make ``data[SINGLE]`` hold the exact combined result (see the module docstring)."""
    config = data.get("configuration")
    if isinstance(config, dict) and config.get("authenticate"):
        config["authenticate"] = REDACTED
    base = _base_block(data, blocks)
    memtier_totals = {k: v for k, v in (base.get("Totals") or {}).items() if k != "Time-Serie"}
    block = base if blocks == [SINGLE] else {
        "Runtime": _runtime(data, combined.duration_s)}
    for name, res in combined.per_command.items():
        block[name] = _section(base.get(name) or {}, res, hists.get(name))
    block["Totals"] = _section(base.get("Totals") or {}, combined.totals, hists["Totals"])
    block["Totals"]["Count"] = combined.totals.latency.count
    data[SINGLE] = block
    data["rbs"] = {"runs": combined.runs, "combined blocks": blocks,
                   "memtier ALL STATS Totals": memtier_totals}


# ---------------------------------------------------------------------------- error replies
#
# memtier exits 0 when the server answers errors, and (2.x) neither its JSON nor its normal
# output counts them: a reply is only logged with --debug ("handled response (first line):
# -WRONGTYPE ..."). What the JSON does carry is the bytes received per second. For a command
# whose success reply always has the same size, received bytes beyond count x size can only be
# error text; that is how the WRONGTYPE sample shows itself (3,912,680 bytes for 398,202
# 4-byte replies: 36,248 -WRONGTYPE replies). Commands with variable replies (GET, LPUSH, ...)
# cannot be audited this way; the runner's INFO total_error_replies delta covers them.

WRONGTYPE_REPLY_BYTES = len(b"-WRONGTYPE Operation against a key holding the wrong kind of "
                            b"value\r\n")
# replies are ":0\r\n" or ":1\r\n" whatever the arguments
ZERO_OR_ONE = {"setnx", "hsetnx", "sismember", "hexists", "expire", "pexpire", "expireat",
               "pexpireat", "persist", "setbit", "getbit", "pfadd", "smove", "msetnx",
               "renamenx"}
# reply is a count bounded by the number of members/fields/keys in the template:
# command -> (argument tokens before the members, tokens per member)
COUNTING = {"hset": (2, 2), "sadd": (2, 1), "srem": (2, 1), "hdel": (2, 1), "zrem": (2, 1),
            "zadd": (2, 2), "del": (1, 1), "unlink": (1, 1), "exists": (1, 1), "touch": (1, 1)}
# reply is "+OK\r\n" (or "$-1\r\n" for SET NX/XX in RESP2)
OK_REPLY = {"set", "mset", "hmset", "setex", "psetex", "lset", "ltrim", "rename"}
_ERROR_LOG = re.compile(r"handled response \(first line\): -|\berror: (authentication|HELLO|"
                        r"response parsing) failed|database selection failed|cluster slot failed")


def count_error_lines(output: str) -> int:
    """Error replies and failures memtier logged on stdout/stderr (replies only with --debug)."""
    return sum(1 for line in output.splitlines() if _ERROR_LOG.search(line))


def _templates(argv: Sequence[str]) -> list[list[str]]:
    templates = []
    for raw in _option_values(argv, {"--command"}):
        try:
            templates.append(shlex.split(raw))
        except ValueError:
            templates.append(raw.split())
    return [t for t in templates if t]


def _template_reply_bytes(tokens: list[str], resp3: bool) -> int | None:
    """Size of every success reply of one ``--command`` template, or None if it varies."""
    name, args = tokens[0].lower(), [t.lower() for t in tokens[1:]]
    if name in ZERO_OR_ONE:
        return 4
    if name in COUNTING:
        fixed, per = COUNTING[name]
        return 4 if (len(tokens) - fixed) // per < 10 else None
    if name in OK_REPLY and "get" not in args[2:]:
        return None if resp3 and {"nx", "xx"} & set(args[2:]) else 5
    return None


def _reply_model(section: str, data: dict[str, Any],
                 argv: Sequence[str] | None) -> tuple[int, int] | None:
    """(bytes of a success reply, tolerated extra bytes per reply) for one command section."""
    name = section.lower().removesuffix("s")  # memtier names sections "Hsets", "Sets"
    if argv is not None:
        templates = _templates(argv)
        if not templates:  # memtier's own SET/GET mix: SET answers +OK
            return (5, 0) if name == "set" else None
        resp3 = "resp3" in str((data.get("configuration") or {}).get("protocol", "")).lower()
        sizes = {_template_reply_bytes(t, resp3) for t in templates if t[0].lower() == name}
        size = sizes.pop() if len(sizes) == 1 else None
        return (size, 0) if size is not None else None
    if name == "set":  # memtier's own mix, or a custom SET that may carry GET
        return (5, 0) if _default_mix(data) else None
    if name in ZERO_OR_ONE:
        return 4, 0
    # unknown arity: tolerate two-digit counts rather than accuse a 10-field HSET
    return (4, 1) if name in COUNTING else None


def _default_mix(data: dict[str, Any]) -> bool:
    """memtier's own SET/GET mix writes Sets, Gets and Waits sections; --command does not."""
    return any(isinstance(b, dict) and {"Sets", "Gets", "Waits"} <= b.keys()
               for b in data.values())


def _audit_blocks(data: dict[str, Any]) -> list[str]:
    """Blocks with per-second byte counts (the AGGREGATED block has none)."""
    blocks = [k for k in data if k == SINGLE or RUN.match(k)]
    best: list[str] = [k for k in ("BEST RUN RESULTS", "WORST RUN RESULTS") if k in data]
    return blocks or best[:1]


def _section_errors(section: dict[str, Any], model: tuple[int, int]) -> tuple[int, int, int]:
    """(bytes received, replies, estimated error replies) of one section."""
    series = section.get("Time-Serie") or {}
    rx = sum(int(v.get("Bytes RX", 0)) for v in series.values() if isinstance(v, dict))
    count = sum(int(v.get("Count", 0)) for v in series.values() if isinstance(v, dict))
    size, slack = model
    excess = rx - size * count
    if not series or excess <= slack * count:
        return rx, count, 0
    return rx, count, max(1, round(excess / (WRONGTYPE_REPLY_BYTES - size)))


def _audit(data: dict[str, Any], argv: Sequence[str] | None) -> list[tuple[str, int]]:
    findings = []
    for block in _audit_blocks(data):
        for name, sec in _command_sections(data[block], block).items():
            model = _reply_model(name, data, argv)
            if model is None or sec.get("MOVED/sec") or sec.get("ASK/sec"):
                continue  # variable replies, or cluster redirections (errors by design)
            rx, count, errors = _section_errors(sec, model)
            if errors:
                message = (f"{block}.{name}: {rx:,} bytes received for {count:,} replies of "
                           f"{model[0]} bytes: about {errors:,} error replies (as -WRONGTYPE)")
                findings.append((message, errors))
    return findings


def audit_reply_bytes(json_path: Path, argv: Sequence[str] | None = None) -> list[str]:
    """One message per command section whose received bytes prove error replies."""
    return [message for message, _ in _audit(_load(json_path), argv)]


def detect_error_replies(json_path: Path, output: str = "",
                         argv: Sequence[str] | None = None) -> int:
    """How many error replies memtier's run shows (0 when it shows none).

    Counts error lines in memtier's ``output`` and, from ``json_path``, the error replies
    the received bytes prove (see the comment above). ``argv`` (the run's command line)
    sizes custom ``--command`` replies exactly; without it a counting command (HSET, SADD,
    ...) is assumed to have fewer than 100 members and only larger excesses are reported.
    """
    audit = _audit(_load(json_path), argv) if json_path.exists() else []
    return count_error_lines(output) + sum(n for _, n in audit)


def check_errors(json_path: Path, output: str = "", argv: Sequence[str] | None = None) -> None:
    """Raise :class:`ServerErrorReplies` when :func:`detect_error_replies` finds any."""
    count = detect_error_replies(json_path, output, argv)
    if count:
        audit = audit_reply_bytes(json_path, argv) if json_path.exists() else []
        detail = "; ".join(audit) if audit else "memtier logged error replies or failures"
        raise ServerErrorReplies(count, f"{json_path}: {detail}")


# ---------------------------------------------------------------------------- merge, version


def _client_sections(res: ToolResult, name: str) -> tuple[CommandResult, str | None]:
    cmd = res.totals if name == "Totals" else res.per_command[name]
    try:
        encoded = res.data[SINGLE][name]["Percentile Latencies"]["Histogram log format"][
            "Compressed Histogram"]
    except (KeyError, TypeError):
        encoded = res.histogram if name == "Totals" else None
    return cmd, encoded if cmd.latency.count else None


def _merge_one(parts: list[tuple[CommandResult, str | None]]) -> tuple[CommandResult,
                                                                       HdrHistogram | None]:
    ops = sum(c.ops_per_sec for c, _ in parts)
    if all(e is not None for _, e in parts):
        hist = hdr.merge(hdr.decode(e) for _, e in parts if e)
        return CommandResult(ops, hdr.summarize(hist)), hist
    return CommandResult(ops, _combine_without_histograms([c.latency for c, _ in parts])), None


def merge_results(results: list[ToolResult]) -> ToolResult:
    """Combine parallel clients (``clientconfigs``) into one result: rates add up, and the
    histograms of each command (and of the totals) merge, so percentiles stay exact."""
    if not results:
        raise ValueError("merge_results needs at least one result")
    if len(results) == 1:
        return results[0]
    names = sorted({n for r in results for n in r.per_command})
    merged: dict[str, tuple[CommandResult, HdrHistogram | None]] = {}
    for name in [*names, "Totals"]:
        merged[name] = _merge_one([_client_sections(r, name) for r in results
                                   if name == "Totals" or name in r.per_command])
    totals, total_hist = merged.pop("Totals")
    block: dict[str, Any] = {name: _section({}, res, hist) for name, (res, hist) in merged.items()}
    block["Totals"] = _section({}, totals, total_hist)
    starts = [r.data.get(SINGLE, {}).get("Runtime", {}).get("Start time") for r in results]
    block["Runtime"] = {"Start time": min((s for s in starts if s), default=0)}
    return ToolResult(tool=",".join(sorted({r.tool for r in results})), totals=totals,
                      per_command={n: res for n, (res, _) in merged.items()},
                      data={SINGLE: block, "clients": [r.data for r in results]},
                      histogram=hdr.encode(total_hist) if total_hist else None,
                      error_replies=sum(r.error_replies for r in results),
                      runs=max(r.runs for r in results),
                      duration_s=max((r.duration_s or 0.0) for r in results) or None)


def _combine_without_histograms(parts: list[LatencySummary]) -> LatencySummary:
    """Count-weighted mean and overall min/max; percentiles cannot be combined without
    histograms and are left out (their exporter paths are then reported missing)."""
    count = sum(p.count for p in parts)
    means = [(p.count, p.mean_ms) for p in parts if p.mean_ms is not None and p.count]
    mins = [p.min_ms for p in parts if p.min_ms is not None]
    maxs = [p.max_ms for p in parts if p.max_ms is not None]
    weight = sum(c for c, _ in means)
    return LatencySummary(count=count,
                          mean_ms=sum(c * m for c, m in means) / weight if weight else None,
                          min_ms=min(mins) if mins else None, max_ms=max(maxs) if maxs else None)


def memtier_version(binary: str, timeout: float = 10.0) -> str:
    """``memtier_benchmark --version`` -> e.g. ``"2.1.0"``.

    Returns ``"unknown (<reason>)"`` when the binary cannot be run, times out or prints no
    version: the version is recorded metadata and must not fail a run on its own.
    """
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    text = (out.stdout or out.stderr).strip()
    match = re.search(r"(\d+\.\d+\.\d+)", text)
    if match:
        return match.group(1)
    return f"unknown ({text.splitlines()[0] if text else f'exit code {out.returncode}'})"
