"""memtier_benchmark error replies: memtier exits 0 when the server answers errors, so they
are found from its log lines and from the bytes its JSON says were received."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.loadgen.memtier_argv import option_values
from redis_benchmarks_spec.loadgen.memtier_json import RUN, SINGLE, command_sections, load_json
from redis_benchmarks_spec.loadgen.result import ServerErrorReplies

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
    for raw in option_values(argv, {"--command"}):
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
        for name, sec in command_sections(data[block], block).items():
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
    return [message for message, _ in _audit(load_json(json_path), argv)]


def detect_error_replies(json_path: Path, output: str = "",
                         argv: Sequence[str] | None = None) -> int:
    """How many error replies memtier's run shows (0 when it shows none).

    Counts error lines in memtier's ``output`` and, from ``json_path``, the error replies
    the received bytes prove (see the comment above). ``argv`` (the run's command line)
    sizes custom ``--command`` replies exactly; without it a counting command (HSET, SADD,
    ...) is assumed to have fewer than 100 members and only larger excesses are reported.
    """
    audit = _audit(load_json(json_path), argv) if json_path.exists() else []
    return count_error_lines(output) + sum(n for _, n in audit)


def check_errors(json_path: Path, output: str = "", argv: Sequence[str] | None = None) -> None:
    """Raise :class:`ServerErrorReplies` when :func:`detect_error_replies` finds any."""
    data = load_json(json_path) if json_path.exists() else None
    check_error_replies(data, output, argv, str(json_path))


def check_error_replies(data: dict[str, Any] | None, output: str,
                        argv: Sequence[str] | None, where: str) -> None:
    """:func:`check_errors` on JSON already loaded (before parsing normalises it)."""
    findings = _audit(data, argv) if data is not None else []
    count = count_error_lines(output) + sum(n for _, n in findings)
    if count:
        detail = "; ".join(m for m, _ in findings) if findings \
            else "memtier logged error replies or failures"
        raise ServerErrorReplies(count, f"{where}: {detail}")


# Inside MULTI ... EXEC every queued command answers "+QUEUED\r\n" and EXEC one array of all
# replies, so per-command reply sizes say nothing about errors there.
TRANSACTION = {"multi", "exec"}
AUTHORITY = "the server's error counters (INFO errorstats) decide; this is a hint"


def in_transaction(argv: Sequence[str] | None) -> bool:
    """Whether the run's ``--command`` templates wrap commands in MULTI/EXEC."""
    return argv is not None and any(t[0].lower() in TRANSACTION for t in _templates(argv))


def audit_notes(data: dict[str, Any] | None, output: str,
                argv: Sequence[str] | None) -> list[str]:
    """What memtier's log and reply bytes suggest about error replies, each with its reasoning.

    Never a verdict: the runner fails a test on the server's own error counters only, and
    records these as a flag where the server has no counters (Redis before 6.2).
    """
    notes = []
    lines = count_error_lines(output)
    if lines:
        notes.append(f"memtier logged {lines} error line(s) (error replies under --debug, "
                     f"or connection failures); {AUTHORITY}")
    if in_transaction(argv):
        if data is not None and _audit(data, argv):
            notes.append("reply-byte audit not applied: the commands run inside MULTI/EXEC, "
                         "where each queued command answers +QUEUED and EXEC one array, so "
                         "reply sizes cannot show error replies")
        return notes
    for message, _ in _audit(data, argv) if data is not None else []:
        notes.append(f"{message}, estimated from received bytes beyond the fixed success "
                     f"reply size; {AUTHORITY}")
    return notes
