"""The standing confirmer (``rbs confirmer``): confirmation of a tracked branch's changes
as a service that the lab keeps running (docs/watch.md, docs/services.md).

Its life, top to bottom: every ``interval_s`` it steps the confirmer of each watched branch
(:func:`watch_confirm.step`: re-runs asked for new candidates, decisions of those whose
re-runs ended, bisections of confirmed ranges, alerts), each candidate under a lease so
that two confirmers (a second host, or a replay beside the service) never work on one
candidate twice. It stops after the current step on SIGTERM.

A bisection waits for builds and runs (hours at worst), so the service does not hold its
steps for it: each confirmed range is bisected in a thread of its own (one at a time, under
the candidate's lease), while the steps go on asking for and deciding other candidates'
re-runs; the bisection's alert is told at the first step after it ends. A bisection that
fails for a server that does not answer is tried again at a later step; one that fails
otherwise is logged with its reason and left ``bisecting`` for the next start.

A stored candidate that cannot be read, or whose data breaks its confirmation (malformed
JSON, a series step without its fields, a re-run reference that names nothing), is
dead-lettered: copied with its reason to the broker's dead-letter stream (where ``rbs admin
dead-letter`` shows the builders' and agents' dead letters; ``stream`` names the datasink
hash it came from) and removed from the candidates. The service never stops for an entry;
a broker or datasink that does not answer is logged and retried at the next step.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

import redis

from redis_benchmarks_spec.datasink import watch_store
from redis_benchmarks_spec.datasink.watch_store import BadEntry, Branch
from redis_benchmarks_spec.events.consumer import DEAD_LETTER_FIELD_PREFIX, publish
from redis_benchmarks_spec.events.messages import now_ms
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.notify.watch_confirm import (
    QUICK_STATES,
    ConfirmContext,
    Decided,
    bisect_one,
    pending,
    step,
)

log = logging.getLogger(__name__)
GROUP = "confirmer"  # what a dead letter names as the group that gave up on the entry


class DeadLetters:
    """A bad candidate's end: a dead letter in the broker, then out of the candidates."""

    def __init__(self, broker: redis.Redis, names: StreamNames, consumer: str,
                 datasink: redis.Redis, where: Branch) -> None:
        self.broker, self.names, self.consumer = broker, names, consumer
        self.datasink, self.where = datasink, where

    def __call__(self, entry: BadEntry) -> None:
        record = {"reason": entry.reason, "stream": self.where.key("candidates"),
                  "group": GROUP, "consumer": self.consumer, "entry_id": entry.id,
                  "at_ms": str(now_ms()), f"{DEAD_LETTER_FIELD_PREFIX}candidate": entry.raw}
        dead_id = publish(self.broker, self.names.dead_letter, record)
        watch_store.remove_candidate(self.datasink, self.where, entry.id)
        log.error("confirmer: candidate %s dead-lettered as %s: %s", entry.id[:40], dead_id,
                  entry.reason)


@dataclass
class ServiceConfig:
    consumer: str  # this confirmer's name (dead letters and leases name it)
    interval_s: float = 5.0


class Confirmer:
    """Steps the confirmer of every watched branch until stopped; bisects apart."""

    def __init__(self, contexts: list[ConfirmContext], config: ServiceConfig,
                 on_decided: Callable[[Decided], None] | None = None) -> None:
        self.contexts = contexts
        self.config = config
        self.on_decided = on_decided
        self._stop = threading.Event()
        self._bisection: threading.Thread | None = None  # at most one at a time
        self._bisected: queue.SimpleQueue[Decided] = queue.SimpleQueue()
        self._given_up: set[str] = set()  # bisections that failed for another reason

    def stop(self) -> None:
        self._stop.set()

    def once(self) -> list[Decided]:
        """One step of each branch (a server that does not answer skips that branch), a
        bisection started when none runs, and what ended bisections told."""
        out: list[Decided] = []
        for ctx in self.contexts:
            try:
                decided = step(ctx, QUICK_STATES)
                self._start_bisection(ctx)
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                log.warning("confirmer: %s/%s %s: %s; retrying at the next step",
                            ctx.where.org, ctx.where.repo, ctx.where.branch, exc)
                continue
            except redis.ResponseError as exc:  # e.g. the candidates key is not a hash
                log.error("confirmer: %s/%s %s: %s: the branch's watch keys are damaged; "
                          "retrying at the next step", ctx.where.org, ctx.where.repo,
                          ctx.where.branch, exc)
                continue
            out += decided
        while not self._bisected.empty():
            out.append(self._bisected.get())
        for d in out:
            self._say(d)
        return out

    def bisecting(self) -> bool:
        """True while a bisection runs."""
        return self._bisection is not None and self._bisection.is_alive()

    def _start_bisection(self, ctx: ConfirmContext) -> None:
        if self.bisecting():
            return
        waiting = [c for c in pending(ctx, "bisecting") if c.id not in self._given_up]
        if waiting:
            self._bisection = threading.Thread(
                target=self._bisect, args=(ctx, waiting[0]), daemon=True,
                name=f"bisect-{waiting[0].after[:10]}")
            self._bisection.start()

    def _bisect(self, ctx: ConfirmContext, c: watch_store.Candidate) -> None:
        try:
            decided = bisect_one(ctx, c)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            log.warning("confirmer: bisection of %s: %s; retrying at a later step",
                        c.after[:10], exc)
            return
        except Exception as exc:  # noqa: BLE001  (a thread's error has nowhere else to go)
            self._given_up.add(c.id)
            log.error("confirmer: bisection of %s failed: %s: %s; left bisecting until the "
                      "next start", c.after[:10], type(exc).__name__, exc)
            return
        if decided is not None:
            self._bisected.put(decided)

    def _say(self, d: Decided) -> None:
        c = d.candidate
        log.info("confirmer: change at %s: %s %s", c.after[:10], c.state, c.reason)
        for problem in d.problems:
            log.warning("confirmer: change at %s: %s", c.after[:10], problem)
        if self.on_decided is not None:
            self.on_decided(d)

    def run(self, max_steps: int | None = None) -> int:
        """Step until :meth:`stop` (or ``max_steps``); the number of steps taken. A
        bisection still running is left to its thread (the candidate stays ``bisecting``
        and is bisected again at the next start: its builds are reused)."""
        steps = 0
        while not self._stop.is_set() and (max_steps is None or steps < max_steps):
            self.once()
            steps += 1
            self._stop.wait(self.config.interval_s)
        return steps
