"""What the datasink keeps for how long, and ``rbs datasink gc`` that applies it.

The key scheme stays the team's. Its cost is the ``by.hash`` family: one series per commit x
test x metric x platform, each holding the few points of one commit, so a year of the lab is
~17 M series (measured in benchmarks/history_scale.py, docs/history.md). The rule:

* ``by.branch`` and ``by.version`` series: kept forever, every point (a series per test x
  metric x platform gets ~1,500 points a year: a few KB). Change points, baselines and the
  dashboards read these.
* ``by.hash`` series: kept while their commit's newest point is younger than the window
  (default :data:`DEFAULT_WINDOW_DAYS`), then deleted whole, key and labels, by gc.
  A series RETENTION would only drop its samples and leave the key, its labels and its
  index entries, which are the cost. A pull request whose base commit has no by.hash series
  any more is compared with that commit's own points on the branch it was benchmarked on
  (datasink/commit_points.py: the commit's span and its runs' folded documents are kept), and
  with the base branch's last points only when the commit was never benchmarked.
* run documents: the datasink's copy leaves out the tool's raw output (datasink/documents.py);
  kept whole for ``DEFAULT_DOCUMENT_DAYS``, then folded to what history and change points
  read of them (commit, version, repetition, platform, build variant, times, flags),
  compressed; the histogram, deployment and telemetry stay in the files on the lab hosts.

gc finds expired commits in the ``hash_times`` index (commit -> newest point, written by
every push); data pushed before that index existed is indexed by gc on its first pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from redis_benchmarks_spec.datasink import commit_runs, documents, keys, reader

DEFAULT_WINDOW_DAYS = 10  # a year of the lab under 8 GB: see docs/history.md
DEFAULT_DOCUMENT_DAYS = 5  # whole documents (~10 KB each in the datasink)
DAY_MS = 86_400_000
BATCH = 500
FOLDED_NOTE = documents.FOLDED_NOTE


@dataclass
class GcReport:
    """What one gc pass did (or, dry, would do)."""

    commits_expired: int = 0
    series_deleted: int = 0
    documents_folded: int = 0
    commits_indexed: int = 0  # commits of older pushes put in the hash_times index
    kept_commits: int = 0
    cutoff_ms: int = 0
    documents_cutoff_ms: int = 0
    errors: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.commits_expired} commit(s) expired ({self.series_deleted} by.hash "
                f"series deleted), {self.documents_folded} document(s) folded, "
                f"{self.kept_commits} commit(s) kept")


def gc(client: redis.Redis, now_ms: int, window_days: float = DEFAULT_WINDOW_DAYS,
       dry_run: bool = False, document_days: float = DEFAULT_DOCUMENT_DAYS) -> GcReport:
    """Expire by.hash series older than ``window_days`` and fold documents older than
    ``document_days`` (at most ``window_days``) in every scope."""
    report = GcReport(cutoff_ms=int(now_ms - window_days * DAY_MS),
                      documents_cutoff_ms=int(now_ms - min(document_days, window_days) * DAY_MS))
    for scope in reader.scopes(client):
        index_missing_hashes(client, scope, report)
        expire_hashes(client, scope, report, dry_run)
        if not dry_run:
            fold_documents(client, scope, report)
            client.unlink(keys.index_keys(scope).runs)  # older pushes' run set: now unread
    return report


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def hash_series(client: redis.Redis, scope: keys.Scope, sha: str) -> list[str]:
    """Keys of every by.hash series of commit ``sha`` in ``scope`` (the scope is read from
    the keys: a by.hash series has only :data:`keys.HASH_LABELS`)."""
    found = reader.series_keys(client, [f"hash={keys.label_value(sha)}", f"{keys.LABEL_BY}=hash"])
    return [k for k in found if _in_scope(k, scope)]


def _in_scope(key: str, scope: keys.Scope) -> bool:
    try:
        return keys.parse_key(key).scope == scope
    except keys.KeyParseError:
        return False


def index_missing_hashes(client: redis.Redis, scope: keys.Scope, report: GcReport) -> None:
    """Put commits pushed before the hash_times index into it, by their newest point."""
    idx = keys.index_keys(scope)
    known = {_text(m) for m in client.zrange(idx.hash_times, 0, -1)}
    for sha in (_text(m) for m in client.smembers(idx.hashes)):
        if sha in known:
            continue
        newest = 0
        for key in hash_series(client, scope, sha)[:1]:
            last = client.execute_command("TS.GET", key)
            newest = int(last[0]) if last else 0
        client.zadd(idx.hash_times, {sha: newest}, gt=True)
        report.commits_indexed += 1


def expire_hashes(client: redis.Redis, scope: keys.Scope, report: GcReport,
                  dry_run: bool) -> None:
    """Delete the by.hash series of commits whose newest point is before the cutoff."""
    idx = keys.index_keys(scope)
    old = [_text(m) for m in client.zrangebyscore(idx.hash_times, "-inf",
                                                  f"({report.cutoff_ms}")]
    report.kept_commits += int(client.zcard(idx.hash_times)) - len(old)
    platforms = sorted(_text(p) for p in client.smembers(idx.platforms))
    for sha in old:
        series = hash_series(client, scope, sha)
        report.commits_expired += 1
        report.series_deleted += len(series)
        if dry_run:
            continue
        pipe = client.pipeline(transaction=False)
        for start in range(0, len(series), BATCH):
            pipe.unlink(*series[start:start + BATCH])
        commit_runs.delete(pipe, scope, sha, platforms)
        pipe.zrem(idx.hash_times, sha)
        pipe.srem(idx.hashes, sha)
        pipe.execute()


def fold_documents(client: redis.Redis, scope: keys.Scope, report: GcReport) -> None:
    """Fold the documents of runs started between the last fold and the cutoff."""
    idx = keys.index_keys(scope)
    since = int(client.get(idx.folded_until) or 0)
    cutoff = report.documents_cutoff_ms
    if since >= cutoff:
        return
    for test in reader.list_tests(client, scope):
        ids = [_text(r) for r in client.zrangebyscore(
            keys.test_runs_key(scope, test), since, f"({cutoff}")]
        for start in range(0, len(ids), BATCH):
            _fold_batch(client, ids[start:start + BATCH], report)
    client.set(idx.folded_until, cutoff)


def _fold_batch(client: redis.Redis, run_ids: list[str], report: GcReport) -> None:
    docs = client.mget([keys.run_key(r) for r in run_ids])
    pipe = client.pipeline(transaction=False)
    for run_id, raw in zip(run_ids, docs):
        if raw is None:
            continue
        try:
            data = documents.decode_dict(raw)
        except ValueError as exc:
            report.errors.append(f"{keys.run_key(run_id)}: not a stored document ({exc}), "
                                 "left as it is")
            continue
        if documents.is_folded(data):
            continue
        pipe.set(keys.run_key(run_id), documents.encode_folded(data))
        report.documents_folded += 1
    pipe.execute()
