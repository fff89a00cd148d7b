"""Exporter metrics: the suite's JSONPath list evaluated against a tool's JSON result.

Metric names follow one normalisation, applied everywhere (datasink keys, compare, reports):
drop the leading ``$``, unquote each path component, replace spaces with ``_``, join with ``.``:

    $."ALL STATS".Totals."Ops/sec"                          -> ALL_STATS.Totals.Ops/sec
    $."ALL STATS".Totals."Percentile Latencies"."p50.00"    -> ALL_STATS.Totals.Percentile_Latencies.p50.00

A path that matches nothing, or matches something that is not a number, is returned in the
``missing`` list so the result document says so; it is never silently dropped.
"""

from __future__ import annotations

import re
from typing import Any

from jsonpath_ng.exceptions import JsonPathParserError
from jsonpath_ng.ext import parse
from jsonpath_ng.lexer import JsonPathLexerError

_COMPONENT = re.compile(r'"([^"]*)"|\'([^\']*)\'|([^.\[\]]+)')


def _components(path: str) -> list[str]:
    body = path.strip()
    body = body.removeprefix("$")
    parts = []
    for match in _COMPONENT.finditer(body):
        value = next(g for g in match.groups() if g is not None)
        if value.strip():
            parts.append(value)
    return parts


def metric_name(path: str) -> str:
    """The dotted metric name for a JSONPath (see the module docstring)."""
    return ".".join(part.replace(" ", "_") for part in _components(path))


def evaluate_metrics(data: dict[str, Any], paths: list[str]) -> tuple[dict[str, float], list[str]]:
    """Evaluate each path; returns (metric name -> value, paths that produced no number)."""
    metrics: dict[str, float] = {}
    missing: list[str] = []
    for path in paths:
        try:
            matches = parse(path).find(data)
        except (JsonPathParserError, JsonPathLexerError) as exc:
            missing.append(f"{path} (invalid JSONPath: {exc})")
            continue
        values = [m.value for m in matches
                  if isinstance(m.value, (int, float)) and not isinstance(m.value, bool)]
        if len(values) != 1:
            missing.append(path)
            continue
        metrics[metric_name(path)] = float(values[0])
    return metrics, missing
