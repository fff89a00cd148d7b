"""``rbs agent``: the lab-host daemon.

One consumer group per platform on the builds stream; several hosts of a platform share it.
Life of a build event, top to bottom:

1. decode (malformed -> dead letter + ACK), skip events for other platforms or cancelled;
2. push any result a previous holder recorded but did not confirm (see :mod:`.ledger`);
3. select suites, mark them pending, fetch and verify the artifact, unpack it;
4. per suite not yet done: running -> run with the artifact's redis-server -> record ->
   push to the datasink -> done -> completed/failed; the entry is kept alive meanwhile, and
   if another agent claimed it (we were presumed dead) the work is dropped, not published;
5. when every suite is done: EVENT_DONE, ACK. An event the agent gives up on (its artifact
   cannot be fetched, it was delivered more than ``max_deliveries`` times, its handling
   raised) is dead-lettered, and in the same transaction it and every test not yet final are
   marked ``dead-lettered`` with the reason; the event-done hook (the PR comment) runs for it
   as for a finished event. A stop request (SIGTERM) finishes the current
   test and returns without ACK: the entry stays pending and is resumed on restart or claimed
   by a live agent of the platform after the idle timeout.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import redis
from redis.client import Pipeline

from redis_benchmarks_spec.agent import ab_event, code_selection, command_ask, suite_cost
from redis_benchmarks_spec.agent.calibration import CalibrationOutcome, calibrate_platform
from redis_benchmarks_spec.agent.config import AgentConfig, calibration_session, event_session
from redis_benchmarks_spec.agent.dead_letter import stage_dead_lettered
from redis_benchmarks_spec.agent.ledger import Ledger, final_status
from redis_benchmarks_spec.agent.platform_config import UntilDecidedBudget
from redis_benchmarks_spec.agent.selection import for_platform, rejected_tests, select_valid
from redis_benchmarks_spec.agent.suite_cost import EtaPlan
from redis_benchmarks_spec.api.commands import load_ask
from redis_benchmarks_spec.builder import artifacts
from redis_benchmarks_spec.builder.compile import unpack
from redis_benchmarks_spec.builder.unpack import UnpackError
from redis_benchmarks_spec.common.paths import inside
from redis_benchmarks_spec.datasink import lab_ab
from redis_benchmarks_spec.events.consumer import ConsumerStopped, Entry, GroupConsumer
from redis_benchmarks_spec.events.heartbeat import Heartbeat
from redis_benchmarks_spec.events.messages import ARTIFACT_REDIS, ArtifactRef, BuildEvent, RunStatus
from redis_benchmarks_spec.events.status import EVENT_DONE, is_cancelled, record_statuses
from redis_benchmarks_spec.pullrequest import ab_record
from redis_benchmarks_spec.pullrequest.ab_record import ABRecord
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.layout import RunPlace, run_folder
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.suites.validate import Rejected

log = logging.getLogger(__name__)

Pusher = Callable[[list[RunResult]], None]
# called once the platform has finished an event (after EVENT_DONE and the ACK), e.g. to
# update the pull-request comment, with the A/B record when the platform ran one; it must not
# raise for an outside service's failure
EventDone = Callable[[BuildEvent, str, ABRecord | None], None]
# a pull-request event's suites were chosen: (event, platform, the comment's line about it)
Selected = Callable[[BuildEvent, str, str], None]
Runner = Callable[[SessionConfig, list[Suite]], list[RunResult]]

# what a runner may raise for one suite (a binary that will not start, a bad suite file);
# the suite is recorded as failed and the event goes on instead of crash-looping the agent
SUITE_ERRORS = (OSError, RuntimeError, ValueError)
#: whether a calibration is due is checked at most this often (between events)
CALIBRATION_CHECK_S = 60.0


class Agent:
    """One lab-host agent: a consumer of its platform's group (see the module docstring)."""

    def __init__(self, client: redis.Redis, config: AgentConfig, push: Pusher,
                 runner: Runner = run_suites, on_event_done: EventDone | None = None,
                 datasink: redis.Redis | None = None, on_selected: Selected | None = None
                 ) -> None:
        self.client = client
        self.datasink = datasink  # read for the suite selection's profile map
        self.on_selected = on_selected
        self.config = config
        self.push = push
        self.runner = runner
        self.on_event_done = on_event_done
        self.stop_event = threading.Event()
        self.heartbeat = Heartbeat(client, config.names, config.platform, config.consumer,
                                   config.heartbeat_ttl_s)
        self.consumer = GroupConsumer(
            client, config.names.builds, config.names.platform_group(config.platform),
            config.consumer, block_ms=config.block_ms, idle_claim_ms=config.idle_claim_ms,
            dead_letter_stream=config.names.dead_letter, max_deliveries=config.max_deliveries)
        self.consumer.on_dead_letter = self._dead_lettered
        self._ended: list[BuildEvent] = []  # dead-lettered, event-done hook not yet run
        self._records: dict[str, ABRecord] = {}  # per event: the A/B record, for the hook
        self._calibration_checked = -CALIBRATION_CHECK_S  # monotonic time of the last check
        self._selected: dict[str, str] = {}  # per PR event: which suites run and why

    def stop(self) -> None:
        """Finish the current test, then return from :meth:`run` (signal-safe)."""
        self.stop_event.set()
        self.consumer.stop()

    def calibrate(self) -> CalibrationOutcome | None:
        """Calibration A/A sessions when due (agent/calibration.py); a failure is logged
        and the agent goes on with the floors it has."""
        plan = self.config.calibration
        if plan is None or time.monotonic() < self._calibration_checked + CALIBRATION_CHECK_S:
            return None
        self._calibration_checked = time.monotonic()
        self.heartbeat.info = "calibrating"
        return calibrate_platform(calibration_session(self.config), self.config.suites_dir,
                                  plan)

    def run(self, max_events: int | None = None) -> int:
        """Serve build events until stopped, calibrating when due between them; returns
        how many were completed."""
        completed = 0
        with self.heartbeat:
            while not self.stop_event.is_set():
                self.calibrate()
                if max_events is not None and completed >= max_events:
                    break
                self.heartbeat.info = "idle"
                try:
                    entries = self.consumer.read()
                except ConsumerStopped:
                    break
                finally:
                    self._notify_ended()  # entries read() dead-lettered (delivery limit)
                for entry in entries:
                    if self._handle_retrying(entry):
                        completed += 1
                    if self.stop_event.is_set():
                        break
        return completed

    def _handle_retrying(self, entry: Entry) -> bool:
        """:meth:`handle`, again after a lost connection (it resumes from the ledger)."""
        try:
            return self.consumer.call(lambda: self.handle(entry))
        except ConsumerStopped:
            return False
        except Exception as exc:  # noqa: BLE001 - the per-entry boundary: poison never loops
            # whatever one entry raises, it is parked in the dead-letter stream with its
            # reason (replayable) and the agent serves the next one instead of exiting
            self.consumer.poison(entry, exc)
            return False
        finally:
            self._notify_ended()

    def _dead_lettered(self, pipe: Pipeline, fields: Mapping[Any, Any], reason: str) -> None:
        """The consumer's dead-letter hook (:mod:`.dead_letter`); the event-done hook runs
        for the event once the dead letter is written."""
        event = stage_dead_lettered(self.client, pipe, self.config, fields, reason)
        if event is not None:
            self._ended.append(event)

    def _notify_ended(self) -> None:
        while self._ended:
            self._event_done(self._ended.pop(0))

    def _status(self, event: BuildEvent, test: str, state: str, reason: str = "") -> None:
        status = RunStatus(event_id=event.id, platform=self.config.platform,
                               agent=self.config.consumer, test_name=test, state=state,
                               reason=reason)
        self.consumer.call(lambda: record_statuses(self.client, self.config.names, [status]))

    def handle(self, entry: Entry) -> bool:
        """Work one entry; True when it was finished and acknowledged."""
        self.heartbeat.set(f"entry {entry.id}")
        return self._handle(entry)

    def _handle(self, entry: Entry) -> bool:
        event = self.consumer.decode(entry, BuildEvent)
        if event is None:
            return False  # dead-lettered
        if not for_platform(event, self.config.platform):
            self.consumer.ack(entry.id)
            return True
        ledger = Ledger(self.client, self.config.names.prefix, event.id, self.config.platform)
        if is_cancelled(self.client, self.config.names, event.id, event.request_id):
            # a holder killed before the cancel left tests open: they end, named
            self.consumer.call(lambda: ledger.end_cancelled(self.config.consumer))
            self.consumer.ack(entry.id)
            return True
        self._push_unconfirmed(event, ledger)
        for status in self.consumer.call(lambda: ledger.open_ends(self.config.consumer)):
            self.consumer.call(lambda s=status: ledger.finish(s))  # done, never ended
        suites, rejected = select_valid(event, self.config.suite_filter, self.config.suites_dir)
        self._rejected(event, rejected)
        suites = self._select_by_code(event, suites)
        todo = [s for s in suites if s.name not in ledger.done()]
        for suite in todo:
            self._status(event, suite.name, "pending")
        if todo and not self._run_event(entry, event, todo, ledger):
            return False
        end = RunStatus(event_id=event.id, platform=self.config.platform,
                        agent=self.config.consumer, test_name=EVENT_DONE, state="completed",
                        reason=f"{len(suites)} suite(s)")
        self.consumer.call(lambda: ledger.end_event(end, [s.name for s in suites]))
        self.consumer.ack(entry.id)
        self._event_done(event)
        return True

    def _select_by_code(self, event: BuildEvent, suites: list[Suite]) -> list[Suite]:
        """A pull request runs the suites that execute the code it changes (recorded, and
        said in the comment: the record's note); a push runs every suite, or, when the
        platform names sentinels, those and the suites its change reaches (recorded)."""
        chosen, selection = self.consumer.call(lambda: code_selection.choose(
            self.client, self.datasink, self.config.names, event, suites,
            self.config.selection))
        if selection is not None:
            self.consumer.call(lambda: code_selection.record(
                self.client, self.config.names, event, self.config.platform, selection,
                len(suites)))
            if event.pr is None:
                return chosen  # a push: recorded, no comment to tell
            self._selected[event.id] = f"Suites: {selection.reason}."
            if not chosen:
                self._save_record(event, ABRecord(note=""))
            elif self.on_selected is not None:
                line = self._queued_line(selection, chosen)
                try:
                    self.on_selected(event, self.config.platform, line)
                except Exception:  # a comment that cannot be edited never stops the event
                    log.exception("event %s: the selection hook failed", event.id)
        return chosen

    def _queued_line(self, selection: code_selection.Selection, chosen: list[Suite]) -> str:
        """The selection and its ETA from this platform's measured cost per suite."""
        budget = self.config.until_decided
        lanes = 1
        if budget:  # the tests the A/B will run (ab_event.counted_topologies), in lanes
            session = self.config.session.with_catalogue()
            chosen, _ = ab_event.counted_topologies(budget, session.catalogue(), chosen)
            lanes = len(ab_event.lanes_for(budget, session, chosen)) or 1
        plan = ab_event.eta_plan(
            budget, stored_base=ab_event.may_use_stored(budget, self.datasink),
            lanes=lanes) if budget else EtaPlan(1, 1, runs_per_pair=1)
        costs = self.consumer.call(lambda: suite_cost.load(
            self.client, self.config.names, self.config.platform, [s.name for s in chosen]))
        return code_selection.queued_line(selection, [s.name for s in chosen
                                                      for _ in s.topologies], costs, plan)

    def _rejected(self, event: BuildEvent, rejected: list[Rejected]) -> None:
        """A selected suite file the validator rejects is a failed test with the reason
        (logged by select_valid); a file name that is no test name gets the log line only."""
        for name, line in rejected_tests(rejected):
            self._status(event, name, "failed", line)

    def _event_done(self, event: BuildEvent) -> None:
        if self.on_event_done is None:
            return
        try:
            self.on_event_done(event, self.config.platform, self._record(event))
        except Exception:  # a hook after the ACK must not touch the entry
            # the event is done and acknowledged; a failing notification (bad state another
            # writer left in the broker, GitHub down) is logged, never dead-letters the event
            log.exception("event %s: the event-done hook failed", event.id)

    def _push_unconfirmed(self, event: BuildEvent, ledger: Ledger) -> None:
        for test, results in ledger.unpushed().items():
            log.info("pushing results of %s recorded by a previous holder", test)
            self.push(results)
            # the previous holder died before the final status: finish it, or it stays
            # "running" forever
            self._finish(event, ledger, test, results)

    def _run_event(self, entry: Entry, event: BuildEvent, todo: list[Suite],
                   ledger: Ledger) -> bool:
        """Run the suites still to do; False when stopped or the entry was lost."""
        workdir = inside(self.config.work_dir, event.id.replace(":", "_"))
        shutil.rmtree(workdir, ignore_errors=True)  # left by a holder that was killed
        try:
            with self.consumer.keepalive(entry.id) as lost:
                binaries = self._unpack(event, workdir / "bin")
                session = event_session(self.config, event, binaries["redis-server"],
                                        self._provenance(event))
                ask = self.consumer.call(lambda: load_ask(
                    self.client, self.config.names, event.request_id)) if event.pr else None
                session, budget = command_ask.applied(session, self.config.until_decided, ask)
                paired = self._paired(event, workdir / "base-bin", session, lost, budget)
                if paired is not None:
                    return self._run_paired(paired, event, todo, ledger, lost)
                for suite in todo:
                    if self.stop_event.is_set() or lost.is_set():
                        return False
                    self._run_suite(event, suite, session, ledger, lost)
                    if not lost.is_set() and not self.consumer.owns(entry.id):
                        lost.set()  # claimed between two keepalive touches
                return not lost.is_set()
        except artifacts.ArtifactError as exc:
            # the event and its pending tests end "dead-lettered" with this reason (the hook)
            self.consumer.dead_letter(entry.id, entry.fields, f"artifact: {exc}")
            return False
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    def _provenance(self, event: BuildEvent) -> dict[str, Any]:
        """How the event's artifact was built (its manifest), for the results."""
        return artifacts.provenance(self.client, artifacts.manifest_key(
            self.config.names.prefix, event))

    def _unpack(self, event: BuildEvent, dest: Path, ref: ArtifactRef | None = None,
                sha: str | None = None) -> dict[str, Path]:
        """The binaries of the event's artifact (or of ``ref``, built from ``sha`` in the
        event's variant): MAC checked before fetching, bytes before unpacking."""
        ref, sha = ref or event.artifact, sha or event.sha
        artifacts.check_mac(self.config.artifact_key, ref, sha, event.build_variant)
        prefix = self.config.names.artifact_prefix
        if ref.kind == ARTIFACT_REDIS and not ref.location.startswith(prefix):
            raise artifacts.ArtifactForged(f"artifact location {ref.location!r} is "
                                           f"not under {prefix}")
        try:
            binaries = unpack(artifacts.fetch(self.client, ref), dest)
        except UnpackError as exc:
            raise artifacts.ArtifactCorrupt(f"artifact {ref.location}: {exc}") from exc
        if "redis-server" not in binaries:
            raise artifacts.ArtifactError(
                f"artifact {ref.location} holds no redis-server "
                f"(found: {', '.join(binaries) or 'nothing'})")
        return binaries

    def _paired(self, event: BuildEvent, dest: Path, session: SessionConfig,
                lost: threading.Event,
                budget: UntilDecidedBudget | None) -> ab_event.PairedRun | None:
        """The A/B of a pull-request event when the platform allows a budget (``budget``: the
        platform's, as a ``/rbs`` command narrowed it) and the base build is there; otherwise
        None, and the reason kept for the comment."""
        if budget is None or event.pr is None:
            return None
        names = self.config.names
        base, why = self.consumer.call(lambda: ab_event.find_base(
            self.client, names, self.config.artifact_key, event))
        if base is not None:
            try:
                server = self._unpack(event, dest, base.ref, base.sha)["redis-server"]
            except artifacts.ArtifactError as exc:
                base, why = None, f"the base commit's build is unusable: {exc}"
        if base is None:
            log.warning("event %s: no interleaved A/B: %s", event.id, why)
            note = f"No interleaved A/B on this platform: {why}; one run per test instead."
            self._save_record(event, ABRecord(note=note))
            return None
        return ab_event.PairedRun(session, server, base, budget,
                                  ab_event.interrupted_by(self.stop_event, lost),
                                  ab_event.platform_priors(self.config.platform),
                                  datasink=self.datasink)

    def _run_paired(self, job: ab_event.PairedRun, event: BuildEvent, todo: list[Suite],
                    ledger: Ledger, lost: threading.Event) -> bool:
        """Every suite of the event in one sequential A/B (one Benjamini-Hochberg family);
        each suite is recorded, pushed and marked done once the A/B has ended."""
        for suite in todo:
            self._status(event, suite.name, "running")
        self.heartbeat.set(f"{event.id} A/B against {job.base.sha[:12]}")
        reason = ""
        result = None
        try:
            result = ab_event.run_pairs(job, todo)
            self._costs(job.meter)
        except ab_event.Interrupted as exc:
            log.info("event %s: %s; the entry stays pending", event.id, exc)
            return False
        except SUITE_ERRORS as exc:
            log.error("event %s: the A/B could not run: %s", event.id, exc)
            reason = f"{type(exc).__name__}: {exc}"
        if lost.is_set():
            return False
        if result is not None:
            self._save_record(event, ab_event.record_of(job, result))
            self._store_lab_ab(event, result.runs)
        runs = result.runs if result is not None else []
        for test, results in ab_event.results_by_suite(runs, todo, job.stored).items():
            self._finish_suite(event, ledger, test, results, reason if result is None else "")
        return True

    def _costs(self, meter: suite_cost.RunMeter) -> None:
        """This platform's cost per suite, for the next queued line's ETA (best effort)."""
        try:
            suite_cost.record(self.client, self.config.names, self.config.platform,
                              meter.per_suite)
        except redis.RedisError as exc:
            log.warning("suite costs not recorded: %s", exc)

    def _save_record(self, event: BuildEvent, record: ABRecord) -> None:
        """Stored (merged with a previous holder's), and kept for the event-done hook."""
        why = self._selected.get(event.id, "")
        if why and why not in record.note:
            record = replace(record, note=f"{why} {record.note}".strip())
        self._records[event.id] = self.consumer.call(lambda: ab_record.save(
            self.client, self.config.names, event.id, self.config.platform, record))

    def _store_lab_ab(self, event: BuildEvent, runs: list[ab_event.ABRun]) -> None:
        """The engine's report of the A/B, kept in the datasink under the two commits and
        the platform (``datasink.lab_ab``), before the runs' points are pushed: every surface
        that shows these commits renders it instead of judging the points again. Best effort:
        without it they judge the points, as before."""
        record = self._records.get(event.id)
        if self.datasink is None or record is None:
            return
        try:
            for key, entry in ab_event.lab_entries(event, self.config.platform, record, runs):
                lab_ab.store(self.datasink, key, entry)
        except (redis.RedisError, lab_ab.LabABError) as exc:
            log.warning("event %s: the A/B's report not kept in the datasink: %s", event.id, exc)

    def _record(self, event: BuildEvent) -> ABRecord | None:
        """The A/B record of ``event``: this agent's own, or, when a previous holder ran every
        suite before it died, the stored one."""
        record = self._records.pop(event.id, None)
        if record is None and self.config.until_decided is not None and event.pr is not None:
            record = ab_record.load(self.client, self.config.names, event.id,
                                    self.config.platform)
        return record

    def _finish_suite(self, event: BuildEvent, ledger: Ledger, test: str,
                      results: list[RunResult], error: str = "") -> None:
        """Record, push, then mark done with the final status (each broker step retried
        in place)."""
        self.consumer.call(lambda: ledger.record(test, results))
        if results:
            self.push(results)
        self._finish(event, ledger, test, results, error)

    def _finish(self, event: BuildEvent, ledger: Ledger, test: str, results: list[RunResult],
                error: str = "") -> None:
        """Done and its final status in one transaction (:meth:`Ledger.finish`)."""
        status = final_status(event.id, self.config.platform, self.config.consumer, test,
                              results, error)
        self.consumer.call(lambda: ledger.finish(status))

    def _base_sessions(self, event: BuildEvent, session: SessionConfig) -> list[SessionConfig]:
        """The sessions a suite of ``event`` runs in: one, or at a push that counts
        instructions, ``base_runs`` of them (rep-NN/, each a point of the build's series):
        the stored base its pull requests are compared with (``agent.base_counts``)."""
        budget = self.config.until_decided
        runs = budget.base_runs if budget is not None else 1
        if event.pr or runs < 2 or "instructions" not in session.window.profilers.names:
            return [session]
        return [replace(session, results_dir=run_folder(session.results_dir,
                                                        RunPlace(repetition=rep)),
                        context=replace(session.context, repetition=rep))
                for rep in range(runs)]

    def _run_suite(self, event: BuildEvent, suite: Suite, session: SessionConfig,
                   ledger: Ledger, lost: threading.Event) -> None:
        self._status(event, suite.name, "running")
        self.heartbeat.set(f"{event.id} {suite.name}")
        started = time.monotonic()
        try:
            # the runner files each result under <test>/<topology>/ of the event's folder
            # (of its rep-NN/ when a push counts its base more than once)
            results = [r for rep_session in self._base_sessions(event, session)
                       for r in self.runner(rep_session, [suite])]
        except SUITE_ERRORS as exc:
            log.error("event %s: suite %s could not run: %s", event.id, suite.name, exc)
            self._finish_suite(event, ledger, suite.name, [], f"{type(exc).__name__}: {exc}")
            return
        log.info("event %s: %s ran %d test(s) in %.1fs", event.id, suite.name, len(results),
                 time.monotonic() - started)
        meter = suite_cost.RunMeter()
        meter.add(suite.name, time.monotonic() - started, len(results))
        self._costs(meter)
        if lost.is_set():
            log.warning("event %s was claimed by another agent; dropping %s", event.id,
                        suite.name)
            return
        # each step retried in place on a lost broker: a finished test is never run again
        self._finish_suite(event, ledger, suite.name, results)
