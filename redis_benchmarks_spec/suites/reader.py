"""Reading one suite file's fields while collecting the problems found on the way.

A suite file is read tolerantly: a key the spec does not know is a warning (kind
``unknown-key``, promoted to an error by ``rbs suites lint --strict``), a known key with a bad
value is an error naming the key. Typed readers for the value shapes the spec uses live here,
so every key family validates the same way.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.suites.problems import ERROR, UNKNOWN_KEY, WARNING, Problem

# YAML spells booleans many ways; suites in the corpus write both `true` and `'yes'`.
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0", ""}


def merge_list_form(value: Any) -> Any:
    """Older suites write mappings as lists of one-key mappings; merge those into one."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        merged: dict[str, Any] = {}
        for item in value:
            merged.update(item)
        return merged
    return value


class SpecReader:
    """Collects problems for one file while its fields are read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[Problem] = []

    def problem(self, key: str, message: str, severity: str = ERROR, kind: str = "") -> None:
        self.problems.append(Problem(self.path, key, message, severity, kind))

    def unknown(self, mapping: dict[str, Any], allowed: set[str], where: str) -> None:
        """Warn about keys outside ``allowed``; the suite still loads (lint --strict fails)."""
        for key in mapping:
            if key in allowed:
                continue
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            self.problem(f"{where}{key}", f"unknown key (not part of the spec){hint}",
                         WARNING, UNKNOWN_KEY)

    def mapping(self, value: Any, key: str) -> dict[str, Any]:
        self._repeated_in_list_form(value, key)
        value = merge_list_form(value)
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(key, f"expected a mapping, got {type(value).__name__}")
            return {}
        return value

    def _repeated_in_list_form(self, value: Any, key: str) -> None:
        """A key given twice in the list form would be merged away like a YAML duplicate."""
        if not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
            return
        seen: set[Any] = set()
        for item in value:
            for name in item:
                if name in seen:
                    self.problem(f"{key}.{name}", "given twice in the list form (only the "
                                                  "last would count)")
                seen.add(name)

    def str_list(self, value: Any, key: str) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list):
            self.problem(key, f"expected a list, got {type(value).__name__}")
            return []
        return [str(v) for v in value]

    def flag(self, value: Any, key: str) -> bool:
        """A boolean written as YAML bool or as 'yes'/'no' (never ``bool("no")``)."""
        if value is None or isinstance(value, bool):
            return bool(value)
        if isinstance(value, int):
            if value in (0, 1):
                return bool(value)
        elif isinstance(value, str):
            text = value.strip().lower()
            if text in _TRUE | _FALSE:
                return text in _TRUE
        self.problem(key, f"expected a boolean (true/false, 'yes'/'no'), got {value!r}")
        return False

    def integer(self, value: Any, key: str, minimum: int = 0) -> int | None:
        """An integer >= ``minimum`` (bool is not an int here), or None with a problem."""
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            self.problem(key, f"expected an integer >= {minimum}, got {value!r}")
            return None
        return value

    def seconds(self, value: Any, key: str) -> float | None:
        """A positive duration in seconds (int or float), or None with a problem."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            self.problem(key, f"expected a positive number of seconds, got {value!r}")
            return None
        return float(value)

    def text(self, value: Any, key: str) -> str | None:
        """An optional string; a number is accepted as its text (YAML reads `0.4` as float)."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.problem(key, f"expected a string, got {type(value).__name__}")
            return None
        return str(value)
