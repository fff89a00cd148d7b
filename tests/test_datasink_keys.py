"""The key parser is the inverse of the key builder: every key a run writes parses back to
the SeriesId that built it, with or without the deployment-name part."""

from __future__ import annotations

from dataclasses import replace

import pytest
import redis

from redis_benchmarks_spec.datasink import keys
from redis_benchmarks_spec.datasink.writer import push_results
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    BUILD_VARIANT,
    client_fixture,
    datasink_fixture,
    make_result,
)

SHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
BASE = keys.SeriesId(keys.Side("branch", "unstable"), keys.Scope("ci", "redis", "redis"),
                     "memtier_benchmark-1Mkeys-string-get-10B", BUILD_VARIANT, "icelake-2s",
                     "oss-standalone", "ALL_STATS.Totals.Ops/sec", "oss-standalone")
SIDES = [keys.Side("branch", "unstable"), keys.Side("branch", "7.2"),
         keys.Side("version", "7.2.4-rc1"), keys.Side("hash", SHA)]
DEPLOYMENTS = [("oss-standalone", "oss-standalone"),
               ("oss-standalone", "oss-standalone-04-io-threads"),
               ("oss-cluster", "oss-cluster-3-primaries"),
               ("oss-cluster", "oss-cluster")]
METRICS = ["ALL_STATS.Totals.Ops/sec", "ALL_STATS.Totals.Percentile_Latencies.p50.00",
           "instructions_total", "KB/sec/x"]


@pytest.mark.parametrize("side", SIDES, ids=lambda s: f"{s.kind}-{s.value}")
@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=lambda d: d[1])
@pytest.mark.parametrize("metric", METRICS)
def test_every_key_the_builder_writes_parses_back(side: keys.Side, deployment: tuple[str, str],
                                                  metric: str) -> None:
    built = replace(BASE, side=side, deployment_type=deployment[0], topology=deployment[1],
                    metric=metric)
    for hint in (None, metric):
        parsed = keys.parse_key(built.key, hint)
        assert parsed == built, (built.key, hint)
        assert parsed.key == built.key
    # the common shape's fast path (a topology without a name part, a one-component side)
    # gives what the general parse gives, and is taken for every key of that shape
    common = keys._common_shape(built.key, metric)
    common_shape = deployment[0] == deployment[1] and "/" not in side.value
    assert (common is not None) == common_shape, built.key
    if common is not None:
        assert common == built and common.key == built.key and hash(common) == hash(built)
        assert common.labels() == built.labels() and common.deployment_path == built.deployment_path


@pytest.mark.parametrize("side", SIDES, ids=lambda s: f"{s.kind}-{s.value}")
@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=lambda d: d[1])
def test_a_keys_fixed_opening_reads_back_without_the_rest(side: keys.Side,
                                                          deployment: tuple[str, str]) -> None:
    built = replace(BASE, side=side, deployment_type=deployment[0], topology=deployment[1])
    assert keys.parse_key_head(built.key) == keys.KeyHead(
        side.kind, built.scope, built.test_name, built.build_variant, built.platform)
    assert keys.parse_key_head("/".join(built.key.split("/")[:8])) is None
    assert keys.parse_key_head("other/" + built.key) is None
    for key in (built.key, "/".join(built.key.split("/")[:8]),
                "/".join(built.key.split("/")[:9]), "other/" + built.key):
        assert keys.has_key_head(key) == (keys.parse_key_head(key) is not None), key


def test_a_branch_with_a_slash_parses_when_the_metric_is_given() -> None:
    for topology in ("oss-standalone", "oss-standalone-04-io-threads"):
        built = replace(BASE, side=keys.Side("branch", "feature/lazy-free"), topology=topology)
        parsed = keys.parse_key(built.key, built.metric)
        assert parsed.side.value == "feature/lazy-free"
        assert (parsed.topology, parsed.metric) == (topology, built.metric)


def test_a_sweep_point_and_a_topology_without_a_type_keep_their_components() -> None:
    sweep = replace(BASE, test_name=f"{BASE.test_name}.clients-50")
    assert keys.parse_key(sweep.key).test_name == f"{BASE.test_name}.clients-50"
    # documents written before topology types: the topology name alone, no type part
    old = replace(BASE, topology="oss-standalone-02-io-threads", deployment_type="")
    parsed = keys.parse_key(old.key)
    assert (parsed.topology, parsed.side.value, parsed.metric) == (
        "oss-standalone-02-io-threads", "unstable", BASE.metric)
    assert parsed.key == old.key


@pytest.mark.parametrize("key", [
    "",
    "ci.benchmarks.redis/by.branch/ci/redis/redis/test/variant/platform/oss-standalone",
    "other.prefix/by.branch/ci/redis/redis/t/v/p/oss-standalone/unstable/m",
    "ci.benchmarks.redis/by.tag/ci/redis/redis/t/v/p/oss-standalone/unstable/m",
    "ci.benchmarks.redis/by.branch/ci/redis//t/v/p/oss-standalone/unstable/m",
])
def test_what_is_not_a_series_key_is_refused_naming_the_key(key: str) -> None:
    with pytest.raises(keys.KeyParseError, match="series key"):
        keys.parse_key(key)


COMMON_KEY = "ci.benchmarks.redis/by.hash/ci/redis/redis/t/v/p/oss-standalone/abc/m"


@pytest.mark.parametrize("key", [
    COMMON_KEY,
    "other.prefix/by.hash/ci/redis/redis/t/v/p/oss-standalone/abc/m",
    "ci.benchmarks.redis/hash/ci/redis/redis/t/v/p/oss-standalone/abc/m",
    "ci.benchmarks.redis/by.tag/ci/redis/redis/t/v/p/oss-standalone/abc/m",
    "ci.benchmarks.redis/by.hash/ci/redis//t/v/p/oss-standalone/abc/m",
    "ci.benchmarks.redis/by.hash/ci/redis/redis/t/v/p/oss-standalone/abc//m",
])
def test_the_fast_path_agrees_with_the_general_parse_or_leaves_the_key_to_it(key: str) -> None:
    try:
        general: keys.SeriesId | None = keys.parse_key.__wrapped__(
            key)  # the general path: no metric hint
    except keys.KeyParseError:
        general = None
    common = keys._common_shape(key, "m")
    assert common is None or (general is not None and common == general), key
    assert (common is not None) == (key == COMMON_KEY)


def test_a_metric_the_key_does_not_end_with_is_refused() -> None:
    with pytest.raises(keys.KeyParseError, match="does not end with metric"):
        keys.parse_key(BASE.key, "ALL_STATS.Totals.Latency")


def test_keys_written_to_a_real_datasink_parse_to_the_run_they_came_from(
        client: redis.Redis) -> None:
    result = make_result(topology="oss-cluster-3-primaries", branch="feature/x")
    result.context.topology_type = "oss-cluster"
    push_results(client, [result])
    written = {k.decode() for k in client.execute_command("TS.QUERYINDEX", "test_name="
                                                          + result.test_name)}
    # by.hash series are found by their commit (their labels: by, hash, metric)
    written |= {k.decode() for k in client.execute_command("TS.QUERYINDEX", "hash=a1b2c3d4e5f6")}
    assert len(written) == 2 * 3  # two metrics, on the branch, version and hash sides
    for key in written:
        metric = next(m for m in result.metrics if key.endswith("/" + m))
        parsed = keys.parse_key(key, metric)
        assert (parsed.platform, parsed.topology, parsed.deployment_type) == (
            "icelake-2s", "oss-cluster-3-primaries", "oss-cluster")
        assert parsed.side.value in {"feature/x", "7.2.4", "a1b2c3d4e5f6"}
        assert parsed.build_variant == BUILD_VARIANT and parsed.metric == metric
