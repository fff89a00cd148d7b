"""A pull request's base commit, measured once: the instruction counts its push measured.

The lab benchmarks a base commit when it lands on the tracked branch; its pull request's
A/B, minutes later on the same platform, would count the same instructions again. Here the
base's runs of that push are found in the datasink (its result documents, by commit, platform
and build variant) and kept, per test of the A/B, when they were measured under this host's
fingerprint and counted instructions; ``runner.ab_stored`` then runs only the head side of
those tests (and checks the tool on the first head run). Every other test runs fresh pairs,
and the comment says which, and why (:func:`reuse_line`). Timed metrics are not taken from
the push: they stay interleaved pairs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import redis

from redis_benchmarks_spec.datasink import commit_points, keys, run_reader
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner.ab_stored import COUNTED, StoredBaseline


@dataclass(frozen=True)
class BaseQuery:
    """Whose runs, and measured how: the base commit on this platform, build variant and
    host fingerprint."""

    scope: keys.Scope
    sha: str
    platform: str
    build_variant: str
    host_fingerprint: str


def _why_not(doc: RunResult, query: BaseQuery) -> str:
    ctx = doc.context
    if not doc.ok or not ctx.is_history:
        return "the base's push has no usable run of it"
    if not ctx.host_fingerprint:
        return "the base's runs carry no host fingerprint"
    if ctx.host_fingerprint != query.host_fingerprint:
        return "the host fingerprint changed since the base's push"
    if COUNTED not in doc.metrics:
        return "the base's push did not count instructions"
    return ""


def _mine(doc: RunResult, query: BaseQuery) -> bool:
    ctx = doc.context
    return (ctx.git.hash, ctx.platform, ctx.build_variant) == (query.sha, query.platform,
                                                               query.build_variant)


def base_runs(client: redis.Redis, query: BaseQuery,
              tests: list[tuple[str, str, str]]) -> StoredBaseline:
    """Per test (label, suite name, topology), the base's pushed runs to stand in for its
    baseline side, by label; per other test, why it needs fresh pairs."""
    span = commit_points.commit_span(client, query.scope, query.sha)
    if span is None:
        return StoredBaseline(fresh={t: "the base commit was not measured on its push here"
                                     for t, _, _ in tests})
    names = sorted({name for _, name, _ in tests})
    ids = [r for row in run_reader.run_ids_of_tests(client, query.scope, names, *span)
           for r in row]
    docs = [d for d in run_reader.result_documents(client, ids).values() if _mine(d, query)]
    stored = StoredBaseline()
    for test, name, topology in tests:
        own = [d for d in docs if (d.test_name, d.context.topology) == (name, topology)]
        usable = [d for d in own if not _why_not(d, query)]
        if usable:
            stored.runs[test] = usable
        else:
            stored.fresh[test] = _why_not(own[-1], query) if own else \
                "the base's push did not run it on this platform"
    return stored


def reuse_line(stored: StoredBaseline, tests: int) -> str:
    """The comment's sentence: how many tests compared the head's counts with the base's
    counts from its push, and why the others ran fresh pairs."""
    reused = sum(1 for t in stored.runs if stored.reused(t))
    if not reused and not stored.fresh:
        return ""
    why = Counter(stored.fresh.values()).most_common(3)
    fresh = "; ".join(f"{w} ({n})" for w, n in why)
    return (f"Base measured once: {reused} of {tests} test(s) compared the head's instruction "
            f"counts with the base commit's, counted at its push on this platform (same host "
            f"fingerprint, tool and build variant): head runs only."
            + (f" Fresh pairs for {len(stored.fresh)}: {fresh}." if stored.fresh else "")
            + " Timed metrics: interleaved pairs.")
