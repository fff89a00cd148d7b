"""``clientconfig`` / ``clientconfigs[]`` / ``dbconfig.preload_tool``: one tool invocation."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from redis_benchmarks_spec.common.words import split_words
from redis_benchmarks_spec.suites.reader import SpecReader

TOOL_KEYS = {"run_image", "tool", "arguments", "resources"}
CLIENT_KEYS = TOOL_KEYS | {"scalability"}
PRELOAD_KEYS = TOOL_KEYS | {"timeout"}
SCALABILITY_KEYS = {"mode", "max_processes"}
_MODE = re.compile(r"^([1-9][0-9]*):([1-9][0-9]*)$")


@dataclass(frozen=True)
class Scalability:
    """``clientconfig.scalability``: run the client as up to ``max_processes`` processes.

    ``mode`` is ``"clients:servers"`` (the corpus writes ``'1:1'``: one client process per
    server process). Modelled and validated here; sweeps over it are built elsewhere.
    """

    mode: str
    max_processes: int

    @property
    def ratio(self) -> tuple[int, int]:
        match = _MODE.match(self.mode)
        assert match is not None  # validated when read
        return int(match.group(1)), int(match.group(2))


@dataclass
class ToolConfig:
    """A client or preload tool invocation: which tool and its argument string."""

    tool: str
    arguments: str = ""
    run_image: str | None = None
    resources: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None  # preload_tool.timeout: this preload's own limit
    scalability: Scalability | None = None

    def argv(self) -> list[str]:
        """The suite's arguments split like a POSIX shell would, but never run by one."""
        return split_words(self.arguments)

    @property
    def cpus(self) -> float | None:
        """The CPUs the suite asks for this client (may be fractional), if it says."""
        raw = (self.resources.get("requests") or {}).get("cpus")
        try:
            return float(raw) if raw is not None else None
        except (TypeError, ValueError):
            return None


def _scalability(reader: SpecReader, value: Any, key: str) -> Scalability | None:
    raw = reader.mapping(value, key)
    if not raw:
        return None
    reader.unknown(raw, SCALABILITY_KEYS, f"{key}.")
    mode = str(raw.get("mode", ""))
    if not _MODE.match(mode):
        reader.problem(f"{key}.mode", f"expected 'clients:servers' like '1:1', got {mode!r}")
        return None
    most = reader.integer(raw.get("max_processes"), f"{key}.max_processes", minimum=1)
    if most is None:
        if "max_processes" not in raw:
            reader.problem(f"{key}.max_processes", "missing")
        return None
    return Scalability(mode, most)


def parse_tool(reader: SpecReader, value: Any, key: str, preload: bool = False
               ) -> ToolConfig | None:
    """A tool mapping; ``preload`` selects the keys a preload tool may have (``timeout``)."""
    raw = reader.mapping(value, key)
    if not raw:
        return None
    reader.unknown(raw, PRELOAD_KEYS if preload else CLIENT_KEYS, f"{key}.")
    tool = raw.get("tool")
    if not tool:
        reader.problem(f"{key}.tool", "missing")
        return None
    raw_args = raw.get("arguments") or ""
    # a YAML list of arguments is the same command line, already split
    arguments = shlex.join(str(a) for a in raw_args) if isinstance(raw_args, list) \
        else str(raw_args)
    try:
        split_words(arguments)
    except ValueError as exc:
        reader.problem(f"{key}.arguments", f"cannot split the arguments: {exc}")
        return None
    return ToolConfig(
        tool=str(tool),
        arguments=arguments,
        run_image=raw.get("run_image"),
        resources=reader.mapping(raw.get("resources"), f"{key}.resources"),
        timeout_s=reader.seconds(raw.get("timeout"), f"{key}.timeout") if preload else None,
        scalability=None if preload else _scalability(reader, raw.get("scalability"),
                                                      f"{key}.scalability"),
    )
