"""What identifies the redis-server binary that served a run, as the result document records
it: what the server itself said (``INFO server``/``INFO memory``: version, git sha1, build
id, allocator) and the dependency versions its build used (the artifact's provenance,
builder/dependencies.py), so two results can say whether they ran the same binary and
name a dependency that differs ("jemalloc 5.2.1 → 5.3.0").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from redis_benchmarks_spec.common.records import known

#: "jemalloc-5.3.0", "libc", "tcmalloc-2.9.1" (INFO memory's mem_allocator)
_ALLOCATOR = re.compile(r"^([a-z]+)-([0-9][0-9A-Za-z.+_-]{0,39})$")
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+_-]{0,39}$")


@dataclass(frozen=True)
class ServerBinary:
    """The binary a run measured; "" where the server or the artifact did not say."""

    redis_version: str = ""
    redis_git_sha1: str = ""
    redis_build_id: str = ""
    mem_allocator: str = ""
    # dependency -> version: the artifact's record of deps/, completed by the allocator
    dependencies: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ServerBinary:
        data = known(cls, dict(raw))
        data["dependencies"] = valid_versions(data.get("dependencies") or {})
        return cls(**data)


def valid_versions(raw: Mapping[Any, Any]) -> dict[str, str]:
    """The entries of ``raw`` that are a dependency name and a version (untrusted input:
    an artifact manifest in the broker, an old document)."""
    return {str(k): str(v) for k, v in raw.items()
            if _NAME.match(str(k)) and _VERSION.match(str(v))}


def from_info(info: Mapping[str, Any], artifact_deps: Mapping[str, str]) -> ServerBinary:
    """The binary as ``INFO`` (all sections) describes it, with the artifact's dependency
    versions; the allocator the server reports wins over the build's record of it."""
    allocator = str(info.get("mem_allocator", ""))
    deps = valid_versions(artifact_deps)
    found = _ALLOCATOR.match(allocator)
    if found:
        deps[found.group(1)] = found.group(2)
    sha1 = str(info.get("redis_git_sha1", ""))
    if sha1.isdigit():  # redis-py reads "00000000" (a release build) as the number 0
        sha1 = sha1.zfill(8)
    return ServerBinary(
        redis_version=str(info.get("redis_version", "")), redis_git_sha1=sha1,
        redis_build_id=str(info.get("redis_build_id", "")), mem_allocator=allocator,
        dependencies=deps)


def agreed(binaries: Iterable[ServerBinary]) -> dict[str, str]:
    """The dependency versions every binary that names a dependency agrees on (a side
    whose runs used two versions of one has no single version of it)."""
    seen: dict[str, set[str]] = {}
    for binary in binaries:
        for name, version in binary.dependencies.items():
            seen.setdefault(name, set()).add(version)
    return {name: next(iter(v)) for name, v in sorted(seen.items()) if len(v) == 1}


def dependency_changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """``["jemalloc 5.2.1 → 5.3.0"]``: each dependency both sides know, at another version."""
    return [f"{name} {before[name]} → {after[name]}" for name in sorted(before)
            if name in after and before[name] != after[name]]


def change_notes(changes: Iterable[str]) -> list[str]:
    """``["dependency changed: jemalloc 5.2.1 → 5.3.0"]``: the words every surface uses
    for :func:`dependency_changes` (``rbs compare``, the PR comment, the alerts)."""
    return [f"dependency changed: {change}" for change in changes]
