"""The Grafana dashboard for the Redis data source plugin (``redis-datasource``), built from
the labels and index sets :mod:`.keys` defines, and written to ``dashboards/`` in the
repository (a test keeps the file and this code in step, and runs every panel's query).

One row per metric family (throughput, latency), and a row of two platforms side by side
(``$platform`` and ``$platform_b``, one line each, on one release or branch, and their
host noise); every panel is a ``TS.MRANGE ... FILTER``
on our labels; variables (test, platform, topology, branch, version, build variant) list the
index sets with ``SMEMBERS``, so they never scan keys. A last row shows the lab-wide
instruction table of ``$branch`` (``datasink.lab_profile``'s derived keys): the plugin's
``ZRANGE`` (index range, ``WITHSCORES``: one field per function) and ``HGETALL``, turned into
sorted tables by Grafana's ``reduce`` and ``sortBy`` transformations.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from redis_benchmarks_spec.common.metrics import THROUGHPUT_METRIC
from redis_benchmarks_spec.datasink import keys, lab_profile
from redis_benchmarks_spec.datasink.platforms import LABEL_HOST_NOISE

DATASOURCE = {"type": "redis-datasource", "uid": "${DS_REDIS}"}
TITLE = "redis-benchmarks-spec"
UID = "rbs-redis-benchmarks"
SCOPE_VARS = {"env": "ci", "org": "redis", "repo": "redis"}
# variable -> (index set of keys.IndexKeys, label the panels filter on)
INDEX_VARS = {
    "test": ("tests", keys.LABEL_TEST_NAME),
    "platform": ("platforms", keys.LABEL_PLATFORM),
    # the second platform of the side-by-side row (the same index set)
    "platform_b": ("platforms", keys.LABEL_PLATFORM),
    "topology": ("topologies", keys.LABEL_TOPOLOGY),
    "build_variant": ("build_variants", keys.LABEL_BUILD_VARIANT),
    "branch": ("branches", "branch"),
    "version": ("versions", "version"),
}


@dataclass(frozen=True)
class Panel:
    title: str
    metric: str
    side: str  # "branch" or "version": which line of history; or "host_noise"
    unit: str
    side_by_side: bool = False  # $platform and $platform_b in one panel, one line each


FAMILIES: dict[str, list[Panel]] = {
    "Throughput": [
        Panel("Ops/sec on $branch", THROUGHPUT_METRIC, "branch", "ops"),
        Panel("Ops/sec by release $version", THROUGHPUT_METRIC, "version", "ops"),
    ],
    "Latency": [
        Panel("p50 on $branch", "ALL_STATS.Totals.Percentile_Latencies.p50.00", "branch", "ms"),
        Panel("p99 on $branch", "ALL_STATS.Totals.Percentile_Latencies.p99.00", "branch", "ms"),
        Panel("average on $branch", "ALL_STATS.Totals.Latency", "branch", "ms"),
        Panel("p50 by release $version", "ALL_STATS.Totals.Percentile_Latencies.p50.00",
              "version", "ms"),
    ],
    "Platforms side by side": [
        Panel("Ops/sec of release $version: $platform vs $platform_b",
              THROUGHPUT_METRIC, "version", "ops", side_by_side=True),
        Panel("p50 of release $version: $platform vs $platform_b",
              "ALL_STATS.Totals.Percentile_Latencies.p50.00", "version", "ms",
              side_by_side=True),
        Panel("Ops/sec on $branch: $platform vs $platform_b", THROUGHPUT_METRIC,
              "branch", "ops", side_by_side=True),
        Panel("p99 on $branch: $platform vs $platform_b",
              "ALL_STATS.Totals.Percentile_Latencies.p99.00", "branch", "ms",
              side_by_side=True),
        # host noise: each intrinsic-latency measurement (datasink.platforms)
        Panel("Host noise: time lost to interruptions, $platform vs $platform_b", "lost_pct",
              LABEL_HOST_NOISE, "percent", side_by_side=True),
        Panel("Host noise: p99 interruption, $platform vs $platform_b", "p99_us",
              LABEL_HOST_NOISE, "µs", side_by_side=True),
    ],
}


@dataclass(frozen=True)
class CommandPanel:
    """A panel on one of ``lab_profile``'s derived keys, read by a plain Redis command."""

    title: str
    command: str  # the plugin's command id: "zrange" or "hgetall"
    kind: str  # lab_profile.TOP_KINDS
    unit: str
    index_range: tuple[str, str] = ("0", "-1")  # ZRANGE by index: -25 -1 is the top 25
    description: str = ""


LAB_ROW = "Where Redis spends its instructions on $branch"
LAB_PANELS = [
    CommandPanel("Share of all suites' instructions: top 25 functions", "zrange", "share",
                 "percent", ("-25", "-1"),
                 "Self instructions per op of each function summed over every suite the lab "
                 "profiled for the branch's last profiled commit, as a share of all of their "
                 "instructions (rbs report --history-datasink shows it per suite group)."),
    CommandPanel("Change of share against the previous profiled commit (pp)", "zrange",
                 "change", "none", ("0", "-1"),
                 "Percentage points, measured on the suites both commits ran."),
    CommandPanel("Which commit the table is of", "hgetall", "info", "none"),
]
SIDE_BY_SIDE_NOTE = ("Unpaired runs from two hosts, not a paired A/B: for the change with "
                     "its interval and the hosts' descriptions and noise, run `rbs compare "
                     "--baseline-platform A --comparison-platform B --baseline-version V`.")


def index_set_pattern(which: str) -> str:
    """The index-set key of the dashboard's scope, with ``$env/$org/$repo`` variables."""
    real = getattr(keys.index_keys(keys.Scope("\0env", "\0org", "\0repo")), which)
    return str(real).replace("\0env", "$env").replace("\0org", "$org").replace("\0repo", "$repo")


def panel_filter(panel: Panel) -> str:
    """The panel's FILTER (space separated, as the plugin splits it). The side's value and
    the metric lead: RedisTimeSeries starts from the first filter (see datasink.reader)."""
    if panel.side == LABEL_HOST_NOISE:  # a platform's noise series, not results
        return f"{LABEL_HOST_NOISE}={panel.metric} {keys.LABEL_PLATFORM}=($platform,$platform_b)"
    exact = {panel.side: f"${panel.side}", keys.LABEL_METRIC: panel.metric,
             keys.LABEL_TEST_NAME: "$test",
             keys.LABEL_PLATFORM: "($platform,$platform_b)" if panel.side_by_side
             else "$platform",
             keys.LABEL_TOPOLOGY: "$topology", keys.LABEL_BUILD_VARIANT: "$build_variant",
             keys.LABEL_TRIGGERING_ENV: "$env", keys.LABEL_GITHUB_ORG: "$org",
             keys.LABEL_GITHUB_REPO: "$repo"}
    return " ".join(f"{label}={value}" for label, value in exact.items())


def _variables() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"name": "DS_REDIS", "label": "datasink", "type": "datasource",
                                  "query": "redis-datasource", "hide": 0}]
    out += [{"name": name, "type": "textbox", "query": value, "hide": 0,
             "current": {"text": value, "value": value}} for name, value in SCOPE_VARS.items()]
    out += [{"name": name, "label": name.replace("_", " "), "type": "query",
             "datasource": DATASOURCE, "query": f"SMEMBERS {index_set_pattern(which)}",
             "refresh": 1, "sort": 1, "multi": False, "includeAll": False, "hide": 0}
            for name, (which, _) in INDEX_VARS.items()]
    return out


def _panel(panel: Panel, pid: int, x: int, y: int) -> dict[str, Any]:
    return {
        "id": pid, "type": "timeseries", "title": panel.title, "datasource": DATASOURCE,
        "gridPos": {"h": 8, "w": 12, "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": panel.unit,
                                     "custom": {"drawStyle": "line", "showPoints": "always"}},
                        "overrides": []},
        "targets": [{"refId": "A", "datasource": DATASOURCE, "type": "timeSeries",
                     "command": "ts.mrange", "filter": panel_filter(panel),
                     "legend": keys.LABEL_PLATFORM if panel.side_by_side else panel.side,
                     "value": keys.LABEL_METRIC}],
        **({"description": SIDE_BY_SIDE_NOTE} if panel.side_by_side else {}),
    }


def lab_key_pattern(kind: str) -> str:
    """The derived key ``kind`` of the dashboard's ``$org/$repo`` and ``$branch``."""
    return lab_profile.TOP_KEY.format(org="$org", repo="$repo", kind=kind, branch="$branch")


def _command_panel(panel: CommandPanel, pid: int, x: int, y: int) -> dict[str, Any]:
    target: dict[str, Any] = {"refId": "A", "datasource": DATASOURCE, "type": "command",
                              "command": panel.command, "keyName": lab_key_pattern(panel.kind)}
    transformations: list[dict[str, Any]] = []
    if panel.command == "zrange":  # one row, a field per function: rows, largest first
        target.update({"min": panel.index_range[0], "max": panel.index_range[1],
                       "zrangeQuery": ""})
        transformations = [
            {"id": "reduce", "options": {"mode": "seriesToRows", "reducers": ["lastNotNull"],
                                         "includeTimeField": False}},
            {"id": "sortBy", "options": {"sort": [{"field": "Last *", "desc": True}]}}]
    return {"id": pid, "type": "table", "title": panel.title, "datasource": DATASOURCE,
            "gridPos": {"h": 12 if panel.command == "zrange" else 4, "w": 12, "x": x, "y": y},
            "fieldConfig": {"defaults": {"unit": panel.unit, "decimals": 2}, "overrides": []},
            "targets": [target], "transformations": transformations,
            **({"description": panel.description} if panel.description else {})}


def _lab_row(pid: int, y: int) -> list[dict[str, Any]]:
    panels: list[dict[str, Any]] = [{"id": pid, "type": "row", "title": LAB_ROW,
                                     "collapsed": False,
                                     "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []}]
    for i, panel in enumerate(LAB_PANELS):
        panels.append(_command_panel(panel, pid + 1 + i, 12 * (i % 2), y + 1 + 12 * (i // 2)))
    return panels


def dashboard() -> dict[str, Any]:
    """The dashboard JSON (importable in Grafana; pick the datasink's data source)."""
    panels: list[dict[str, Any]] = []
    y, pid = 0, 1
    for family, members in FAMILIES.items():
        panels.append({"id": pid, "type": "row", "title": family, "collapsed": False,
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        pid, y = pid + 1, y + 1
        for i, panel in enumerate(members):
            panels.append(_panel(panel, pid, 12 * (i % 2), y + 8 * (i // 2)))
            pid += 1
        y += 8 * ((len(members) + 1) // 2)
    panels += _lab_row(pid, y)
    return {"title": TITLE, "uid": UID, "schemaVersion": 39, "version": 1,
            "tags": ["redis", "benchmarks"], "time": {"from": "now-90d", "to": "now"},
            "templating": {"list": _variables()}, "panels": panels,
            "__requires": [{"type": "datasource", "id": "redis-datasource",
                            "name": "Redis", "version": "2.2.0"}],
            "__inputs": [{"name": "DS_REDIS", "label": "Redis", "type": "datasource",
                          "pluginId": "redis-datasource", "pluginName": "Redis"}]}


def dashboard_json() -> str:
    return json.dumps(dashboard(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # python -m redis_benchmarks_spec.datasink.grafana > dashboards/...
    print(dashboard_json(), end="")
