"""YAML from files we do not trust (suites that arrive with a pull request), loaded with
bounds, so one file can neither exhaust memory nor crash the loader of the whole catalogue.

- size: at most :data:`MAX_BYTES` are read;
- text: UTF-8 only (a UTF-8 BOM is allowed); UTF-16 and binary files are named as such;
- nesting: at most :data:`MAX_DEPTH` levels (50,000 nested brackets would otherwise hit
  Python's recursion limit in the composer);
- aliases: at most :data:`MAX_ALIASES`, and the document *as expanded* (every alias counted
  as a copy of its anchor) at most :data:`MAX_EXPANDED_NODES` nodes. An alias bomb ("billion
  laughs") composes into a small graph with shared nodes, then explodes in whatever walks it
  (merging, copying, dumping): the expanded count stops it while composing, in bounded memory.

Every failure is a :class:`YamlRejected` (a ``ValueError``) with a one-line reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 16 * 1024 * 1024  # the largest suite of the 0.3.47 corpus is 6.9 MB (init commands)
MAX_DEPTH = 64
MAX_ALIASES = 1000
MAX_EXPANDED_NODES = 200_000


class YamlRejected(ValueError):
    """A YAML file that is not loaded, with why."""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts depth, aliases and the expanded size while composing."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise YamlRejected(f"more than {MAX_ALIASES} aliases")
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YamlRejected(f"nested deeper than {MAX_DEPTH} levels")
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        self._count(node)
        return node

    def _count(self, node: yaml.Node | None) -> None:
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        size = 1 + sum(self._sizes.get(id(c), 1) for c in children)
        if size > MAX_EXPANDED_NODES:
            raise YamlRejected(f"expands to more than {MAX_EXPANDED_NODES} nodes "
                               "(an alias bomb?)")
        self._sizes[id(node)] = size


def _text(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or (len(data) > 1 and b"\x00" in data[:2]):
        raise YamlRejected("is UTF-16 (suites must be UTF-8 text)")
    if b"\x00" in data:
        raise YamlRejected("is binary (contains NUL bytes), not YAML text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise YamlRejected(f"is not UTF-8 (byte {exc.start}: {data[exc.start:exc.start + 1]!r})") \
            from exc


def loads(data: bytes) -> Any:
    """Parse YAML ``data`` within the bounds of this module."""
    if len(data) > MAX_BYTES:
        raise YamlRejected(f"is {len(data)} bytes (limit {MAX_BYTES})")
    loader = _BoundedLoader(_text(data))
    try:
        return loader.get_single_data()
    except RecursionError as exc:  # belt and braces: MAX_DEPTH stops it first
        raise YamlRejected("nested too deeply") from exc
    finally:
        loader.dispose()


def load_file(path: Path) -> Any:
    """Parse the YAML file ``path`` (``OSError`` and ``yaml.YAMLError`` pass through)."""
    with path.open("rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise YamlRejected(f"is larger than {MAX_BYTES} bytes")
    return loads(data)
