"""YAML from files we do not trust (suites that arrive with a pull request), loaded with
bounds, so one file can neither exhaust memory nor crash the loader of the whole catalogue.

- size: at most :data:`MAX_BYTES` are read;
- text: UTF-8 only (a UTF-8 BOM is allowed); UTF-16 and binary files are named as such;
- nesting: at most :data:`MAX_DEPTH` levels (50,000 nested brackets would otherwise hit
  Python's recursion limit in the composer);
- aliases: at most :data:`MAX_ALIASES`, and the document *as expanded* (every alias counted
  as a copy of its anchor) at most :data:`MAX_EXPANDED_NODES` nodes. An alias bomb ("billion
  laughs") composes into a small graph with shared nodes, then explodes in whatever walks it
  (merging, copying, dumping): the expanded count stops it while composing, in bounded memory;
- duplicate keys: a mapping that names a key twice is a :class:`DuplicateKey` naming the key
  (as a path, ``dbconfig.check.keyspacelen``) and both lines. PyYAML keeps the last silently,
  so a suite could say one thing to a reader and run another. Keys a merge (``<<: *anchor``)
  brings in are not duplicates: overriding them is what a merge is for.

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
    """A YAML file that is not loaded, with why; ``key`` names the key at fault, if one is."""

    key = ""


class DuplicateKey(YamlRejected):
    """A mapping names the same key twice."""

    def __init__(self, key: str, line: int, first_line: int) -> None:
        self.key, self.line, self.first_line = key, line, first_line
        super().__init__(f"duplicate key at line {line} (first at line {first_line}); "
                         "YAML would silently keep only the last")


# libyaml when PyYAML has it: the pure-Python loader is ~30x slower (the team's 551-suite
# corpus: 63 s against 2 s), and libyaml's parser is iterative, so depth cannot crash it.
_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Bounds:
    """Walks the parser's events once, before anything is composed, and stops a document
    that is too deep, has too many aliases, or expands to too many nodes.

    Sizes are counted as expanded: each node's size includes its children's, and an alias
    counts the full size of its anchor's node, so an alias bomb is caught at its first few
    levels while memory stays bounded by the (small) event stream.
    """

    def __init__(self) -> None:
        self.open: list[list] = []  # per open collection: [anchor, size so far]
        self.anchored: dict[str, int] = {}
        self.aliases = 0

    def feed(self, event: yaml.Event) -> None:
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if len(self.open) >= MAX_DEPTH:
                raise YamlRejected(f"nested deeper than {MAX_DEPTH} levels")
            self.open.append([event.anchor, 1])
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, size = self.open.pop()
            self._close(anchor, size)
        elif isinstance(event, yaml.ScalarEvent):
            self._close(event.anchor, 1)
        elif isinstance(event, yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise YamlRejected(f"more than {MAX_ALIASES} aliases")
            self._add(self.anchored.get(event.anchor or "", 1))

    def _close(self, anchor: str | None, size: int) -> None:
        if anchor is not None:
            self.anchored[anchor] = size
        self._add(size)

    def _add(self, size: int) -> None:
        if size > MAX_EXPANDED_NODES:
            raise YamlRejected(f"expands to more than {MAX_EXPANDED_NODES} nodes "
                               "(an alias bomb?)")
        if self.open:
            self.open[-1][1] += size
            if self.open[-1][1] > MAX_EXPANDED_NODES:
                raise YamlRejected(f"expands to more than {MAX_EXPANDED_NODES} nodes "
                                   "(an alias bomb?)")


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
    text = _text(data)
    bounds = _Bounds()
    for event in yaml.parse(text, Loader=_LOADER):
        bounds.feed(event)
    loader = _LOADER(text)  # a safe loader; bounds checked above
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _no_duplicates(loader, node, "", set())
        return loader.construct_document(node)
    except RecursionError as exc:  # belt and braces: MAX_DEPTH stops it first
        raise YamlRejected("nested too deeply") from exc
    finally:
        loader.dispose()


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _no_duplicates(loader: Any, node: yaml.Node, where: str, visited: set[int]) -> None:
    """Raise :class:`DuplicateKey` for the first mapping under ``node`` naming a key twice.

    Keys compare as loaded (``1`` and ``"1"`` differ, ``yes`` and ``true`` do not). A node
    shared through aliases is walked once (the bounds above keep the walk small anyway).
    """
    if id(node) in visited:
        return
    visited.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _no_duplicates(loader, item, f"{where}[{i}]", visited)
        return
    if not isinstance(node, yaml.MappingNode):
        return
    first: dict[Any, int] = {}
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = _key(loader, key_node)
        path = f"{where}.{key}" if where else str(key)
        line = key_node.start_mark.line + 1
        if key in first:
            raise DuplicateKey(path, line, first[key])
        if key is not _UNHASHABLE:
            first[key] = line
        _no_duplicates(loader, value_node, path, visited)


_UNHASHABLE = object()


def _key(loader: Any, node: yaml.Node) -> Any:
    """The key as the loader will build it (the constructor reports unhashable keys)."""
    key = loader.construct_object(node, deep=True)
    try:
        hash(key)
    except TypeError:
        return _UNHASHABLE
    return key


def load_file(path: Path) -> Any:
    """Parse the YAML file ``path`` (``OSError`` and ``yaml.YAMLError`` pass through)."""
    with path.open("rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise YamlRejected(f"is larger than {MAX_BYTES} bytes")
    return loads(data)
