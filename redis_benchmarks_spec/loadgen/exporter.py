"""Exporter metrics: the suite's JSONPath list evaluated against a tool's JSON result.

Metric names follow ONE normalisation, applied everywhere (datasink keys, compare, reports):
drop the leading ``$``, unquote each path component (``."x"``, ``.'x'``, ``["x"]`` and
``['x']`` are the same component), replace spaces with ``_``, join with ``.``. Nothing else
changes: ``/`` and the dots inside a quoted component are kept.

    $."ALL STATS".Totals."Ops/sec"                          -> ALL_STATS.Totals.Ops/sec
    $."ALL STATS".Totals."Percentile Latencies"."p50.00"    -> ALL_STATS.Totals.Percentile_Latencies.p50.00
    $['BEST RUN RESULTS']['Totals']['Ops/sec']              -> BEST_RUN_RESULTS.Totals.Ops/sec

A path is evaluated with jsonpath-ng; a simple dotted path it cannot parse (a component with
a space left unquoted, ``$.ALL STATS.Totals.Ops/sec``) is re-quoted component by component
and tried again. A path that yields no number is returned in the ``missing`` list so the
result document says so, never silently dropped: as the bare path when it matched nothing,
and as ``"<path> (<reason>)"`` when it is invalid, matched something that is not a number,
matched several values, or names the same metric as an earlier path.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from jsonpath_ng import JSONPath
from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
from jsonpath_ng.ext import parse

_COMPONENT = re.compile(r'"([^"]*)"|\'([^\']*)\'|([^.\[\]]+)')
_SIMPLE = re.compile(r"^\$(\.[^.\[\]*?@()]+|\.\"[^\"]*\"|\.'[^']*'|\[\"[^\"]*\"\]|\['[^']*'\])+$")


def _components(path: str) -> list[str]:
    body = path.strip().removeprefix("$")
    parts = []
    for match in _COMPONENT.finditer(body):
        value = next(g for g in match.groups() if g is not None)
        if value.strip():
            parts.append(value.strip() if match.group(3) is not None else value)
    return parts


def metric_name(jsonpath: str) -> str:
    """The dotted metric name for a JSONPath (see the module docstring)."""
    return ".".join(part.replace(" ", "_") for part in _components(jsonpath))


@functools.lru_cache(maxsize=1024)
def compile_path(jsonpath: str) -> JSONPath:
    """A parsed JSONPath (cached: jsonpath-ng parsing is slow). Raises ValueError if invalid.

    Simple dotted paths jsonpath-ng rejects (unquoted spaces) are re-quoted and retried.
    """
    try:
        return parse(jsonpath)
    except (JsonPathParserError, JsonPathLexerError) as exc:
        if not _SIMPLE.match(jsonpath.strip()):
            raise ValueError(str(exc)) from exc
        quoted = "$" + "".join(f'."{part}"' for part in _components(jsonpath))
        try:
            return parse(quoted)
        except (JsonPathParserError, JsonPathLexerError) as again:
            raise ValueError(f"{exc}; re-quoted as {quoted}: {again}") from again


def _as_number(value: Any) -> float | None:
    """A finite float for JSON numbers and numeric strings; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def evaluate_metric(data: dict[str, Any], jsonpath: str) -> tuple[float | None, str]:
    """One path's value, or None with the reason ("" when it matched nothing)."""
    try:
        matches = compile_path(jsonpath).find(data)
    except ValueError as exc:
        return None, f"invalid JSONPath: {exc}"
    if not matches:
        return None, ""
    if len(matches) > 1:
        return None, f"matched {len(matches)} values, expected one"
    number = _as_number(matches[0].value)
    if number is None:
        return None, f"not a number: {str(matches[0].value)[:40]!r}"
    return number, ""


def evaluate_metrics(data: dict[str, Any], paths: list[str]) -> tuple[dict[str, float], list[str]]:
    """Evaluate each path; returns (metric name -> value, paths that produced no number)."""
    metrics: dict[str, float] = {}
    missing: list[str] = []
    for path in paths:
        value, reason = evaluate_metric(data, path)
        name = metric_name(path)
        if value is not None and name in metrics:
            value, reason = None, f"same metric name {name!r} as an earlier path"
        if value is None:
            missing.append(f"{path} ({reason})" if reason else path)
            continue
        metrics[name] = value
    return metrics, missing
