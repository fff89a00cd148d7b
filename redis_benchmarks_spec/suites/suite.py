"""Test-suite YAML (spec version 0.4) as typed objects.

Suites from the Redis performance team load unchanged: both the mapping form of ``dbconfig``
and ``clientconfig`` and the older list-of-single-key-mappings form are accepted. Every key
that is not part of the spec is reported as a problem, never silently dropped.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from redis_benchmarks_spec.suites.problems import ERROR, WARNING, Problem, SpecError

TOP_LEVEL_KEYS = {
    "version", "name", "description", "dbconfig", "tested-groups", "tested-commands",
    "redis-topologies", "build-variants", "priority", "clientconfig", "clientconfigs",
    "exporter",
}
DBCONFIG_KEYS = {
    "configuration-parameters", "check", "preload_tool", "init_commands", "dataset_name",
    "dataset_description", "resources",
}
TOOL_KEYS = {"run_image", "tool", "arguments", "resources"}
CHECK_KEYS = {"keyspacelen"}
EXPORTER_KEYS = {"redistimeseries"}
RTS_KEYS = {"break_by", "timemetric", "metrics"}


@dataclass
class ToolConfig:
    """A client or preload tool invocation: which tool and its argument string."""

    tool: str
    arguments: str = ""
    run_image: str | None = None
    resources: dict[str, Any] = field(default_factory=dict)

    def argv(self) -> list[str]:
        """The suite's arguments split like a POSIX shell would, but never run by one."""
        return shlex.split(self.arguments)

    @property
    def cpus(self) -> float | None:
        """The CPUs the suite asks for this client (may be fractional), if it says."""
        raw = (self.resources.get("requests") or {}).get("cpus")
        try:
            return float(raw) if raw is not None else None
        except (TypeError, ValueError):
            return None


@dataclass
class DbConfig:
    configuration_parameters: dict[str, str] = field(default_factory=dict)
    keyspacelen: int | None = None
    preload_tool: ToolConfig | None = None
    init_commands: list[list[str]] = field(default_factory=list)
    dataset_name: str | None = None
    dataset_description: str | None = None
    resources: dict[str, Any] = field(default_factory=dict)

    def server_args(self) -> list[str]:
        """``configuration-parameters`` as redis-server arguments (``--save ""`` style)."""
        args: list[str] = []
        for key, value in self.configuration_parameters.items():
            args.append(f"--{key}")
            args.extend(shlex.split(str(value)) if str(value).strip() else [""])
        return args


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
    # problems that did not stop loading (unknown keys, suspicious values)
    problems: list[Problem] = field(default_factory=list)

    @property
    def tools(self) -> list[str]:
        return sorted({c.tool for c in self.clientconfigs})


def _merge_list_form(value: Any) -> Any:
    """Older suites write mappings as lists of one-key mappings; merge those into one."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        merged: dict[str, Any] = {}
        for item in value:
            merged.update(item)
        return merged
    return value


class _Reader:
    """Collects problems for one file while its fields are read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[Problem] = []

    def problem(self, key: str, message: str, severity: str = ERROR) -> None:
        self.problems.append(Problem(self.path, key, message, severity))

    def unknown(self, mapping: dict[str, Any], allowed: set[str], where: str) -> None:
        for key in mapping:
            if key not in allowed:
                self.problem(f"{where}{key}", "unknown key (not part of spec 0.4)")

    def mapping(self, value: Any, key: str) -> dict[str, Any]:
        value = _merge_list_form(value)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(key, f"expected a mapping, got {type(value).__name__}")
            return {}
        return value

    def str_list(self, value: Any, key: str) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list):
            self.problem(key, f"expected a list, got {type(value).__name__}")
            return []
        return [str(v) for v in value]

    def tool(self, value: Any, key: str) -> ToolConfig | None:
        raw = self.mapping(value, key)
        if not raw:
            return None
        self.unknown(raw, TOOL_KEYS, f"{key}.")
        tool = raw.get("tool")
        if not tool:
            self.problem(f"{key}.tool", "missing")
            return None
        raw_args = raw.get("arguments") or ""
        # a YAML list of arguments is the same command line, already split
        arguments = shlex.join(str(a) for a in raw_args) if isinstance(raw_args, list) \
            else str(raw_args)
        try:
            shlex.split(arguments)
        except ValueError as exc:
            self.problem(f"{key}.arguments", f"cannot split the arguments: {exc}")
            return None
        return ToolConfig(
            tool=str(tool),
            arguments=arguments,
            run_image=raw.get("run_image"),
            resources=self.mapping(raw.get("resources"), f"{key}.resources"),
        )


def _init_commands(reader: _Reader, value: Any) -> list[list[str]]:
    commands: list[list[str]] = []
    for i, item in enumerate(reader.str_list(value, "dbconfig.init_commands")
                             if not isinstance(value, list) else value):
        key = f"dbconfig.init_commands[{i}]"
        if isinstance(item, list):
            commands.append([str(v) for v in item])
        elif isinstance(item, str):
            try:
                commands.append(shlex.split(item))
            except ValueError as exc:
                reader.problem(key, f"cannot split command: {exc}")
        else:
            reader.problem(key, f"expected a string or list, got {type(item).__name__}")
    return commands


def _dbconfig(reader: _Reader, value: Any) -> DbConfig:
    raw = reader.mapping(value, "dbconfig")
    reader.unknown(raw, DBCONFIG_KEYS, "dbconfig.")
    check = reader.mapping(raw.get("check"), "dbconfig.check")
    reader.unknown(check, CHECK_KEYS, "dbconfig.check.")
    keyspacelen = check.get("keyspacelen")
    if keyspacelen is not None and (not isinstance(keyspacelen, int)
                                    or isinstance(keyspacelen, bool)):
        reader.problem("dbconfig.check.keyspacelen", f"expected an integer, got {keyspacelen!r}")
        keyspacelen = None
    params = reader.mapping(raw.get("configuration-parameters"),
                            "dbconfig.configuration-parameters")
    return DbConfig(
        configuration_parameters={str(k): "" if v is None else str(v) for k, v in params.items()},
        keyspacelen=keyspacelen,
        preload_tool=reader.tool(raw.get("preload_tool"), "dbconfig.preload_tool"),
        init_commands=_init_commands(reader, raw.get("init_commands")),
        dataset_name=raw.get("dataset_name"),
        dataset_description=raw.get("dataset_description"),
        resources=reader.mapping(raw.get("resources"), "dbconfig.resources"),
    )


def _exporter(reader: _Reader, value: Any, defaults: ExporterConfig | None) -> ExporterConfig:
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


def _clientconfigs(reader: _Reader, raw: dict[str, Any]) -> list[ToolConfig]:
    has_one, has_many = "clientconfig" in raw, "clientconfigs" in raw
    if has_one == has_many:
        reader.problem("clientconfig", "exactly one of clientconfig or clientconfigs is required"
                       + (" (both given)" if has_one else " (neither given)"))
    configs: list[ToolConfig] = []
    if has_one:
        one = reader.tool(raw["clientconfig"], "clientconfig")
        configs += [one] if one else []
    if has_many:
        items = raw["clientconfigs"]
        if not isinstance(items, list) or not items:
            reader.problem("clientconfigs", "expected a non-empty list of client configs")
        else:
            for i, item in enumerate(items):
                one = reader.tool(item, f"clientconfigs[{i}]")
                configs += [one] if one else []
    return configs


def parse_suite(path: Path, raw: Any, defaults: ExporterConfig | None = None) -> Suite:
    """Build a :class:`Suite` from parsed YAML; raise :class:`SpecError` if it cannot run."""
    reader = _Reader(path)
    if not isinstance(raw, dict):
        raise SpecError([Problem(path, "", "top level is not a mapping")])
    reader.unknown(raw, TOP_LEVEL_KEYS, "")
    name = raw.get("name")
    if not name or not isinstance(name, str):
        reader.problem("name", "missing or not a string")
    priority = raw.get("priority")
    if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool)):
        reader.problem("priority", f"expected an integer, got {priority!r}")
        priority = None
    suite = Suite(
        path=path,
        name=str(name or path.stem),
        version=str(raw.get("version", "")),
        description=str(raw.get("description") or ""),
        dbconfig=_dbconfig(reader, raw.get("dbconfig")),
        tested_groups=reader.str_list(raw.get("tested-groups"), "tested-groups"),
        tested_commands=[c.lower() for c in
                         reader.str_list(raw.get("tested-commands"), "tested-commands")],
        topologies=reader.str_list(raw.get("redis-topologies"), "redis-topologies")
        or ["oss-standalone"],
        build_variants=reader.str_list(raw.get("build-variants"), "build-variants"),
        priority=priority,
        clientconfigs=_clientconfigs(reader, raw),
        exporter=_exporter(reader, raw.get("exporter"), defaults),
    )
    fatal = [p for p in reader.problems
             if p.severity == ERROR and (p.key == "name" or p.key.startswith("clientconfig"))]
    if fatal or not suite.clientconfigs:
        raise SpecError(reader.problems or [Problem(path, "clientconfig", "no client tool")])
    if not suite.version:
        reader.problem("version", "missing (spec 0.4 suites declare it)", WARNING)
    elif suite.version not in ("0.4", "0.3", "0.2", "0.1"):
        reader.problem("version", f"unexpected spec version {suite.version!r}", WARNING)
    suite.problems = reader.problems
    return suite


def load_yaml(path: Path) -> Any:
    """Parse one YAML file; a syntax error becomes a :class:`SpecError` naming the file."""
    try:
        with path.open() as fh:
            return yaml.safe_load(fh)
    except yaml.YAMLError as exc:
        raise SpecError([Problem(path, "", f"unparseable YAML: {exc}")]) from exc
    except OSError as exc:
        raise SpecError([Problem(path, "", f"cannot read: {exc}")]) from exc
