"""A candidate change confirmed by the lab itself before anyone is told.

A candidate (``agent.watch`` stored it: a step between two commits) is confirmed by re-runs
of the commits on both sides through the normal pipeline: one build request per side, a
copy of the request that first brought the commit (same source), narrowed to the tests
and platforms that saw the step. When both have ended, each series that saw the step is
judged by the A/B engine on the re-runs alone, paired by round (``analysis.arrival.confirm``:
the runs that raised the candidate never vote on it): a change is confirmed when at least
one series' engine verdict is a change (past the catalogue's floor for its metric) that
carries the step (its sign, and the catalogue's share of its size). The alert speaks for
the series of the kind that takes precedence (counts over memory over timed figures), and a
confirmed change under its metric's alert floor is a note, not an alert
(``analysis.policy``).

A confirmed change whose two commits are parent and child is placed on the child. When
commits lie between them (the branch was pushed several commits at once), the candidate
goes to ``bisecting`` and the next step hands the range to the context's :class:`Bisector`
(``bisection.watch_range``: ``rbs bisect``'s search through the builder and agents, on the
series that confirmed it); the alert names the commit it found, and the range with the
bisection's reason when it found none. Without a bisector the alert says the range.

Several confirmers may step one branch (the ``rbs confirmer`` service, a replay): a context
with an ``owner`` works on a candidate only under its lease. A context with a
``dead_letter`` sink (the service's) hands it each stored candidate that cannot be read or
handled, with the reason, and goes on with the others; without one the error is raised.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import redis

from redis_benchmarks_spec.analysis import policy
from redis_benchmarks_spec.analysis.arrival import INSTRUCTIONS, Confirmation, confirm, kind_of
from redis_benchmarks_spec.analysis.function_movers import PATH_KEY, function_movers
from redis_benchmarks_spec.analysis.history import (
    HistoryError,
    HistoryPoint,
    HistoryQuery,
    unsuspected,
)
from redis_benchmarks_spec.common.metrics import metric as catalogued
from redis_benchmarks_spec.datasink import run_reader, watch_store
from redis_benchmarks_spec.datasink.watch_store import BadEntry, Branch, Candidate, SeriesStep
from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.follow import Follower
from redis_benchmarks_spec.events.messages import BuildRequest, SuiteFilters, new_id, now_ms
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.inputs import side_binaries
from redis_benchmarks_spec.inputs.history import read_history
from redis_benchmarks_spec.inputs.profiles import read_functions
from redis_benchmarks_spec.notify import watch_remeasure
from redis_benchmarks_spec.notify.watch_alert import Alert, AlertTargets, TestChange, pr_of, send

log = logging.getLogger(__name__)
SCAN_REQUESTS = 5000  # how far back the request that brought a commit is looked for
TOP_MOVERS = 5
#: a change the engine leaves undecided on the re-runs (UNKNOWN with the right sign and
#: size: a count that moves ~2 % run to run, as EXPIRE's does) gets one more re-run a side,
#: up to this many re-runs a side; the first round is the catalogue's ``min_pairs`` of the
#: series' metrics (:func:`first_round`), the pairs from which the engine decides on their
#: own spread. The runs that raised the candidate are never among them: judged on them, a
#: noise extreme would confirm itself.
MAX_RERUN_ROUNDS = {True: 8, False: 10}  # keyed by "an instruction count saw it"


class Reruns(Protocol):
    """How re-runs are asked for and followed (the broker in production)."""

    def request(self, sha: str, tests: list[str], platforms: list[str]) -> str: ...

    def ended(self, refs: list[str]) -> bool: ...


class BrokerReruns:
    """Re-runs as build requests on the broker, followed to their end."""

    def __init__(self, broker: redis.Redis, names: StreamNames) -> None:
        self.broker = broker
        self.names = names

    def _original(self, sha: str) -> BuildRequest:
        rows: Any = self.broker.xrevrange(self.names.build_requests, count=SCAN_REQUESTS)
        for entry_id, fields in rows:
            try:
                request = BuildRequest.decode(fields, entry_id)
            except (ValueError, TypeError, KeyError):
                continue
            # a bisect probe of the commit names no branch: never what brought it to one
            if request.sha == sha and request.pr is None and request.branch is not None:
                return request
        raise LookupError(f"no build request of {sha[:10]} in the last {SCAN_REQUESTS}")

    def request(self, sha: str, tests: list[str], platforms: list[str]) -> str:
        """Publish a copy of the request that brought ``sha``; ``<request id>@<entry id>``."""
        original = self._original(sha)
        # no base: a re-run runs the tests it names, never a selection of them by change
        rerun = replace(original, id=new_id(), requested_at_ms=now_ms(), platforms=platforms,
                        filters=SuiteFilters(tests_regexp="|".join(re.escape(t) for t in tests)),
                        base_sha=None)
        entry = publish(self.broker, self.names.build_requests, rerun)
        return f"{rerun.id}@{entry}"

    def ended(self, refs: list[str]) -> bool:
        requests = []
        for ref in refs:
            entry = ref.partition("@")[2]
            rows: Any = self.broker.xrange(self.names.build_requests, min=entry, max=entry)
            if not rows:
                return True  # trimmed away: nothing more will come of it
            requests.append((BuildRequest.decode(rows[0][1], entry), entry))
        follower = Follower(self.broker, self.names, requests)
        follower.poll()
        return follower.finished()


class Bisected(Protocol):
    """What a bisection of a range says (``bisection.search.BisectOutcome`` is one)."""

    commits: list[str]
    first_bad: str | None
    reason: str


class Bisector(Protocol):
    """Places a confirmed change between ``before`` and ``after`` on one commit."""

    def place(self, before: str, after: str, series: SeriesStep) -> Bisected: ...


@dataclass
class ConfirmContext:
    """What the confirmer reads and where it tells."""

    datasink: redis.Redis
    where: Branch
    targets: AlertTargets
    reruns: Reruns
    subject_of: Callable[[str], str]  # a commit's subject line ("" when unknown)
    parent_of: Callable[[str], str | None]  # a commit's first parent (None when unknown)
    bisector: Bisector | None = None  # places a change found across skipped commits
    # where an entry that cannot be handled ends (the service: the dead-letter stream);
    # None: its error is raised
    dead_letter: Callable[[BadEntry], None] | None = None
    owner: str = ""  # this confirmer's name: work on a candidate only under its lease


@dataclass
class Decided:
    """What one step of the confirmer did to one candidate."""

    candidate: Candidate
    alert: Alert | None = None
    problems: tuple[str, ...] = ()


#: what a bad stored entry raises (malformed JSON or fields, a key of the wrong type)
ENTRY_ERRORS = (ValueError, TypeError, KeyError, LookupError, AttributeError,
                redis.ResponseError)


#: how long a confirmer holds a candidate it works on (a bisection included) before
#: another may take it over (its holder died)
LEASE_S = 7 * 3600


#: the states a step works on, in order; the first two only ask and read (a step over
#: them takes seconds), a bisection waits for builds and runs (hours at worst)
STATES = ("candidate", "confirming", "bisecting")
QUICK_STATES = STATES[:2]


def step(ctx: ConfirmContext, states: tuple[str, ...] = STATES) -> list[Decided]:
    """Ask for the re-runs of new candidates (and of the last commit before a host
    boundary: ``watch_remeasure``); decide those whose re-runs ended; bisect confirmed ones
    whose commits are not parent and child (of ``states``, those named: the service bisects
    apart, :func:`bisect_one`)."""
    work_of: dict[str, Work] = {"candidate": _ask, "confirming": _decide_ended,
                                "bisecting": bisect}
    out: list[Decided] = []
    if "candidate" in states:
        watch_remeasure.ask(ctx.datasink, ctx.where, ctx.reruns)
    for state in states:
        for c in pending(ctx, state):
            done = _guarded(ctx, c, work_of[state])
            if done is not None:
                out.append(done)
    return out


def bisect_one(ctx: ConfirmContext, c: Candidate) -> Decided | None:
    """:func:`bisect` of one listed candidate under its lease (None: another confirmer
    holds it or moved it on), a bad entry dead-lettered as in :func:`step`."""
    return _guarded(ctx, c, bisect)


def pending(ctx: ConfirmContext, state: str) -> list[Candidate]:
    """The branch's candidates in ``state`` (bad entries dead-lettered on the way, when the
    context has a sink for them)."""
    if ctx.dead_letter is None:
        return watch_store.candidates(ctx.datasink, ctx.where, state)
    good, bad = watch_store.scan_candidates(ctx.datasink, ctx.where)
    for entry in bad:
        ctx.dead_letter(entry)
    return [c for c in good if c.state == state]


Work = Callable[["ConfirmContext", Candidate], "Decided | None"]


def _guarded(ctx: ConfirmContext, c: Candidate, work: Work) -> Decided | None:
    """``work`` on one candidate under its lease (when the context names an owner: None
    when another confirmer holds it or moved it on); with a dead-letter sink, a candidate
    whose stored data breaks ``work`` is dead-lettered with the reason."""
    if ctx.owner:
        if not watch_store.take_lease(ctx.datasink, ctx.where, c.id, ctx.owner, LEASE_S):
            return None
        try:
            try:
                now = watch_store.get_candidate(ctx.datasink, ctx.where, c.id)
            except (KeyError, ValueError):
                return None  # removed or damaged since it was listed: the next scan sees it
            if now.state != c.state:
                return None  # another confirmer moved it on since it was listed
            return _dead_lettered(ctx, c, work)
        finally:
            watch_store.drop_lease(ctx.datasink, ctx.where, c.id, ctx.owner)
    return _dead_lettered(ctx, c, work)


def _dead_lettered(ctx: ConfirmContext, c: Candidate, work: Work) -> Decided | None:
    if ctx.dead_letter is None:
        return work(ctx, c)
    try:
        return work(ctx, c)
    except ENTRY_ERRORS as exc:
        reason = f"{c.state}: {type(exc).__name__}: {exc}"[:300]
        ctx.dead_letter(BadEntry(c.id, json.dumps(asdict(c))[:2000], reason))
        return Decided(c, problems=(f"dead-lettered: {reason}",))


def _decide_ended(ctx: ConfirmContext, c: Candidate) -> Decided | None:
    return decide(ctx, c) if ctx.reruns.ended(c.reruns) else None


def _ask(ctx: ConfirmContext, c: Candidate) -> Decided:
    """Ask for the re-runs of a new candidate's two commits."""
    steps = watch_store.series_steps(ctx.datasink, ctx.where, c.id)
    return _more_reruns(ctx, c, steps, first_round([s.metric for s in steps]))


def first_round(metrics: list[str]) -> int:
    """Re-runs a side asked first: the most pairs any of ``metrics`` needs for the engine to
    decide on its own spread (``common.metrics``: 5; 3 for memory after the preload)."""
    return max((catalogued(m).min_pairs for m in metrics), default=1)


def _counted(steps: list[SeriesStep]) -> bool:
    return any(kind_of(s.metric) == INSTRUCTIONS for s in steps)


def _more_reruns(ctx: ConfirmContext, c: Candidate, steps: list[SeriesStep],
                 rounds: int) -> Decided:
    """Ask ``rounds`` more re-runs of each of the candidate's commits, interleaved."""
    tests = sorted({s.test for s in steps})
    platforms = sorted({s.platform for s in steps})
    try:
        c.reruns = [*c.reruns, *[ctx.reruns.request(sha, tests, platforms)
                                 for _ in range(rounds) for sha in (c.before, c.after)]]
        c.state = "confirming"
    except LookupError as exc:
        c.state, c.reason = "rejected", f"cannot re-run: {exc}"
    watch_store.save_candidate(ctx.datasink, ctx.where, c)
    return Decided(c)


def _points(ctx: ConfirmContext, s: SeriesStep) -> list[HistoryPoint]:
    """The series' points, the suspect ones too (:func:`reruns_of` leaves them out; so do
    the movers and the dependency change)."""
    return read_history(ctx.datasink, HistoryQuery(
        test=s.test, metric=s.metric, branch=ctx.where.branch, platform=s.platform,
        build_variant=s.build_variant, last_n=500)).points


def _dependency_changes(ctx: ConfirmContext, chosen: list[SeriesConfirmation],
                        c: Candidate) -> list[str]:
    """The dependencies the candidate's two commits ran at different versions, from the
    stored runs of the chosen series (inputs/side_binaries.py)."""
    points = unsuspected([p for x in chosen for p in x.points])
    return side_binaries.changes(side_binaries.of_commit(ctx.datasink, points, c.before),
                                 side_binaries.of_commit(ctx.datasink, points, c.after))


def _movers(ctx: ConfirmContext, points: list[HistoryPoint], c: Candidate,
            base: float) -> list[dict[str, Any]]:
    """The functions whose self instructions per op moved most, from the runs' profiles."""
    points = unsuspected(points)  # a bad artifact's profile is not the commit's
    docs = run_reader.result_documents(ctx.datasink, [p.run_id for p in points if p.run_id])
    sides: dict[str, list[list[dict[str, Any]]]] = {c.before: [], c.after: []}
    for p in points:
        doc = docs.get(p.run_id)
        if doc is not None and p.commit in sides and PATH_KEY in doc.paths:
            functions = read_functions(Path(doc.paths[PATH_KEY]))
            if functions:
                sides[p.commit].append(functions)
    moves = function_movers(sides[c.before], sides[c.after], base, top=TOP_MOVERS)
    return [{"function": m.function, "file": Path(m.file).name if m.file else None,
             "change_pct": round(m.share_of_total_pct, 3)} for m in moves]


@dataclass(frozen=True)
class SeriesConfirmation:
    """One series that saw a candidate, the engine's confirmation on its re-runs, its
    points and the before commit's median (the base of the alert's function movers)."""

    series: SeriesStep
    judged: Confirmation
    points: list[HistoryPoint]
    base: float


def judge_series(ctx: ConfirmContext, c: Candidate, s: SeriesStep) -> SeriesConfirmation | None:
    """The engine's confirmation of ``c`` on series ``s``: its re-runs of the two commits
    paired by round (None when its history cannot be read)."""
    try:
        points = _points(ctx, s)
    except HistoryError as exc:
        log.warning("watch: %s on %s not confirmed: %s", s.test, s.platform, exc)
        return None
    before, after = (reruns_of(points, sha, s.raised_ms) for sha in (c.before, c.after))
    judged = confirm(before, after, s.metric, s.change_pct, s.test)
    return SeriesConfirmation(s, judged, points, judged.row.baseline_median or 0.0)


def reruns_of(points: list[HistoryPoint], sha: str, raised_ms: int = 0) -> list[float]:
    """The values of ``sha``'s re-runs in time order: its runs after ``raised_ms`` (the
    newest run the series knew when it raised the candidate: none of the runs that raised
    it, a re-measure on a new host or the old host's run among them, votes on its own
    confirmation); without it, its runs but the first. The suspect ones (measured on an
    artifact found bad) never vote."""
    runs = sorted((p for p in points if p.commit == sha), key=lambda p: p.ts_ms)
    if raised_ms:
        return [p.value for p in unsuspected(runs) if p.ts_ms > raised_ms]
    return [p.value for p in unsuspected(runs[1:])]


def _confirmed(ctx: ConfirmContext, c: Candidate) -> list[SeriesConfirmation]:
    """Each series that shows ``c`` again."""
    return _judged(ctx, c)[0]


def _judged(ctx: ConfirmContext, c: Candidate) -> tuple[list[SeriesConfirmation], bool]:
    """:func:`_confirmed`, and whether a series not confirmed is undecided (the engine's
    UNKNOWN with the step's sign and at least half its size)."""
    out, undecided = [], False
    for s in watch_store.series_steps(ctx.datasink, ctx.where, c.id):
        judged = judge_series(ctx, c, s)
        if judged is not None and judged.judged.confirmed:
            out.append(judged)
        elif judged is not None:
            undecided |= judged.judged.undecided
    return out, undecided


def _choose(confirmed: list[SeriesConfirmation]
            ) -> tuple[list[SeriesConfirmation], SeriesConfirmation]:
    """The series the alert speaks for (those of the kind that takes precedence:
    ``analysis.policy.leading``) and the median one of them, whose size is told."""
    chosen = sorted(policy.leading(confirmed, lambda x: x.series.metric),
                    key=lambda x: x.judged.change_pct)
    return chosen, chosen[len(chosen) // 2]


def _own_changes(chosen: list[SeriesConfirmation]) -> list[TestChange]:
    """Each confirmed series' own change (a test on a platform), the largest first."""
    def rounded(v: float | None) -> float | None:
        return None if v is None else round(float(v), 3)
    out = [TestChange(x.series.test, x.series.platform, x.series.metric,
                      round(x.judged.change_pct, 3), rounded(x.judged.low_pct),
                      rounded(x.judged.high_pct)) for x in chosen]
    return sorted(out, key=lambda c: -abs(c.change_pct))


def _reject(ctx: ConfirmContext, c: Candidate, reason: str) -> Decided:
    c.state, c.reason = "rejected", reason
    watch_store.save_candidate(ctx.datasink, ctx.where, c)
    return Decided(c)


def decide(ctx: ConfirmContext, c: Candidate) -> Decided:
    """Confirm or reject ``c`` from its two commits' re-runs; alert a confirmed one
    (or hand it to the bisector when commits lie between its two)."""
    confirmed, undecided = _judged(ctx, c)
    if not confirmed:
        steps = watch_store.series_steps(ctx.datasink, ctx.where, c.id)
        rounds = len(c.reruns) // 2
        if undecided and rounds < MAX_RERUN_ROUNDS[_counted(steps)]:
            c.reason = f"undecided after {rounds} re-run(s) a side: one more"
            return _more_reruns(ctx, c, steps, 1)
        return _reject(ctx, c, "the re-runs did not show the step again" if not undecided
                       else f"undecided after {rounds} re-runs a side")
    if ctx.parent_of(c.after) == c.before:
        return _tell(ctx, c, confirmed, c.after,
                     "placed on this commit (its parent is the previous point)")
    if ctx.bisector is not None:
        c.state = "bisecting"
        c.reason = f"{len(confirmed)} series confirmed; commits in between were not run"
        watch_store.save_candidate(ctx.datasink, ctx.where, c)
        return Decided(c)
    return _tell(ctx, c, confirmed, "", f"between {c.before[:10]} and {c.after[:10]}: "
                 "commits in between were not run")


def bisect(ctx: ConfirmContext, c: Candidate) -> Decided:
    """Bisect a confirmed change's range on its median series; alert the commit found (the
    range, with the bisection's reason, when none was)."""
    confirmed = _confirmed(ctx, c)
    if not confirmed:
        return _reject(ctx, c, "nothing to bisect: no series confirms the change any more")
    if ctx.bisector is None:  # e.g. a confirmer restarted without --source
        return _tell(ctx, c, confirmed, "", f"between {c.before[:10]} and {c.after[:10]}: "
                     "commits in between were not run, and this confirmer cannot bisect")
    s = _choose(confirmed)[1].series
    outcome = ctx.bisector.place(c.before, c.after, s)
    n = len(outcome.commits)
    if outcome.first_bad:
        return _tell(ctx, c, confirmed, outcome.first_bad,
                     f"bisected: the first of the {n} commits after {c.before[:10]} up to "
                     f"{c.after[:10]} that carries the change ({s.test} on {s.platform})")
    return _tell(ctx, c, confirmed, "", f"between {c.before[:10]} and {c.after[:10]} "
                 f"({n} commits): the bisection did not place it: {outcome.reason[:300]}")


def _tell(ctx: ConfirmContext, c: Candidate, confirmed: list[SeriesConfirmation],
          placed_on: str, placed: str) -> Decided:
    """Mark ``c`` confirmed (on ``placed_on``, '' for the range) and send its alert."""
    chosen, median = _choose(confirmed)
    s, points, base = median.series, median.points, median.base
    c.state, c.placed_on = "confirmed", placed_on
    c.reason = f"{len(confirmed)} series confirmed"
    sha = placed_on or c.after
    subject = ctx.subject_of(sha)
    largest = max(abs(x.judged.change_pct) for x in chosen)
    floor = policy.alert_floor_pct(s.metric)
    if largest < floor:
        c.reason += f", below the {floor:g} % alert floor: a note"
        watch_store.save_candidate(ctx.datasink, ctx.where, c)
        watch_store.add_log(ctx.datasink, ctx.where, "small-change", sha, (
            f"{'; '.join(c.text().replace('`', '') for c in _own_changes(chosen))} at {sha[:10]} "
            f"{subject[:120]}: confirmed, under the {floor:g} % alert floor"))
        return Decided(c)
    watch_store.save_candidate(ctx.datasink, ctx.where, c)
    changes = _own_changes(chosen)
    top = changes[0]
    alert = Alert(sha, pr_of(subject), subject, sorted({x.series.test for x in chosen}),
                  sorted({x.series.platform for x in chosen}), top.metric, top.change_pct,
                  top.low_pct, top.high_pct,
                  _movers(ctx, points, c, base) if kind_of(s.metric) == INSTRUCTIONS else [],
                  c.before, placed, changes, _dependency_changes(ctx, chosen, c))
    problems = send(ctx.datasink, ctx.where, alert, ctx.targets)
    return Decided(c, alert, tuple(problems))
