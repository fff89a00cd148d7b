"""Test-suite YAML (spec version 0.4) as typed objects.

Suites from the Redis performance team load unchanged: both the mapping form of ``dbconfig``
and ``clientconfig`` and the older list-of-single-key-mappings form are accepted. Every key
that is not part of the spec is reported (a warning at load, an error under
``rbs suites lint --strict``), never silently dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from redis_benchmarks_spec.suites import yaml_safe
from redis_benchmarks_spec.suites.dbconfig import FATAL_KEYS, DbConfig, parse_dbconfig
from redis_benchmarks_spec.suites.problems import (
    ERROR,
    NAME_MISMATCH,
    UNPARSEABLE,
    WARNING,
    Problem,
    SpecError,
)
from redis_benchmarks_spec.suites.reader import SpecReader, merge_list_form
from redis_benchmarks_spec.suites.toolconfig import ToolConfig, parse_tool

# re-exported: these lived here before the key families got their own modules
__all__ = ["DbConfig", "ExporterConfig", "Suite", "ToolConfig", "load_yaml", "parse_suite"]
_merge_list_form = merge_list_form
_Reader = SpecReader

TOP_LEVEL_KEYS = {
    "version", "name", "description", "dbconfig", "tested-groups", "tested-commands",
    "redis-topologies", "build-variants", "priority", "clientconfig", "clientconfigs",
    "exporter", "required-runner-capabilities",
}
EXPORTER_KEYS = {"redistimeseries"}
RTS_KEYS = {"break_by", "timemetric", "metrics"}
CAPABILITY = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


@dataclass
class ExporterConfig:
    metrics: list[str] = field(default_factory=list)
    break_by: list[str] = field(default_factory=list)
    timemetric: str | None = None


@dataclass
class Suite:
    """One benchmark suite file."""

    path: Path
    name: str
    version: str = "0.4"
    description: str = ""
    dbconfig: DbConfig = field(default_factory=DbConfig)
    tested_groups: list[str] = field(default_factory=list)
    tested_commands: list[str] = field(default_factory=list)
    topologies: list[str] = field(default_factory=lambda: ["oss-standalone"])
    build_variants: list[str] = field(default_factory=list)
    priority: int | None = None
    clientconfigs: list[ToolConfig] = field(default_factory=list)
    exporter: ExporterConfig = field(default_factory=ExporterConfig)
    # what a runner host must offer (e.g. local-disk); hosts advertise theirs
    required_capabilities: list[str] = field(default_factory=list)
    # problems that did not stop loading (unknown keys, suspicious values)
    problems: list[Problem] = field(default_factory=list)

    @property
    def tools(self) -> list[str]:
        return sorted({c.tool for c in self.clientconfigs})

    def missing_capabilities(self, offered: set[str]) -> list[str]:
        return sorted(set(self.required_capabilities) - offered)


def _exporter(reader: SpecReader, value: Any, defaults: ExporterConfig | None) -> ExporterConfig:
    raw = reader.mapping(value, "exporter")
    reader.unknown(raw, EXPORTER_KEYS, "exporter.")
    rts = reader.mapping(raw.get("redistimeseries"), "exporter.redistimeseries")
    reader.unknown(rts, RTS_KEYS, "exporter.redistimeseries.")
    base = defaults or ExporterConfig()
    metrics = list(base.metrics)
    for m in reader.str_list(rts.get("metrics"), "exporter.redistimeseries.metrics"):
        if m not in metrics:
            metrics.append(m)
    return ExporterConfig(
        metrics=metrics,
        break_by=reader.str_list(rts.get("break_by"), "exporter.redistimeseries.break_by")
        or list(base.break_by),
        timemetric=rts.get("timemetric") or base.timemetric,
    )


def _clientconfigs(reader: SpecReader, raw: dict[str, Any]) -> list[ToolConfig]:
    has_one, has_many = "clientconfig" in raw, "clientconfigs" in raw
    if has_one == has_many:
        reader.problem("clientconfig", "exactly one of clientconfig or clientconfigs is required"
                       + (" (both given)" if has_one else " (neither given)"))
    configs: list[ToolConfig] = []
    if has_one:
        one = parse_tool(reader, raw["clientconfig"], "clientconfig")
        configs += [one] if one else []
    if has_many:
        items = raw["clientconfigs"]
        if not isinstance(items, list) or not items:
            reader.problem("clientconfigs", "expected a non-empty list of client configs")
        else:
            for i, item in enumerate(items):
                one = parse_tool(reader, item, f"clientconfigs[{i}]")
                configs += [one] if one else []
    return configs


def _capabilities(reader: SpecReader, value: Any) -> list[str]:
    key = "required-runner-capabilities"
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and CAPABILITY.match(v)
                                              for v in value):
        reader.problem(key, f"expected a list of capability names ([A-Za-z0-9._-]), "
                            f"got {value!r}")
        # fail closed: a suite whose requirements cannot be read runs nowhere
        return ["<unreadable>"]
    return sorted(set(value))


def _priority(reader: SpecReader, value: Any) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        reader.problem("priority", f"expected an integer, got {value!r}")
        return None
    return value


SAFE_NAME = re.compile(r"[A-Za-z0-9._:-]{1,200}")


def _is_fatal(problem: Problem) -> bool:
    """Errors that leave nothing sensible to run: no name, no client, a broken dataset."""
    if problem.severity != ERROR:
        return False
    key = problem.key
    if key.startswith("clientconfig"):
        return ".scalability" not in key  # a sweep setting; the client itself is fine
    return key == "name" or any(key == k or key.startswith((f"{k}.", f"{k}["))
                                for k in FATAL_KEYS)


def parse_suite(path: Path, raw: Any, defaults: ExporterConfig | None = None) -> Suite:
    """Build a :class:`Suite` from parsed YAML; raise :class:`SpecError` if it cannot run.

    Tolerant: keys the spec does not know are warnings (the suite loads and runs).
    """
    reader = SpecReader(path)
    if not isinstance(raw, dict):
        raise SpecError([Problem(path, "", "top level is not a mapping", kind=UNPARSEABLE)])
    reader.unknown(raw, TOP_LEVEL_KEYS, "")
    name = raw.get("name")
    if not name or not isinstance(name, str):
        reader.problem("name", "missing or not a string")
    elif not SAFE_NAME.fullmatch(name) or name in (".", ".."):
        # the name becomes a results folder, a stream field and a datasink key
        reader.problem("name", f"{name[:80]!r} is not a name of [A-Za-z0-9._:-] characters "
                               "(it names result folders and keys)")
    dbconfig = parse_dbconfig(reader, raw.get("dbconfig"), path.parent)
    suite = Suite(
        path=path,
        name=str(name or path.stem),
        version=str(raw.get("version", "")),
        description=str(raw.get("description") or ""),
        dbconfig=dbconfig,
        tested_groups=reader.str_list(raw.get("tested-groups"), "tested-groups"),
        tested_commands=[c.lower() for c in
                         reader.str_list(raw.get("tested-commands"), "tested-commands")],
        topologies=reader.str_list(raw.get("redis-topologies"), "redis-topologies")
        or ["oss-standalone"],
        build_variants=reader.str_list(raw.get("build-variants"), "build-variants"),
        priority=_priority(reader, raw.get("priority")),
        clientconfigs=_clientconfigs(reader, raw),
        # a persistence-only client's ack rate is no throughput: only its own metrics export
        exporter=_exporter(reader, raw.get("exporter"),
                           None if dbconfig.skip_throughput_floor else defaults),
        required_capabilities=_capabilities(reader, raw.get("required-runner-capabilities")),
    )
    if any(_is_fatal(p) for p in reader.problems) or not suite.clientconfigs:
        raise SpecError(reader.problems or [Problem(path, "clientconfig", "no client tool")])
    _late_checks(reader, suite)
    suite.problems = reader.problems
    return suite


def _late_checks(reader: SpecReader, suite: Suite) -> None:
    if not suite.version:
        reader.problem("version", "missing (spec 0.4 suites declare it)", WARNING)
    elif suite.version not in ("0.4", "0.3", "0.2", "0.1"):
        reader.problem("version", f"unexpected spec version {suite.version!r}", WARNING)
    if suite.name != suite.path.stem:
        reader.problem("name", f"{suite.name!r} differs from the file name "
                               f"{suite.path.name!r} (the suite is found by its name)",
                       WARNING, NAME_MISMATCH)


def load_yaml(path: Path) -> Any:
    """Parse one YAML file; a syntax error becomes a :class:`SpecError` naming the file."""
    try:
        return yaml_safe.load_file(path)  # bounded: suites may come with a pull request
    except yaml_safe.YamlRejected as exc:
        raise SpecError([Problem(path, exc.key, str(exc), kind=UNPARSEABLE)]) from exc
    except yaml.YAMLError as exc:
        raise SpecError([Problem(path, "", f"unparseable YAML: {_first_line(exc)}",
                                 kind=UNPARSEABLE)]) from exc
    except OSError as exc:
        raise SpecError([Problem(path, "", f"cannot read: {exc}", kind=UNPARSEABLE)]) from exc


def _first_line(exc: yaml.YAMLError) -> str:
    """PyYAML's message spans lines; the problem is shown on one."""
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    return f"{getattr(exc, 'problem', None) or str(exc).splitlines()[0]}{where}"
