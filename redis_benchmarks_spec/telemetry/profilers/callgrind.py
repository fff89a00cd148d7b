"""Reader of callgrind output files: instructions per function, self and inclusive.

The format is documented in the Valgrind manual ("Callgrind Format Specification"). What we
need from it: ``fn=``/``fl=``/``ob=`` set the current function, its file and object (names
may be compressed as ``(id) name`` once and ``(id)`` afterwards, one id space per kind);
cost lines (``<position...> <Ir> ...``) add to the current function's self cost, except the
line after ``calls=``, which is the inclusive cost of that call and belongs to the caller's
inclusive cost. ``summary:``/``totals:`` give the total. We read the documented file rather
than the text ``callgrind_annotate`` prints for people, whose layout changes between
Valgrind releases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

UNKNOWN_FILE = "???"
_NAME = re.compile(r"^\((\d+)\)(?:\s+(.*))?$")
_SPEC_KIND = {"fn": "fn", "cfn": "fn", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl",
              "cfl": "fl", "ob": "ob", "cob": "ob"}


class CallgrindFormatError(ValueError):
    """The file is not callgrind output we can read; the message says where."""


@dataclass
class FunctionCost:
    """Instructions of one function (by name and object) over the profiled window."""

    name: str
    file: str | None
    obj: str | None
    self_ir: int = 0
    called_ir: int = 0  # inclusive cost of the calls it made to other functions
    # inclusive cost of its calls per callee name (the call edges; recursion left out)
    calls: dict[str, int] = field(default_factory=dict)

    @property
    def inclusive_ir(self) -> int:
        return self.self_ir + self.called_ir


@dataclass
class CallgrindProfile:
    """Total instructions and per-function costs of one callgrind dump."""

    total_ir: int
    functions: list[FunctionCost] = field(default_factory=list)
    command: str = ""

    def by_name(self, name: str) -> list[FunctionCost]:
        return [f for f in self.functions if f.name == name]

    def edge(self, caller: str, callees: tuple[str, ...]) -> int:
        """Inclusive instructions of the calls ``caller`` made to any of ``callees``."""
        return sum(f.calls.get(c, 0) for f in self.by_name(caller) for c in callees)


@dataclass
class _State:
    names: dict[str, dict[str, str]] = field(
        default_factory=lambda: {"fn": {}, "fl": {}, "ob": {}})
    ob: str | None = None
    fl: str | None = None
    current: FunctionCost | None = None
    callee: str | None = None
    call_pending: bool = False
    ir_column: int = 0
    positions: int = 1
    functions: dict[tuple[str, str | None], FunctionCost] = field(default_factory=dict)


def _resolve(state: _State, kind: str, value: str, line_no: int) -> str:
    match = _NAME.match(value.strip())
    if not match:
        return value.strip()
    ident, name = match.group(1), match.group(2)
    table = state.names[kind]
    if name is not None:
        table[ident] = name
        return name
    if ident not in table:
        raise CallgrindFormatError(f"line {line_no}: {kind} id ({ident}) used before defined")
    return table[ident]


def _enter_function(state: _State, name: str) -> None:
    key = (name, state.ob)
    func = state.functions.get(key)
    if func is None:
        file = None if state.fl in (None, UNKNOWN_FILE) else state.fl
        func = FunctionCost(name, file, state.ob)
        state.functions[key] = func
    state.current = func


def _cost(state: _State, line: str, line_no: int) -> None:
    parts = line.split()
    costs = parts[state.positions:]
    value = costs[state.ir_column] if len(costs) > state.ir_column else "0"
    try:
        ir = int(value)
    except ValueError:
        raise CallgrindFormatError(f"line {line_no}: bad cost {value!r}") from None
    if state.current is None:
        raise CallgrindFormatError(f"line {line_no}: cost before any fn=")
    if state.call_pending:
        if state.callee != state.current.name:  # recursion would count itself twice
            state.current.called_ir += ir
            callee = state.callee or "?"
            state.current.calls[callee] = state.current.calls.get(callee, 0) + ir
        state.call_pending = False
    else:
        state.current.self_ir += ir


def _header(state: _State, key: str, value: str) -> int | None:
    """Handle a header line; returns the total when it is summary/totals."""
    if key == "positions":
        state.positions = len(value.split())
    elif key == "events":
        events = value.split()
        if "Ir" not in events:
            raise CallgrindFormatError(f"no Ir event (events: {value})")
        state.ir_column = events.index("Ir")
    elif key in ("summary", "totals"):
        return int(value.split()[state.ir_column])
    return None


def _spec(state: _State, key: str, value: str, line_no: int) -> None:
    name = _resolve(state, _SPEC_KIND[key], value, line_no)
    if key == "ob":
        state.ob = name
    elif key == "fl":
        state.fl = name
    elif key == "fn":
        _enter_function(state, name)
    elif key == "cfn":
        state.callee = name


def parse_callgrind(text: str) -> CallgrindProfile:
    """Read one callgrind output file (any part of a multi-dump run)."""
    state, total, command = _State(), None, ""
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line[0].isdigit() or line[0] in "+-*":
            _cost(state, line, line_no)
            continue
        key, sep, value = line.partition("=")
        if sep and key in _SPEC_KIND:
            _spec(state, key, value, line_no)
        elif sep and key == "calls":
            state.call_pending = True
        elif sep and key in ("jump", "jcnd"):
            continue
        else:
            key, _, value = line.partition(":")
            if key == "cmd":
                command = value.strip()
            found = _header(state, key.strip(), value.strip())
            total = found if found is not None else total
    functions = sorted(state.functions.values(), key=lambda f: -f.self_ir)
    if total is None:
        total = sum(f.self_ir for f in functions)
    return CallgrindProfile(total, functions, command)
