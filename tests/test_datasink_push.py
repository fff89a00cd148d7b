"""Key scheme, writer and reader against a real redis-stack-server."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.datasink import keys, reader, run_reader
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.writer import BATCH_RUNS, PushOptions, push_results
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    BUILD_VARIANT,
    METRICS,
    TEST_NAME,
    CountingConnection,
    client_fixture,
    counting_client,
    datasink_fixture,
    make_result,
)

BRANCH_KEY = (
    "ci.benchmarks.redis/by.branch/ci/redis/redis/memtier_benchmark-1Mkeys-string-get-10B/"
    "gcc:12.2.0-amd64-debian-bookworm-default/icelake-2s/oss-standalone/unstable/"
    "ALL_STATS.Totals.Ops/sec"
)


def ts_info(c: redis.Redis, key: str) -> dict[str, Any]:
    raw = c.execute_command("TS.INFO", key)
    return {k.decode(): v for k, v in raw.items()}


def queryindex(c: redis.Redis, *filters: str) -> set[str]:
    return {k.decode() for k in c.execute_command("TS.QUERYINDEX", *filters)}


def unstable(metric: str = METRICS[0], **kw: Any) -> reader.SeriesSelector:
    return reader.SeriesSelector(metric=metric, side=keys.Side("branch", "unstable"), **kw)


def test_key_names_match_the_scheme_and_queryindex_finds_them(client: redis.Redis) -> None:
    push_results(client, [make_result()])
    found = queryindex(client, f"test_name={TEST_NAME}")
    expected = {
        f"ci.benchmarks.redis/by.{kind}/ci/redis/redis/{TEST_NAME}/{BUILD_VARIANT}/icelake-2s/"
        f"oss-standalone/{value}/{metric}"
        for kind, value in (("branch", "unstable"), ("version", "7.2.4"),
                            ("hash", "a1b2c3d4e5f6"))
        for metric in METRICS
    }
    # a by.hash series is found by its commit and metric (its only labels), not by test
    assert found == {k for k in expected if "/by.hash/" not in k}
    assert queryindex(client, "hash=a1b2c3d4e5f6", "by=hash") == {
        k for k in expected if "/by.hash/" in k}
    assert BRANCH_KEY in found


def test_a_hash_series_carries_only_the_labels_its_readers_use(client: redis.Redis) -> None:
    result = make_result(topology="oss-cluster-3-primaries")
    result.context.topology_type = "oss-cluster"
    push_results(client, [result])
    hash_key = next(iter(queryindex(client, "hash=a1b2c3d4e5f6", f"metric={METRICS[0]}")))
    labels = {k.decode(): v.decode() for k, v in ts_info(client, hash_key)["labels"].items()}
    assert labels == {"by": "hash", "hash": "a1b2c3d4e5f6", "metric": METRICS[0],
                      "platform": "icelake-2s"}
    # its readers still select it by test, platform, topology, and see groups and commands
    selector = reader.SeriesSelector(metric=METRICS[0], side=keys.Side("hash", "a1b2c3d4e5f6"),
                                     platform="icelake-2s", topology="oss-cluster-3-primaries",
                                     build_variant=BUILD_VARIANT, triggering_env="ci")
    found = reader.series_by_test(client, selector)
    assert list(found) == [TEST_NAME] and found[TEST_NAME].key == hash_key
    assert found[TEST_NAME].labels == {"test_name": TEST_NAME, "tested_groups": "string",
                                       "tested_commands": "get"}
    assert reader.has_series(client, selector)
    assert reader.read_series(client, replace(selector, test_name=TEST_NAME))
    for other in (replace(selector, platform="cascadelake"),
                  replace(selector, topology="oss-standalone"),
                  replace(selector, test_name="other"), replace(selector, triggering_env="local")):
        assert reader.read_series(client, other) == []
        assert not reader.has_series(client, other)


def test_every_path_component_and_run_detail_is_a_label(client: redis.Redis) -> None:
    push_results(client, [make_result()])
    labels = {k.decode(): v.decode() for k, v in ts_info(client, BRANCH_KEY)["labels"].items()}
    assert labels == {
        "by": "branch", "triggering_env": "ci", "github_org": "redis", "github_repo": "redis",
        "test_name": TEST_NAME, "build_variant": BUILD_VARIANT, "platform": "icelake-2s",
        "topology": "oss-standalone", "branch": "unstable", "metric": METRICS[0],
        "deployment_type": "process", "tested_groups": "string", "tested_commands": "get",
        "tested_group.string": "1", "tested_command.get": "1",
    }
    version_key = BRANCH_KEY.replace("by.branch", "by.version").replace("/unstable/", "/7.2.4/")
    version_labels = ts_info(client, version_key)["labels"]
    assert version_labels[b"version"] == b"7.2.4" and b"branch" not in version_labels
    assert queryindex(client, "tested_group.string=1", "by=branch", f"metric={METRICS[0]}") == {
        BRANCH_KEY}


@pytest.mark.parametrize("version, expected", [
    ("7.0.15", "7.0.15"), ("7.2.4-rc1", "7.2.4-rc1"), ("v7.4.0", "7.4.0"),
    ("unstable", None), ("7.2", None), ("7.2.4-custom", None),
])
def test_version_series_only_for_release_versions(client: redis.Redis, version: str,
                                                  expected: str | None) -> None:
    result = make_result(version=version, redis_version="255.255.255")
    push_results(client, [result])
    assert reader.list_versions(client, keys.Scope()) == ([expected] if expected else [])
    assert len(queryindex(client, "by=version")) == (len(METRICS) if expected else 0)


def test_local_run_without_git_info_files_under_the_server_version(client: redis.Redis) -> None:
    result = make_result(branch=None, version=None, hash=None, redis_version="7.0.15",
                         redis_git_sha="00000000")
    report = push_results(client, [result])
    assert report.pushed == [result.run_id]
    assert reader.list_versions(client, keys.Scope()) == ["7.0.15"]
    assert queryindex(client, f"test_name={TEST_NAME}") == {
        k.replace("by.branch", "by.version").replace("/unstable/", "/7.0.15/")
        for k in (BRANCH_KEY, BRANCH_KEY.replace(METRICS[0], METRICS[1]))}


def test_pushing_the_same_results_twice_adds_no_points(client: redis.Redis) -> None:
    results = [make_result(run) for run in range(4)]
    first = push_results(client, results)
    samples = ts_info(client, BRANCH_KEY)["totalSamples"]
    second = push_results(client, results)
    assert samples == 4 and ts_info(client, BRANCH_KEY)["totalSamples"] == 4
    assert first.datapoints == second.datapoints == 4 * 3 * len(METRICS)
    assert ts_info(client, BRANCH_KEY)["duplicatePolicy"] == b"last"


def test_one_pipelined_round_trip_per_batch_of_runs(datasink: EmbeddedDatasink,
                                                    client: redis.Redis) -> None:
    counted = counting_client(datasink)
    counted.ping()  # connect (and its handshake) before counting
    CountingConnection.sends = 0
    results = [make_result(run, test_name=f"test-{run}") for run in range(5)]
    report = push_results(counted, results)
    assert report.round_trips == 1 and CountingConnection.sends == 1
    assert len(report.pushed) == 5 and report.ok
    many = [make_result(run, test_name=f"test-{run % 7}") for run in range(BATCH_RUNS + 3)]
    CountingConnection.sends = 0
    report = push_results(counted, many)
    assert report.round_trips == 2 and CountingConnection.sends == 2 and report.ok
    assert run_reader.count_runs(client) == len({r.run_id for r in [*results, *many]})
    starts = {r.start_ms for r in [*results, *many] if r.test_name == "test-0"}
    assert [t for t, _ in reader.points(client, unstable(test_name="test-0"))] == sorted(starts)


def test_a_refused_run_fails_alone_in_its_batch(client: redis.Redis) -> None:
    client.set(BRANCH_KEY, "not a time series")  # test TEST_NAME's first series
    results = [make_result(0), make_result(1, test_name="other")]
    report = push_results(client, results)
    assert report.pushed == [results[1].run_id] and list(report.failed) == [results[0].run_id]
    assert BRANCH_KEY in report.failed[results[0].run_id]
    assert len(reader.points(client, unstable(test_name="other"))) == 1


def test_overlapped_batches_keep_refusals_to_their_runs_and_the_connection_clean(
        client: redis.Redis) -> None:
    """Batch 2 goes out before batch 1's replies are read: a series batch 1 failed to create
    is written by batch 2 as if it existed; those points are refused, sent again with their
    labels, refused again, and only the runs of that series fail. The held connection goes
    back to the pool with no reply left unread on it."""
    client.set(BRANCH_KEY, "not a time series")
    results = [make_result(run, test_name=TEST_NAME if run % 40 == 0 else f"t-{run % 5}")
               for run in range(2 * BATCH_RUNS + 1)]  # TEST_NAME in batches 1 and 2
    report = push_results(client, results)
    doomed = {r.run_id for r in results if r.test_name == TEST_NAME}
    assert set(report.failed) == doomed and len(doomed) == 4
    assert all(BRANCH_KEY in why for why in report.failed.values())
    assert len(report.pushed) == len(results) - len(doomed)
    assert report.round_trips == 4  # three batches and the points sent again
    assert client.ping() and client.get(BRANCH_KEY) == b"not a time series"
    starts = sorted(r.start_ms for r in results if r.test_name == "t-1")
    assert [t for t, _ in reader.points(client, unstable(test_name="t-1"))] == starts


def test_reader_returns_points_for_a_selector(client: redis.Redis) -> None:
    results = [make_result(run) for run in range(6)]
    push_results(client, results)
    expected = [(r.start_ms, r.metrics[METRICS[0]]) for r in results]
    assert reader.points(client, unstable(test_name=TEST_NAME)) == expected
    assert reader.points(client, unstable(test_name=TEST_NAME, last_n=2)) == expected[-2:]
    window = unstable(test_name=TEST_NAME, from_ms=expected[1][0], to_ms=expected[3][0])
    assert reader.points(client, window) == expected[1:4]
    by_hash = reader.SeriesSelector(metric=METRICS[1], side=keys.Side("hash", "a1b2c3d4e5f6"),
                                    test_name=TEST_NAME, platform="icelake-2s")
    assert [v for _, v in reader.points(client, by_hash)] == [r.metrics[METRICS[1]]
                                                             for r in results]
    assert reader.points(client, unstable(test_name=TEST_NAME, platform="other")) == []


def test_reader_refuses_a_selector_matching_two_platforms(client: redis.Redis) -> None:
    push_results(client, [make_result(0), make_result(1, platform="cascadelake")])
    with pytest.raises(reader.AmbiguousSelectorError, match="cascadelake"):
        reader.points(client, unstable(test_name=TEST_NAME))
    assert len(reader.points(client, unstable(test_name=TEST_NAME, platform="cascadelake"))) == 1


def test_series_for_many_tests_in_one_query(client: redis.Redis) -> None:
    names = [f"test-{i}" for i in range(4)]
    push_results(client, [make_result(run, test_name=n) for n in names for run in range(3)])
    every = reader.series_for_tests(client, unstable(platform="icelake-2s"))
    assert sorted(every) == names and all(len(p) == 3 for p in every.values())
    some = reader.series_for_tests(client, unstable(last_n=1), ["test-1", "test-3", "nope"])
    assert some == {n: [every[n][-1]] for n in ("test-1", "test-3")}


def test_index_sets_and_result_documents(client: redis.Redis) -> None:
    result = make_result(0)
    push_results(client, [result, make_result(1, test_name="other", branch="7.2",
                                              platform="cascadelake")])
    scope = keys.Scope("ci", "redis", "redis")
    assert reader.scopes(client) == [scope]
    assert reader.list_tests(client, scope) == sorted([TEST_NAME, "other"])
    assert reader.list_branches(client, scope) == ["7.2", "unstable"]
    assert reader.list_platforms(client, scope) == ["cascadelake", "icelake-2s"]
    assert reader.list_build_variants(client, scope) == [BUILD_VARIANT]
    assert reader.list_metrics(client, scope) == sorted(METRICS)
    assert run_reader.run_ids(client, scope, TEST_NAME) == [result.run_id]
    stored = run_reader.result_document(client, result.run_id)
    assert stored == result and stored.result and stored.result.histogram
    # the datasink's copy leaves the tool's raw output to the file on the lab host
    raw = make_result(2)
    assert raw.result
    raw.result.data = {"ALL STATS": {"Totals": {"Ops/sec": 1.0}}, "configuration": {"x": 1}}
    push_results(client, [raw])
    copy = run_reader.result_document(client, raw.run_id)
    assert copy.result and copy.result.data == {} and raw.result.data
    assert copy.result.histogram == raw.result.histogram and copy.metrics == raw.metrics
    with pytest.raises(run_reader.RunNotFoundError):
        run_reader.result_document(client, "no-such-run")
    assert reader.last_push_ms(client) is not None


def test_failed_and_empty_results_are_skipped_with_a_reason(client: redis.Redis) -> None:
    failed = replace(make_result(0), status="failed", run_id="f")
    empty = replace(make_result(1), metrics={}, run_id="e")
    report = push_results(client, [failed, empty])
    assert report.skipped == {"f": "status failed", "e": "no metrics"}
    assert report.round_trips == 0 and reader.count_series(client) == 0


def test_commit_timestamp_when_configured(client: redis.Redis) -> None:
    with_commit = make_result(0, commit_time_ms=1_600_000_000_000)
    without = make_result(1)
    report = push_results(client, [with_commit, without], PushOptions(timestamp="commit"))
    assert report.pushed == [with_commit.run_id] and without.run_id in report.skipped
    assert reader.points(client, unstable(test_name=TEST_NAME)) == [
        (1_600_000_000_000, with_commit.metrics[METRICS[0]])]


def test_a_rejected_write_names_the_test_and_key(client: redis.Redis) -> None:
    client.set(BRANCH_KEY, "not a time series")
    report = push_results(client, [make_result(0)])
    assert not report.ok and report.pushed == []
    assert BRANCH_KEY in report.failed[make_result(0).run_id]
    assert TEST_NAME in report.failed[make_result(0).run_id]


def test_label_values_redis_rejects_are_made_safe(client: redis.Redis) -> None:
    result = make_result(0, branch="feat(x),y=z")
    report = push_results(client, [result])
    assert report.ok
    assert len(reader.points(client, reader.SeriesSelector(
        metric=METRICS[0], side=keys.Side("branch", "feat(x),y=z"), test_name=TEST_NAME))) == 1


def test_known_series_take_compact_points_and_stay_idempotent(client: redis.Redis) -> None:
    known: set[str] = set()
    first = push_results(client, [make_result(0)], known_series=known)
    assert BRANCH_KEY in known and first.round_trips == 1
    again = push_results(client, [make_result(0), make_result(1)], known_series=known)
    assert again.ok and again.round_trips == 1
    assert ts_info(client, BRANCH_KEY)["totalSamples"] == 2
    assert ts_info(client, BRANCH_KEY)["labels"][b"test_name"] == TEST_NAME.encode()
    # a commit's by.hash series are not remembered (an agent would keep every commit's);
    # a later push of the same commit writes them again, as new, and adds its point
    assert known and not [k for k in known if "/by.hash/" in k]
    hash_key = BRANCH_KEY.replace("by.branch", "by.hash").replace("/unstable/", "/a1b2c3d4e5f6/")
    assert push_results(client, [make_result(2)], known_series=known).ok
    assert ts_info(client, hash_key)["totalSamples"] == 3


def test_a_known_series_deleted_meanwhile_is_recreated_with_its_labels(
        client: redis.Redis) -> None:
    known: set[str] = set()
    push_results(client, [make_result(0)], known_series=known)
    client.delete(BRANCH_KEY)
    report = push_results(client, [make_result(1)], known_series=known)
    assert report.ok and report.round_trips == 2  # the refused points went again, with labels
    assert ts_info(client, BRANCH_KEY)["labels"][b"branch"] == b"unstable"
    assert reader.points(client, unstable(test_name=TEST_NAME)) == [
        (make_result(1).start_ms, make_result(1).metrics[METRICS[0]])]


def test_a_non_default_topology_writes_the_teams_key_and_labels(client: redis.Redis) -> None:
    result = make_result(topology="oss-cluster-3-primaries")
    result.context.topology_type = "oss-cluster"
    result.context.deployment_type = "docker"
    result = replace(result, metric_paths={METRICS[0]: '$."ALL STATS".Totals."Ops/sec"'})
    push_results(client, [result])
    key = BRANCH_KEY.replace("/oss-standalone/", "/oss-cluster/oss-cluster-3-primaries/")
    assert key in queryindex(client, f"test_name={TEST_NAME}")
    labels = {k.decode(): v.decode() for k, v in ts_info(client, key)["labels"].items()}
    assert {k: labels[k] for k in (
        "deployment_name", "deployment_type", "running_platform", "deployment_name+branch",
        "target+branch", "test_name:build_variant", "metric_name", "metric_jsonpath",
        "github_org/github_repo", "launcher", "topology")} == {
        "deployment_name": "oss-cluster-3-primaries", "deployment_type": "oss-cluster",
        "running_platform": "icelake-2s", "deployment_name+branch":
        "oss-cluster-3-primaries unstable", "target+branch": "unstable redis",
        "test_name:build_variant": f"{TEST_NAME}:{BUILD_VARIANT}",
        "metric_name": METRICS[0], "metric_jsonpath": '"ALL STATS".Totals."Ops/sec"',
        "github_org/github_repo": "redis/redis", "launcher": "docker",
        "topology": "oss-cluster-3-primaries"}
    # a by.version series carries the version flavour of the side labels
    version_key = key.replace("by.branch", "by.version").replace("/unstable/", "/7.2.4/")
    version_labels = ts_info(client, version_key)["labels"]
    assert version_labels[b"deployment_name+version"] == b"oss-cluster-3-primaries 7.2.4"
    assert b"deployment_name+branch" not in version_labels
    # the team's dashboards find it with their filters; ours with the topology label
    assert queryindex(client, "deployment_name=oss-cluster-3-primaries",
                      "deployment_type=oss-cluster", "by=branch",
                      f"metric_name={METRICS[0]}") == {key}
    points = reader.read_series(client, unstable(topology="oss-cluster-3-primaries",
                                                 platform="icelake-2s"))
    assert [s.key for s in points] == [key]


def test_an_io_threads_standalone_keeps_its_type_and_adds_its_name(client: redis.Redis) -> None:
    result = make_result(topology="oss-standalone-04-io-threads")
    result.context.topology_type = "oss-standalone"
    push_results(client, [result])
    key = BRANCH_KEY.replace("/oss-standalone/", "/oss-standalone/oss-standalone-04-io-threads/")
    assert key in queryindex(client, "deployment_name=oss-standalone-04-io-threads")
    # a document written before topologies (no topology_type) keeps the old key
    old = make_result()
    assert old.context.topology_type == ""
    assert BRANCH_KEY in {s.key for s in keys.series_ids(old)}


def test_the_stored_json_is_the_documents_dict_redacted_and_without_tool_output() -> None:
    from redis_benchmarks_spec.datasink import documents
    from redis_benchmarks_spec.results.document import CpuUsage, DeploymentRecord, NodeRecord
    doc = make_result(0)
    doc = replace(
        doc, argv=[["memtier_benchmark", "-a", "s3cret-pass", "--test-time", "5"]],
        server_args=["--requirepass", "s3cret-pass"],
        cpu={"server": CpuUsage(samples=3, mean_pct=50.0, max_pct=80.0, cores_given=1)},
        deployment=DeploymentRecord("oss-standalone", "oss-standalone", nodes=[
            NodeRecord(0, "primary", "127.0.0.1", 6379, cpus=[1], info_delta={"x": 1.0})]))
    doc.context.extra_server_args = ["--masterauth", "s3cret-pass"]
    assert doc.result
    doc.result.data = {"ALL STATS": {"Totals": {"Ops/sec": 1.0}}}
    assert json.loads(doc.to_json()) == doc.to_dict()
    assert doc.to_json(indent=2) == json.dumps(doc.to_dict(), indent=2, sort_keys=True)
    stored = json.loads(documents.encode_lean(doc))
    assert b"s3cret-pass" not in documents.encode_lean(doc) and "s3cret-pass" not in doc.to_json()
    assert stored["result"]["data"] == {} and doc.result.data
    assert {k: v for k, v in stored.items() if k != "result"} == {
        k: v for k, v in doc.to_dict().items() if k != "result"}


def test_a_documents_context_is_read_from_its_first_bytes(client: redis.Redis) -> None:
    from redis_benchmarks_spec.datasink import documents
    docs = [make_result(0), make_result(1, platform="cascadelake", hash="b" * 40)]
    assert docs[1].result
    docs[1].result.data = {"ALL STATS": {f"k{i}": float(i) for i in range(500)}}  # a long one
    push_results(client, docs)
    found = run_reader.contexts(client, [d.run_id for d in docs] + ["no-such-run"])
    assert found == {d.run_id: d.to_dict()["context"] for d in docs}
    folded = documents.encode_folded(docs[0].to_dict())  # compressed: read it whole instead
    assert documents.peek_context(folded[:documents.HEAD_BYTES]) is None


def test_one_batch_of_mixed_scopes_and_platforms_indexes_each_run_where_it_belongs(
        client: redis.Redis) -> None:
    """Runs of a batch share their index entries by scope, platform, build variant,
    topology, metrics and sides: interleaved runs of two scopes and two platforms must each
    land in their own scope's sets, with their own commit's first and last times."""
    runs = [make_result(0, hash="aaaa1111"),
            make_result(1, test_name="other", triggering_env="nightly", branch="7.2",
                        platform="cascadelake", hash="bbbb2222"),
            make_result(5, platform="cascadelake", hash="aaaa1111"),
            make_result(2, test_name="third", hash="aaaa1111"),
            make_result(-3, test_name="third", hash="cccc3333", version=None)]
    assert push_results(client, runs).ok
    ci, nightly = keys.Scope("ci"), keys.Scope("nightly")
    assert sorted(reader.scopes(client), key=lambda s: s.path) == [ci, nightly]
    assert reader.list_tests(client, ci) == sorted([TEST_NAME, "third"])
    assert reader.list_tests(client, nightly) == ["other"]
    assert reader.list_platforms(client, ci) == ["cascadelake", "icelake-2s"]
    assert reader.list_platforms(client, nightly) == ["cascadelake"]
    assert reader.list_branches(client, ci) == ["unstable"]
    assert reader.list_branches(client, nightly) == ["7.2"]
    idx, other = keys.index_keys(ci), keys.index_keys(nightly)
    assert client.smembers(idx.hashes) == {b"aaaa1111", b"cccc3333"}
    assert client.smembers(other.hashes) == {b"bbbb2222"}
    start = {r.run_id: r.start_ms for r in runs}
    a_times = [start[r.run_id] for r in runs if r.context.git.hash == "aaaa1111"]
    assert client.zscore(idx.hash_first, "aaaa1111") == min(a_times)
    assert client.zscore(idx.hash_last, "aaaa1111") == max(a_times)
    assert client.zscore(idx.hash_times, "cccc3333") == runs[4].start_ms
    assert client.zscore(other.hash_first, "aaaa1111") is None
    assert client.zscore(other.hash_last, "bbbb2222") == runs[1].start_ms
    assert set(client.hkeys(idx.tested)) == {TEST_NAME.encode(), b"third"}


def test_a_document_with_keys_that_are_not_strings_is_stored_all_the_same(
        client: redis.Redis) -> None:
    """orjson's fast path takes string keys only; a document holding another key (a
    node's index in a dict) is still written, with the key as JSON text, as before."""
    from redis_benchmarks_spec.datasink import documents
    doc = replace(make_result(0), memory={"nodes": {0: {"used_memory": 1.0}}})
    assert json.loads(documents.encode_lean(doc))["memory"] == {"nodes": {"0": {"used_memory": 1.0}}}
    assert push_results(client, [doc]).ok
    raw = client.get(keys.run_key(doc.run_id))
    assert raw and json.loads(raw)["memory"]["nodes"] == {"0": {"used_memory": 1.0}}


def test_a_hash_series_creation_packed_from_shared_parts_is_the_whole_command() -> None:
    """by.hash creations are packed from a tail shared by a commit's runs (options, labels):
    each must be byte for byte the full TS.ADD, label values made safe included, and a run
    of another commit or platform must not take a tail that is not its own."""
    import hiredis

    from redis_benchmarks_spec.datasink import writer
    runs = [make_result(0, platform="lab(1)=x", hash="abcd1234"),
            make_result(1, test_name="t2", platform="lab(1)=x", hash="abcd1234"),
            make_result(2, platform="other", hash="abcd1234"), make_result(3, hash="ffff9999")]
    for options in (PushOptions(), PushOptions(timestamp="start", retention_ms=7_000)):
        prepared = writer.prepare_batch(runs, options, (set(), set()))
        want = {s.key: hiredis.pack_command(tuple(writer.add_args(s, plan, options)))
                for plan in prepared.plans for s in plan.series if s.side.kind == "hash"}
        got = {args[1]: resp for args, resp in zip(prepared.batch.commands, prepared.batch.resp)
               if resp is not None}
        assert got == want and len(got) == len(runs) * len(METRICS)
