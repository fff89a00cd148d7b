"""A commit's by.hash series read by their keys, from the writer's ``:series`` sets.

A comparison of two commits on every platform reads each commit's series of one metric:
2,204 of a year of the whole lab's 11,020 for a commit. ``TS.MRANGE ... FILTER hash=<sha>
metric=<m> by=hash`` costs the server ~50 ms of that (measured at year scale alone,
``INFO commandstats``), ~30 ms of it the label-index query. The writer keeps each commit's
series per scope and platform, named without the metric (:mod:`.commit_runs`,
:func:`keys.series_member`), so their keys are known: one ``TS.RANGE`` each, pipelined,
costs the server ~12-20 ms for the same series, and no key need be parsed back.

This path is taken only where it reads exactly what the ``TS.MRANGE`` reads
(``tests/test_site_reads.py`` holds them equal): a selector of a commit that names nothing
but the metric and perhaps the platform, and a commit whose kept runs have their series
kept everywhere (every test of a platform's ``:tests`` among its ``:series``). Otherwise
(a commit pushed before the writer kept series, or gc deleted what it kept) :func:`read`
answers None and the caller reads by ``TS.MRANGE``.
"""

from __future__ import annotations

from typing import Any

import redis

from redis_benchmarks_spec.datasink import keys, reader, wire

PerPlatform = dict[str, list[tuple[keys.SeriesId, reader.Series]]]
MISSING = "key does not exist"  # RedisTimeSeries' refusal of a range of no series


def readable(selector: reader.SeriesSelector) -> bool:
    """Whether ``selector`` reads a commit's series narrowed by platform at most."""
    return selector.side.kind == "hash" and not any((
        selector.test_name, selector.topology, selector.build_variant,
        selector.triggering_env, selector.github_org, selector.github_repo,
        selector.from_ms is not None, selector.to_ms is not None,
        selector.last_n is not None, selector.tests_regexp))


def read(client: redis.Redis, selectors: list[reader.SeriesSelector]) -> list[PerPlatform] | None:
    """Per selector, its series per platform (as :func:`reader.read_series_many` and a
    parse of each key would give them), or None when any of them cannot be read this way
    (module doc)."""
    if not selectors or not all(readable(s) for s in selectors):
        return None
    scopes = reader.scopes(client)
    pipe = client.pipeline(transaction=False)
    for scope in scopes:
        pipe.smembers(keys.index_keys(scope).platforms)
    platforms = {scope: sorted(_text(p) for p in found)
                 for scope, found in zip(scopes, pipe.execute() if scopes else [])}
    places = [(scope, platform) for scope in scopes for platform in platforms[scope]]
    members = _members(client, selectors, places)
    if members is None:
        return None
    wanted: list[tuple[int, keys.SeriesId]] = [
        (i, sid) for i, sel in enumerate(selectors)
        for (scope, platform), found in zip(places, members[i]) if found
        for sid in keys.hash_series_ids(scope, sel.side.value, platform, found, sel.metric)]
    points = wire.replies_of(client, [("TS.RANGE", sid.key, "-", "+") for _, sid in wanted],
                             lambda _i, reply: [(int(ts), float(v)) for ts, v in reply],
                             _absent)
    labels = reader.hash_labels(client, [sid for (_, sid), found in zip(wanted, points)
                                         if found is not None])
    out: list[PerPlatform] = [{} for _ in selectors]
    for (i, sid), found in zip(wanted, points):
        if found is not None:
            out[i].setdefault(sid.platform, []).append((sid, reader.Series(
                sid.key, dict(labels[(sid.scope, sid.test_name)]), found)))
    return out


def _members(client: redis.Redis, selectors: list[reader.SeriesSelector],
             places: list[tuple[keys.Scope, str]]) -> list[list[list[str]]] | None:
    """Per selector and place (scope, platform), the commit's kept series members; None
    when a commit has kept runs somewhere whose series are not all kept there, or no kept
    runs anywhere (pushed before the writer kept them, gc, or never run: the caller's
    ``TS.MRANGE`` says which)."""
    pipe = client.pipeline(transaction=False)
    for sel in selectors:
        for scope, platform in places:
            names = keys.commit_run_keys(scope, sel.side.value, platform)
            pipe.exists(names.runs)
            if sel.platform in (None, platform):  # the sets of the platforms read only
                pipe.smembers(names.tests)
                pipe.smembers(names.series)
    replies = iter(pipe.execute() if places else [])
    out = []
    for sel in selectors:
        per_place: list[list[str]] = []
        any_runs = False
        for _scope, platform in places:
            runs = int(next(replies))
            any_runs = any_runs or bool(runs)
            if sel.platform not in (None, platform):
                per_place.append([])
                continue
            tests, series = next(replies), next(replies)
            found = sorted(_text(m) for m in series)
            if runs:
                named = {m.split("/", 1)[0] for m in found}
                if not found or not {_text(t) for t in tests} <= named:
                    return None
            per_place.append(found)
        if not any_runs:
            return None
        out.append(per_place)
    return out


def _absent(_index: int, refused: redis.ResponseError) -> None:
    """A kept series without a series of the metric read (a run kind that does not record
    it): not there, as ``TS.MRANGE`` would not list it; any other refusal is raised."""
    if MISSING not in str(refused):
        raise refused


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
