"""Persistence tests: ``dbconfig.rdb_checks`` and ``dbconfig.wait_for_bgsave``.

Both measure one save or load, so both fail closed: a number is only kept when the server's
own counters prove the command ran once, on the whole dataset, and left it unchanged.

- ``rdb_checks``: before the measured command, the dataset must hold exactly ``keyspacelen``
  keys and each sampled key a value of ``value_size`` bytes; for ``load`` the dataset is saved
  and flushed first (untimed). Counters are reset (CONFIG RESETSTAT) so that afterwards
  commandstats must show exactly one successful SAVE (or DEBUG), the sampled values must be
  byte-equal and, for a load, INFO must report every key loaded and none expired.
- ``wait_for_bgsave``: BGSAVE answers as soon as it forks, so the client's latency is fork
  time. After the client, wait until no background save is running, confirm one finished
  after the client started (``rdb_last_save_time`` advanced, status ok, no AOF, no save
  points), and return ``RdbLastBgsaveTimeSec`` and ``RdbLastForkUsec``: the exporter finds
  them beside ``ALL STATS.Totals`` (``loadgen.result.exporter_data``; the tool's own data is
  left as the tool wrote it).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.common.errors import TestRunError
from redis_benchmarks_spec.suites.dbconfig import DbConfig, RdbChecks

BGSAVE_TIMEOUT_S = 3600.0


class PersistenceCheckFailed(TestRunError):
    """A persistence test's setup or completion check failed; the number is not kept."""


@dataclass
class PersistenceChecks:
    """The checks one suite asks for, around its measured run."""

    client: redis.Redis
    db: DbConfig
    topology_is_single_node: bool = True
    bgsave_timeout_s: float = BGSAVE_TIMEOUT_S
    _values: list[Any] = field(default_factory=list)
    _save_time_before: int | None = None
    _saves_before: int | None = None  # INFO rdb_saves (Redis >= 7.0)

    @property
    def active(self) -> bool:
        return self.db.rdb_checks is not None or self.db.wait_for_bgsave

    def before_run(self) -> None:
        """Untimed setup; call after the preload and keyspace check, before the INFO snapshot."""
        if self.active and not self.topology_is_single_node:
            raise PersistenceCheckFailed("rdb_checks and wait_for_bgsave measure one "
                                         "standalone primary (no replicas, no cluster)")
        checks = self.db.rdb_checks
        if checks is not None:
            self._values = self._sampled(checks, "before the run")
            if checks.operation == "load":
                if not self.client.save():
                    raise PersistenceCheckFailed("rdb_checks: the setup SAVE failed")
                self.client.execute_command("FLUSHALL", "SYNC")
                if self.client.dbsize() != 0:
                    raise PersistenceCheckFailed("rdb_checks: the database is not empty "
                                                 "after FLUSHALL")
            self.client.config_resetstat()
        if self.db.wait_for_bgsave:
            info = self.client.info("persistence")
            self._save_time_before = int(info["rdb_last_save_time"])
            self._saves_before = int(info["rdb_saves"]) if "rdb_saves" in info else None

    def metrics(self) -> dict[str, float]:
        """wait_for_bgsave: wait for the save, confirm it, and return its figures (placed
        beside the tool's totals for the exporter); {} otherwise."""
        return self._bgsave_metrics() if self.db.wait_for_bgsave else {}

    def verify(self) -> None:
        """rdb_checks' completion checks (after the measurements are stored)."""
        if self.db.rdb_checks is not None:
            self._verify(self.db.rdb_checks)

    def _sampled(self, checks: RdbChecks, when: str) -> list[Any]:
        size = self.client.dbsize()
        if size != checks.keyspacelen:
            raise PersistenceCheckFailed(f"rdb_checks: {size} keys {when}, expected "
                                         f"{checks.keyspacelen}")
        values = [self.client.get(k) for k in checks.sample_keys]
        for key, value in zip(checks.sample_keys, values):
            if value is None or len(value) != checks.value_size:
                got = "missing" if value is None else f"{len(value)} bytes"
                raise PersistenceCheckFailed(f"rdb_checks: sample key {key!r} {when}: {got}, "
                                             f"expected {checks.value_size} bytes")
        return values

    def _verify(self, checks: RdbChecks) -> None:
        # command counts first: the checks below issue commands of their own
        stats = self.client.info("commandstats").get(f"cmdstat_{checks.command}", {})
        calls = (stats.get("calls", 0), stats.get("failed_calls", 0),
                 stats.get("rejected_calls", 0))
        if calls != (1, 0, 0):
            raise PersistenceCheckFailed(
                f"rdb_checks: expected exactly one successful {checks.command.upper()}, "
                f"commandstats say calls={calls[0]} failed={calls[1]} rejected={calls[2]}")
        if self._sampled(checks, "after the run") != self._values:
            raise PersistenceCheckFailed("rdb_checks: sampled values changed during the run")
        if checks.operation == "load":
            info = self.client.info("persistence")
            loaded = info.get("rdb_last_load_keys_loaded")
            expired = info.get("rdb_last_load_keys_expired")
            if loaded is not None and (loaded, expired) != (checks.keyspacelen, 0):
                raise PersistenceCheckFailed(f"rdb_checks: the load reported {loaded} keys "
                                             f"loaded, {expired} expired; expected "
                                             f"{checks.keyspacelen} and 0")

    def _bgsave_metrics(self) -> dict[str, float]:
        deadline = time.monotonic() + self.bgsave_timeout_s
        while int(self.client.info("persistence").get("rdb_bgsave_in_progress", 1)):
            if time.monotonic() > deadline:
                raise PersistenceCheckFailed(f"wait_for_bgsave: the background save did not "
                                             f"finish within {self.bgsave_timeout_s:.0f}s")
            time.sleep(0.2)
        info = self.client.info()
        save_points = str(self.client.config_get("save").get("save") or "")
        reason = _unconfirmed(self._save_time_before, self._saves_before, info, save_points)
        if reason:
            raise PersistenceCheckFailed(f"wait_for_bgsave: {reason}")
        return {"RdbLastBgsaveTimeSec": int(info["rdb_last_bgsave_time_sec"]),
                "RdbLastForkUsec": int(info["latest_fork_usec"])}


def _unconfirmed(before: int | None, saves_before: int | None, info: dict[str, Any],
                 save_points: str) -> str:
    """Why the finished save cannot be attributed to the client's BGSAVE ('' when it can)."""
    if before is None or "rdb_last_save_time" not in info:
        return "no save time recorded before the run"
    if saves_before is not None and "rdb_saves" in info:
        # the save counter proves a save even within the same second
        if int(info["rdb_saves"]) <= saves_before:
            return "no save finished after the client started (INFO rdb_saves did not grow)"
    elif int(info["rdb_last_save_time"]) <= before:
        return ("no background save finished after the client started (rdb_last_save_time "
                "did not advance; saves shorter than a second cannot be told apart)")
    if info.get("rdb_last_bgsave_status") != "ok":
        return f"the background save failed (status {info.get('rdb_last_bgsave_status')})"
    if info.get("aof_enabled") != 0:
        return "AOF is enabled: its rewrites fork too, the fork time would be ambiguous"
    if save_points.strip():
        return f"save points are configured ({save_points!r}): an automatic save may be the " \
               f"one measured"
    if int(info.get("rdb_last_bgsave_time_sec", -1)) < 0:
        return "INFO reports no finished background save"
    return ""
