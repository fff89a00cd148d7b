"""A tracked branch's push selected by what it changes (agent/code_selection.py), on a real
datasink and the real diff of #11552 (../shared/vendor): with sentinels, the push runs the
suites that execute its changed functions (the profile map of the commit pushed before),
the suites that map does not know yet, and the sentinels, and says why; the base's map is
carried to the pushed commit; without sentinels, or without a record of the change, or
with a change that reaches everything, it runs every suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.agent import code_selection, platform_config
from redis_benchmarks_spec.agent.code_selection import SelectionPolicy
from redis_benchmarks_spec.analysis.suite_selection import BY_PROFILE, FULL
from redis_benchmarks_spec.api.github import TriggerPolicy, decide
from redis_benchmarks_spec.builder import change as change_mod
from redis_benchmarks_spec.datasink import lab_profile, profile_map
from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.lab.deliveries import push_payload
from redis_benchmarks_spec.suites.suite import Suite, load_yaml, parse_suite
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    client_fixture,
    datasink_fixture,
)
from tests.test_lab_selection import CONTROL, GEO, GEODIST, GET, _diff

SUITES = Path(__file__).resolve().parents[1] / "test-suites"
EXPIRE = "redis-benchmark-1Kkeys-generic-expire"
NAMES = StreamNames.with_prefix("t")
BASE, HEAD = GEODIST


def suites() -> list[Suite]:
    return [parse_suite(SUITES / f"{n}.yml", load_yaml(SUITES / f"{n}.yml"))
            for n in (GET, GEO, EXPIRE)]


def push_event(request_id: str = "req-1", head: str = HEAD) -> BuildEvent:
    return BuildEvent(id=f"{request_id}:v", request_id=request_id, org="redis",
                      repo="redis", branch="unstable", sha=head, commit_time_ms=0,
                      build_variant="v", artifact=ArtifactRef("redis", "t:a", "0" * 64, 1),
                      redis_version="7.2.0")


def base_map(client: redis.Redis) -> None:
    """The base commit's profile map: GEODIST runs the changed function, GET does not;
    EXPIRE was never profiled."""
    key = profile_map.map_key("redis", "redis", BASE)
    client.hset(key, GEO, json.dumps([["call", "server.c", 900.0],
                                      ["addReplyDoubleDistance", "geo.c", 300.0]]))
    client.hset(key, GET, json.dumps([["call", "server.c", 500.0],
                                      ["lookupKey", "db.c", 80.0]]))


def recorded(client: redis.Redis, pair: tuple[str, str], request_id: str = "req-1") -> None:
    change_mod.save(client, NAMES.prefix, _diff(pair))
    change_mod.save_base(client, NAMES.prefix, request_id, pair[0])


def test_a_push_runs_what_its_change_executes_the_unmapped_and_the_sentinels(
        client: redis.Redis) -> None:
    base_map(client)
    recorded(client, GEODIST)
    chosen, why = code_selection.choose(client, client, NAMES, push_event(), suites(),
                                        SelectionPolicy(sentinels=(GET,)))
    assert [s.name for s in chosen] == [GEO, EXPIRE, GET]
    assert why is not None and why.method == BY_PROFILE
    assert "1 of 3 suites execute functions in geo.c that this push changes" in why.reason
    assert "plus 1 suite(s) the map has no profile of; plus 1 sentinel suite(s)" in why.reason
    # the base's map is the pushed commit's too, for the suites it does not re-profile
    carried = profile_map.load(client, "redis", "redis", HEAD)
    assert sorted(carried) == [GEO, GET]
    assert carried[GET][1].function == "lookupKey"


def test_the_lab_table_of_a_push_holds_the_suites_it_did_not_rerun(client: redis.Redis) -> None:
    base_map(client)
    recorded(client, GEODIST)
    where = ("redis", "redis", "unstable")
    lab_profile.record(client, where, BASE, GET, (1000.0, [("lookupKey", "db.c", 80.0)]),
                       ("string",))
    lab_profile.record(client, where, HEAD, GEO, (2000.0, [("geohashDecode", "geohash.c",
                                                             90.0)]), ("geo",))
    code_selection.choose(client, client, NAMES, push_event(), suites(),
                          SelectionPolicy(sentinels=()))
    profiles, groups = lab_profile.load_suites(client, "redis", "redis", HEAD)
    assert profiles[GET] == (1000.0, [("lookupKey", "db.c", 80.0)]) and groups[GET] == ("string",)
    assert profiles[GEO][0] == 2000.0  # the pushed commit's own profile stays


def test_a_sentinel_the_change_reaches_is_run_once(client: redis.Redis) -> None:
    base_map(client)
    recorded(client, GEODIST)
    chosen, _ = code_selection.choose(client, client, NAMES, push_event(), suites(),
                                      SelectionPolicy(sentinels=(GEO, GET)))
    assert [s.name for s in chosen] == [GEO, EXPIRE, GET]


def test_the_carried_map_never_overwrites_the_pushed_commits_own_profile(
        client: redis.Redis) -> None:
    base_map(client)
    recorded(client, GEODIST)
    own = json.dumps([["call", "server.c", 700.0]])
    client.hset(profile_map.map_key("redis", "redis", HEAD), GEO, own)
    code_selection.choose(client, client, NAMES, push_event(), suites(),
                          SelectionPolicy(sentinels=()))
    assert profile_map.load(client, "redis", "redis", HEAD)[GEO][0].inclusive_per_op == 700.0


@pytest.mark.parametrize("case", ["no sentinels", "no record", "no map", "everything"])
def test_a_push_runs_every_suite_when_it_cannot_be_selected(client: redis.Redis,
                                                            case: str) -> None:
    if case != "no map":
        base_map(client)
    if case == "everything":
        base_map(client)  # the map of CONTROL's base is GEODIST's here: it does not matter
        client.copy(profile_map.map_key("redis", "redis", BASE),
                    profile_map.map_key("redis", "redis", CONTROL[0]))
    if case != "no record":
        recorded(client, CONTROL if case == "everything" else GEODIST)
    head = CONTROL[1] if case == "everything" else HEAD
    policy = SelectionPolicy() if case == "no sentinels" else SelectionPolicy(sentinels=())
    chosen, why = code_selection.choose(client, client, NAMES, push_event(head=head),
                                        suites(), policy)
    assert [s.name for s in chosen] == [GET, GEO, EXPIRE]
    if case == "no sentinels":
        assert why is None
        return
    assert why is not None and why.method == FULL
    expected = {"no record": "no record of what this push changes",
                "no map": f"no profile map of {BASE[:10]}, the commit pushed before",
                "everything": "src/server.h changes more than declarations"}[case]
    assert f"all 3 suites run: {expected}" == why.reason


def test_a_push_delivery_names_the_commit_before_as_its_base() -> None:
    policy = TriggerPolicy(repos=("redis/redis",), git_remote="file:///srv/redis.git")
    pushed = decide("push", push_payload(BASE, HEAD), policy).request
    assert pushed is not None and (pushed.base_sha, pushed.sha) == (BASE, HEAD)
    assert decide("push", push_payload("0" * 40, HEAD), policy).request.base_sha is None  # type: ignore[union-attr]
    bad = push_payload("--upload-pack=x", HEAD)
    with pytest.raises(ValueError, match="sha"):
        decide("push", bad, policy)


def test_a_stored_base_that_is_no_commit_is_none(client: redis.Redis) -> None:
    client.set(change_mod.base_key(NAMES.prefix, "req-9"), "../../etc;")
    assert change_mod.base_of(client, NAMES.prefix, "req-9") is None
    assert change_mod.base_of(client, NAMES.prefix, "req-missing") is None


def test_the_platform_config_names_sentinels_and_refuses_strangers() -> None:
    parsed = platform_config.parse({"selection": {"sentinels": [GET], "max_suites": 4}})
    assert (parsed.sentinels, parsed.max_suites) == ((GET,), 4)
    assert platform_config.parse({"selection": {"max_suites": 4}}).sentinels is None
    with pytest.raises(ValueError, match=r"selection\.sentinels"):
        platform_config.parse({"selection": {"sentinels": ["../x"]}})
    with pytest.raises(ValueError, match=r"selection\.sentinels"):
        platform_config.parse({"selection": {"sentinels": "a-suite"}})
