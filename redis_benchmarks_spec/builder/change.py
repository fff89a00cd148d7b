"""What a pull request changes in the code, from ``git diff`` of its base and head: the files,
the functions (from the hunk headers git writes, ``@@ ... @@ <enclosing line>``, and from
function definitions the diff adds), and whether the change reaches everything (build
files, the allocator, or a header whose edit is more than declarations).

The builder computes it where the source is (its git mirror) for each pull-request request
that names its base, and stores it in the broker under :func:`change_key` (this module owns
the key); the agents read it back as untrusted input (:func:`load`) to choose the suites
that execute the changed code (``analysis.suite_selection``).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.common.safejson import loads as bounded_loads

CHANGE_TTL_S = 14 * 24 * 3600
MAX_ITEMS = 2000
MAX_BYTES = 512 * 1024
# a change to these reaches every command: the whole suite list runs
# a build file of the server: not one under tests/ (tests/modules/Makefile builds the test
# modules, never redis-server)
BUILD_FILES = re.compile(
    r"^(?!tests/)(.*/)?(Makefile|[^/]*\.mk|CMakeLists\.txt|configure[^/]*)$|^deps/")
# what a kept build tree cannot build over (builder/kept_tree.py): the bundled dependencies
# (Redis's Makefile rebuilds deps/ only when its settings change, never for new sources) and
# every file make itself reads; broader than BUILD_FILES on purpose (a test module's
# Makefile too): a needless clean build costs a minute, a wrong incremental one a result
BUILD_INPUTS = re.compile(
    r"^deps/|(^|/)(Makefile[^/]*|GNUmakefile|[^/]*\.mk|CMakeLists\.txt|[^/]*\.cmake|"
    r"configure[^/]*|mkreleasehdr\.sh)$")
ALLOCATOR = re.compile(r"(^|/)(zmalloc\.[ch]|.*jemalloc.*|.*malloc.*\.[ch])$")
CODE = re.compile(r"\.(c|h|cc|cpp|hpp)$")
_HUNK = re.compile(r"^@@ -\d+(,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")
_FILE = re.compile(r"^\+\+\+ (?:b/)?(.+)$")
_OLD_FILE = re.compile(r"^--- (?:a/)?(.+)$")
# a C function definition's first line: type words, the name, "(" (not a call or a macro)
_DEFINITION = re.compile(r"^(?:[A-Za-z_][\w \t\*]*?[\s\*])?([A-Za-z_]\w*)\s*\([^;]*$")
_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "else", "do", "case"}
# header lines that declare and do not lay out anything: a prototype, a comment, a blank
_DECLARATION = re.compile(r"^\s*($|//|/\*|\*|#\s*(include|define)\b|"
                          r"[A-Za-z_][\w \t\*]*\([^)]*\)?[^{]*;\s*$)")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,200}$")
_PATH = re.compile(r"^[A-Za-z0-9._/+-]{1,300}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass
class ChangeSet:
    """Files and functions a diff changes; ``everything`` says why it reaches all code."""

    base: str
    head: str
    files: list[str] = field(default_factory=list)
    functions: list[tuple[str, str]] = field(default_factory=list)  # (file, function)
    everything: list[str] = field(default_factory=list)
    # functions whose definition the diff adds (new in the head: no base profile has them)
    added: list[tuple[str, str]] = field(default_factory=list)

    @property
    def code_files(self) -> list[str]:
        return [f for f in self.files if CODE.search(f)]


def _function_of(context: str) -> str | None:
    found = _DEFINITION.match(context.strip())
    if found and found.group(1) not in _KEYWORDS:
        return found.group(1)
    return None


def parse_diff(text: str, base: str = "", head: str = "") -> ChangeSet:
    """The :class:`ChangeSet` of ``git diff -U0`` output."""
    change = ChangeSet(base, head)
    path, header_code = "", False
    pending: str | None = None  # the hunk's enclosing function, until its first line
    pure_add = False
    for line in text.splitlines():
        if pending is not None and line[:1] in "+-":
            # lines added at top level after a function (old count 0) are not inside it
            if not (line[0] == "+" and line[1:2].strip() and pure_add):
                _add(change, path, pending)
            pending = None
        if (m := _OLD_FILE.match(line)) and not line.startswith("--- /dev/null"):
            path = m.group(1)
            continue
        if m := _FILE.match(line):
            path = path if m.group(1) == "/dev/null" else m.group(1)
            if path not in change.files:
                change.files.append(path)
            header_code = False
            continue
        if m := _HUNK.match(line):
            name = _function_of(m.group(2))
            pure_add = m.group(1) == ",0"
            pending = name if name and CODE.search(path) and not path.endswith(".h") else None
            continue
        if line[:1] in "+-" and not line.startswith(("+++", "---")):
            body = line[1:]
            if path.endswith(".c") and line[0] == "+" and (name := _function_of(body)):
                _add(change, path, name)
                if (path, name) not in change.added:
                    change.added.append((path, name))
            if path.endswith(".h") and not header_code and not _DECLARATION.match(body):
                header_code = True
                change.everything.append(f"{path} changes more than declarations")
    for path in change.files:
        if BUILD_FILES.search(path):
            change.everything.append(f"{path} is a build file")
        elif ALLOCATOR.search(path):
            change.everything.append(f"{path} is the allocator")
    return change


def build_inputs(files: list[str]) -> list[str]:
    """The files of ``files`` that are build inputs (:data:`BUILD_INPUTS`)."""
    return [f for f in files if BUILD_INPUTS.search(f)]


def _add(change: ChangeSet, path: str, name: str) -> None:
    if (path, name) not in change.functions:
        change.functions.append((path, name))


def change_key(prefix: str, base: str, head: str) -> str:
    return f"{prefix}:change:{base}:{head}"


def save(client: redis.Redis, prefix: str, change: ChangeSet) -> None:
    client.set(change_key(prefix, change.base, change.head), json.dumps(asdict(change)),
               ex=CHANGE_TTL_S)


def base_key(prefix: str, request_id: str) -> str:
    return f"{prefix}:change-base:{request_id}"


def save_base(client: redis.Redis, prefix: str, request_id: str, base: str) -> None:
    """Which base a request's change record is of (a push's event names no base)."""
    client.set(base_key(prefix, request_id), base, ex=CHANGE_TTL_S)


def base_of(client: redis.Redis, prefix: str, request_id: str) -> str | None:
    """The base :func:`save_base` stored for the request (None: none, or not a commit)."""
    raw: Any = client.get(base_key(prefix, request_id))
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    return text if isinstance(text, str) and _SHA.match(text) else None


def load(client: redis.Redis, prefix: str, base: str, head: str) -> ChangeSet | None:
    """The stored change of ``base..head`` (validated), None when none is stored;
    ``ValueError`` when what is stored is not a change record."""
    raw: Any = client.get(change_key(prefix, base, head))
    if raw is None:
        return None
    if len(raw) > MAX_BYTES:
        raise ValueError(f"change record of {len(raw)} bytes")
    data = bounded_loads(raw, 6)
    files = [str(f) for f in data.get("files", [])][:MAX_ITEMS]
    functions = [(str(f), str(n)) for f, n in data.get("functions", [])][:MAX_ITEMS]
    if not all(_PATH.match(f) for f in files) or \
            not all(_PATH.match(f) and _NAME.match(n) for f, n in functions):
        raise ValueError("change record holds a file or function name that is not one")
    added = [(str(f), str(n)) for f, n in data.get("added", [])][:MAX_ITEMS]
    if not all((f, n) in functions for f, n in added):
        raise ValueError("change record adds a function it does not list as changed")
    return ChangeSet(base, head, files, functions,
                     [str(e)[:300] for e in data.get("everything", [])][:50], added)
