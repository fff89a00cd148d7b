"""The Grafana dashboard (dashboards/redis-benchmarks-spec.json): every variable's query and
every panel's TS.MRANGE (and the lab table's ZRANGE/HGETALL), interpolated the way Grafana
and the redis-datasource plugin do, returns data from a real datasink filled by a real
`rbs run` (and the lab table the agent's watch folds)."""

from __future__ import annotations

import json
import re
import shlex
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.agent.watch import publish_lab_table
from redis_benchmarks_spec.analysis.lab_table import LabTable
from redis_benchmarks_spec.datasink import lab_profile
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.grafana import LAB_ROW, dashboard, dashboard_json
from tests.cli import rbs
from tests.datasink_fixtures import datasink_fixture  # noqa: F401  (registers the fixture)

REPO = Path(__file__).resolve().parents[1]
FILE = REPO / "dashboards" / "redis-benchmarks-spec.json"
SUITE = "redis-benchmark-1Kkeys-generic-exists"


@pytest.fixture(scope="module")
def filled(datasink: EmbeddedDatasink, tmp_path_factory: pytest.TempPathFactory) -> redis.Redis:
    """The datasink after `rbs run` of one real suite, as CI would push it."""
    out = tmp_path_factory.mktemp("grafana-run")
    client = datasink.client()
    client.flushall()
    run = rbs("run", "--test", SUITE, "--test-time", "1",
              "--results-dir", str(out), "--datasink", datasink.url, "--triggering-env", "ci",
              "--branch", "unstable", "--platform", "grafana-host")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    # the host's noise, as an agent records it at startup (the host-noise panels)
    noise = rbs("platform", "record", "--platform", "grafana-host", "--noise-seconds", "1",
                "--datasink", datasink.url, timeout=120)
    assert noise.returncode == 0, noise.stdout[-2000:] + noise.stderr[-2000:]
    _lab_profiles(client)
    return client


LAB = ("redis", "redis", "unstable")


def _lab_profiles(client: redis.Redis) -> LabTable:
    """Two profiled commits of 30 functions per suite, folded as the agent's watch does."""
    for n, sha in enumerate(("a" * 40, "b" * 40)):
        for suite, group in (("get", "string"), ("hset", "hash")):
            functions = [(f"f{i}", "t.c", 100.0 + i * (3 if suite == "get" else 1) + n * i)
                         for i in range(30)]
            lab_profile.record(client, LAB, sha, suite,
                               (sum(c for _, _, c in functions) + 500.0, functions), (group,))
    table = publish_lab_table(client, LAB)
    assert table is not None
    return table


def _command(target: dict[str, Any], values: dict[str, str]) -> list[str]:
    """What the plugin sends for a Redis-command target (pkg/redis-zset.go: ZRANGE by index
    always with WITHSCORES; pkg/redis-hash.go: HGETALL)."""
    key = _interpolate(target["keyName"], values)
    assert "$" not in key, key
    if target["command"] == "zrange":
        assert target["zrangeQuery"] == ""  # index range
        return ["ZRANGE", key, target["min"], target["max"], "WITHSCORES"]
    assert target["command"] == "hgetall"
    return ["HGETALL", key]


def _interpolate(text: str, values: dict[str, str]) -> str:
    # Grafana replaces $name (longest names first so $build_variant is not read as $b...)
    for name in sorted(values, key=len, reverse=True):
        text = text.replace(f"${name}", values[name])
    return text


def _variables(client: redis.Redis, board: dict[str, Any]) -> dict[str, str]:
    """Each variable's first option, each query run against the datasink as Grafana would."""
    values: dict[str, str] = {}
    for var in board["templating"]["list"]:
        if var["type"] == "textbox":
            values[var["name"]] = var["query"]
        elif var["type"] == "query":
            command = shlex.split(_interpolate(var["query"], values))
            options = sorted(m.decode() for m in client.execute_command(*command))
            assert options, f"variable {var['name']}: {command} returned nothing"
            values[var["name"]] = options[0]
    return values


def test_committed_dashboard_is_the_generated_one() -> None:
    assert json.loads(FILE.read_text()) == json.loads(dashboard_json())


def test_every_panel_query_returns_data(filled: redis.Redis) -> None:
    board = dashboard()
    values = _variables(filled, board)
    assert values["branch"] == "unstable" and values["platform"] == "grafana-host"
    assert re.match(r"^\d+\.\d+\.\d+", values["version"])
    panels = [p for p in board["panels"] if p["type"] != "row"]
    assert len(panels) >= 6
    now = int(time.time() * 1000)
    for panel in panels:
        for target in panel["targets"]:
            if target["type"] == "command":
                reply = filled.execute_command(*_command(target, values))
                assert reply, f"panel {panel['title']!r}: nothing for {target['keyName']}"
                continue
            assert target["command"] == "ts.mrange" and target["datasource"]["type"] == \
                "redis-datasource"
            filters = shlex.split(_interpolate(target["filter"], values))
            assert not any("$" in f for f in filters), filters
            # what the plugin sends: TS.MRANGE from to WITHLABELS FILTER ...
            reply = filled.execute_command("TS.MRANGE", now - 90 * 86_400_000, now,
                                           "WITHLABELS", "FILTER", *filters)
            assert reply, f"panel {panel['title']!r}: no series for {filters}"
            # RESP2: [key, labels, points] per series; RESP3: {key: [labels, ..., points]}
            entries = ([(v[0], v[-1]) for v in reply.values()] if isinstance(reply, dict)
                       else [(e[1], e[2]) for e in reply])
            for labels, points in entries:
                assert points, f"panel {panel['title']!r}: a series without points"
                pairs = labels.items() if isinstance(labels, dict) else labels
                names = {(k.decode() if isinstance(k, bytes) else k) for k, _ in pairs}
                assert target["legend"] in names and target["value"] in names


def _pairs(reply: Any) -> dict[bytes, Any]:
    """member/field -> score/value, in reply order, from RESP2's flat list (what the plugin
    reads) or RESP3's pairs or map."""
    if isinstance(reply, dict):
        return dict(reply)
    if reply and isinstance(reply[0], list):
        return {m: v for m, v in reply}
    return dict(zip(reply[::2], reply[1::2], strict=True))


def test_the_lab_panels_return_the_lab_tables_rows(filled: redis.Redis) -> None:
    table = _lab_profiles(filled)
    values = _variables(filled, dashboard())
    lab = [p for p in dashboard()["panels"] if p["type"] == "table"]
    share, change, info = ({"id": p["id"], **p["targets"][0]} for p in lab)
    pairs = _pairs(filled.execute_command(*_command(share, values)))
    # the 25 rows of the table, the top last (Grafana's sortBy puts it first)
    assert [m.decode() for m in pairs][::-1] == [r.function for r in table.rows]
    assert all(abs(float(pairs[r.function.encode()]) - r.share_pct) < 1e-3 for r in table.rows)
    moved = {m.decode(): float(v)
             for m, v in _pairs(filled.execute_command(*_command(change, values))).items()}
    assert moved == pytest.approx({r.function: r.change_pp for r in table.rows}, abs=1e-3)
    assert any(v != 0 for v in moved.values())
    about = _pairs(filled.execute_command(*_command(info, values)))
    assert about[b"commit"] == b"b" * 40 and about[b"previous"] == b"a" * 40


def test_rows_are_metric_families() -> None:
    rows = [p["title"] for p in dashboard()["panels"] if p["type"] == "row"]
    assert rows == ["Throughput", "Latency", "Platforms side by side", LAB_ROW]
    names = {v["name"] for v in dashboard()["templating"]["list"]}
    assert {"test", "platform", "platform_b", "topology", "branch", "version"} <= names
