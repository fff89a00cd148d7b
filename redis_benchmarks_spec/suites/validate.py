"""The one suite validator: what ``rbs suites lint`` rejects never runs.

``rbs suites lint``, ``rbs run``, the agent and ``rbs trigger`` all call
:func:`validate_catalog`. It loads a folder (:func:`catalog.load_catalog`), adds the
per-suite checks of :mod:`.lint`, applies the folder's strictness (strict for the suites
shipped with rbs, tolerant elsewhere, as lint decides), and splits the suites into those that
may run and those rejected with their reasons. A file that did not load at all is rejected
too, under its file name. Callers never run a rejected suite; they say which file was
skipped and why (``rbs run`` on its output, the agent in its log and the test's status).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from redis_benchmarks_spec.suites.catalog import (
    SuiteFilter,
    default_suites_dir,
    load_catalog,
    suite_files,
)
from redis_benchmarks_spec.suites.lint import lint_suite, name_collisions
from redis_benchmarks_spec.suites.problems import ERROR, Problem
from redis_benchmarks_spec.suites.suite import Suite


@dataclass(frozen=True)
class Rejected:
    """A suite file that does not run, with the errors that stop it."""

    path: Path
    errors: tuple[Problem, ...]
    suite: Suite | None = None  # None: the file did not load into a suite at all

    @property
    def name(self) -> str:
        """The suite's name, or the file's stem when it has none."""
        return self.suite.name if self.suite is not None else self.path.stem

    @property
    def reason(self) -> str:
        """The first error (key and message), and how many more there are."""
        first = self.errors[0]
        text = f"{first.key}: {first.message}" if first.key else first.message
        more = len(self.errors) - 1
        return text + (f" (and {more} more error(s): rbs suites lint)" if more else "")

    def line(self) -> str:
        """One line naming the file and the reason, as run, agent and trigger print it."""
        return f"skipped {self.path}: {self.reason}"

    def matches(self, flt: SuiteFilter) -> bool:
        """Whether the selection would have picked this suite; a file that did not load is
        judged by its file name against the test names and ``--tests-regexp``."""
        if self.suite is not None:
            return flt.matches(self.suite)
        stem = self.path.stem
        if flt.tests:
            return stem in flt.tests
        return flt.names.matches_test(stem)


@dataclass
class ValidatedCatalog:
    """A folder as the validator sees it: what runs, what does not and why, every problem."""

    directory: Path
    strict: bool
    suites: list[Suite] = field(default_factory=list)  # these, and only these, may run
    rejected: list[Rejected] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)  # all of them, as lint prints

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    def by_name(self, name: str) -> Suite | None:
        return next((s for s in self.suites if s.name == name), None)

    def rejected_named(self, name: str) -> Rejected | None:
        return next((r for r in self.rejected if r.name == name), None)

    def rejected_matching(self, flt: SuiteFilter) -> list[Rejected]:
        return [r for r in self.rejected if r.matches(flt)]


def default_strict(directory: Path) -> bool:
    """Strict (unknown keys and wrong tested-commands are errors) for our own suites."""
    return directory.resolve() == default_suites_dir().resolve()


def validate_catalog(directory: Path, strict: bool | None = None,
                     others: list[Path] | None = None) -> ValidatedCatalog:
    """Load and check every suite of ``directory``; ``strict`` None: :func:`default_strict`.

    ``others`` (folders) only adds name-collision warnings, which never stop a suite.
    """
    strict = default_strict(directory) if strict is None else strict
    catalog = load_catalog(directory)
    problems = list(catalog.problems)
    for suite in catalog.suites:
        problems += lint_suite(suite)
    other_suites = {d: load_catalog(d).suites for d in others or []
                    if d.resolve() != directory.resolve()}
    problems += name_collisions(catalog.suites, other_suites)
    if strict:
        problems = [p.strict() for p in problems]
    result = ValidatedCatalog(directory, strict, problems=problems)
    errors: dict[Path, list[Problem]] = {}
    for p in problems:
        if p.severity == ERROR:
            errors.setdefault(p.path, []).append(p)
    files = set(suite_files(directory)) if directory.is_dir() else set()
    # a folder-level error (a broken defaults.yml) stops every suite of the folder
    shared = [p for path, found in errors.items() if path not in files for p in found]
    for suite in catalog.suites:
        found = errors.get(suite.path, []) + shared
        if found:
            result.rejected.append(Rejected(suite.path, tuple(found), suite))
        else:
            result.suites.append(suite)
    for path in sorted(files - {s.path for s in catalog.suites}):
        # not loaded: unparseable, a fatal error, or a duplicate name (reported on the path)
        found = errors.get(path) or [Problem(path, "", "did not load")]
        result.rejected.append(Rejected(path, tuple(found)))
    return result


def lint_catalog(directory: Path, others: list[Path] | None = None,
                 strict: bool = False) -> list[Problem]:
    """Every problem ``rbs suites lint`` prints (``strict`` turns unknown keys and a wrong
    tested-commands into errors)."""
    return validate_catalog(directory, strict, others).problems
