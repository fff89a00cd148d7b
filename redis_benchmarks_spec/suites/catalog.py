"""Load a directory of suites: defaults.yml merging, duplicate names, per-file isolation."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from redis_benchmarks_spec.common.name_filter import NameFilter
from redis_benchmarks_spec.suites.problems import ERROR, Problem, SpecError
from redis_benchmarks_spec.suites.suite import (
    RTS_KEYS,
    ExporterConfig,
    Suite,
    _merge_list_form,
    load_yaml,
    parse_suite,
)

DEFAULTS_FILE = "defaults.yml"


PACKAGE_DATA = Path(__file__).resolve().parents[1] / "_data"


def repo_root() -> Path:
    """The source checkout this package runs from (meaningless for an installed wheel)."""
    return Path(__file__).resolve().parents[2]


def data_root() -> Path:
    """The directory holding ``test-suites/`` and ``setups/``.

    A source checkout (or editable install) reads them in place at the repository root; a
    wheel carries a copy under ``redis_benchmarks_spec/_data`` (see ``setup.py``).
    """
    checkout = repo_root()
    if (checkout / "test-suites").is_dir() and (checkout / "setups").is_dir():
        return checkout
    return PACKAGE_DATA


def default_suites_dir() -> Path:
    """The suites shipped with the package (the repository's ``test-suites/``)."""
    return data_root() / "test-suites"


@dataclass
class SuiteCatalog:
    """The suites that loaded, and every problem found on the way (loaded or not)."""

    suites: list[Suite] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    def by_name(self, name: str) -> Suite | None:
        return next((s for s in self.suites if s.name == name), None)


DEFAULTS_KEYS = {"version", "exporter"}


def load_defaults(directory: Path) -> tuple[ExporterConfig | None, list[Problem]]:
    """``defaults.yml``: exporter defaults merged into every suite of the directory."""
    path = directory / DEFAULTS_FILE
    if not path.exists():
        return None, []
    try:
        raw = load_yaml(path) or {}
    except SpecError as exc:
        return None, exc.problems
    if not isinstance(raw, dict):
        return None, [Problem(path, "", "top level is not a mapping")]
    problems = [Problem(path, key, "unknown key in defaults.yml") for key in raw
                if key not in DEFAULTS_KEYS]
    exporter = _merge_list_form(raw.get("exporter") or {})
    rts = _merge_list_form(exporter.get("redistimeseries") or {}) \
        if isinstance(exporter, dict) else None
    if not isinstance(rts, dict):
        return None, problems + [Problem(path, "exporter.redistimeseries",
                                         "expected a mapping")]
    problems += [Problem(path, f"exporter.redistimeseries.{key}", "unknown key")
                 for key in rts if key not in RTS_KEYS]
    return ExporterConfig(
        metrics=[str(m) for m in rts.get("metrics") or []],
        break_by=[str(b) for b in rts.get("break_by") or []],
        timemetric=rts.get("timemetric"),
    ), problems


def suite_files(directory: Path) -> list[Path]:
    files = sorted(list(directory.glob("*.yml")) + list(directory.glob("*.yaml")))
    return [f for f in files if f.name not in (DEFAULTS_FILE, "defaults.yaml")]


def load_catalog(directory: Path) -> SuiteCatalog:
    """Load every suite in ``directory``; a broken file is reported and the rest still load."""
    catalog = SuiteCatalog()
    if not directory.is_dir():
        catalog.problems.append(Problem(directory, "", "not a directory"))
        return catalog
    defaults, problems = load_defaults(directory)
    catalog.problems += problems
    seen: dict[str, Path] = {}
    for path in suite_files(directory):
        try:
            suite = parse_suite(path, load_yaml(path), defaults)
        except SpecError as exc:
            catalog.problems += exc.problems
            continue
        except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
            # a file shaped in a way the model did not foresee: reported, never fatal to the
            # catalogue (suites can arrive with a pull request)
            catalog.problems.append(Problem(path, "", f"cannot be loaded: "
                                                      f"{type(exc).__name__}: {exc}"[:300]))
            continue
        catalog.problems += suite.problems
        if suite.name in seen:
            catalog.problems.append(Problem(path, "name", f"duplicate suite name {suite.name!r} "
                                                          f"(also in {seen[suite.name]})"))
            continue
        seen[suite.name] = path
        catalog.suites.append(suite)
    return catalog


@dataclass
class SuiteFilter:
    """How ``rbs run`` and the agent pick suites; empty fields match everything. The regexps
    mean what :mod:`redis_benchmarks_spec.common.name_filter` says."""

    tests: list[str] = field(default_factory=list)
    tests_regexp: str = ".*"
    groups_regexp: str = ".*"
    commands_regexp: str = ".*"
    priority_min: int | None = None
    priority_max: int | None = None
    topology: str | None = None
    build_variant: str | None = None
    # what this host offers (an agent's --capability); None: not checked here
    capabilities: frozenset[str] | None = None

    @property
    def names(self) -> NameFilter:
        """The regexps, with the meaning every command shares (``common.name_filter``)."""
        return NameFilter(self.tests_regexp, self.groups_regexp, self.commands_regexp)

    def matches(self, suite: Suite) -> bool:
        if self.tests and suite.name not in self.tests:
            return False
        if not self.names.matches(suite.name, suite.tested_groups, suite.tested_commands):
            return False
        prio = suite.priority
        if self.priority_min is not None and (prio is None or prio < self.priority_min):
            return False
        if self.priority_max is not None and (prio is None or prio > self.priority_max):
            return False
        if self.topology and self.topology not in suite.topologies:
            return False
        if self.capabilities is not None and suite.missing_capabilities(set(self.capabilities)):
            return False
        return not (self.build_variant and suite.build_variants
                    and self.build_variant not in suite.build_variants)

    def select(self, suites: list[Suite]) -> list[Suite]:
        return [s for s in suites if self.matches(s)]
