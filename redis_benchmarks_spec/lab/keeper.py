"""The lab's keeper: restarts a service of ``rbs lab up`` that died, as the systemd units of
docs/services.md do (``Restart=on-failure`` with ``StartLimitBurst``), and says so.

``rbs lab up`` starts it last, as ``python -m redis_benchmarks_spec.lab.keeper --dir ROOT``,
in the lab's environment. Every :data:`CHECK_S` it looks at each daemon of ``lab.json``
(the pid still runs the argv the lab started) and at the two servers (broker, datasink:
their pidfiles); one that is gone is started again, a daemon with the argv it had and the
secrets its kind reads (:data:`credentials.DAEMON_SECRETS`), a server on its port over its
own data (the broker's AOF keeps what it accepted). Each restart is a line of
``restarts.jsonl`` (service, time, new pid, how many in the window); after
:data:`MAX_RESTARTS` restarts of one service within :data:`WINDOW_S` it gives up on that
service and says so there. ``rbs lab status`` prints those lines; ``rbs lab down`` stops the
keeper first, so nothing it stops is started again.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path

from redis_benchmarks_spec.common.credentials import DAEMON_SECRETS, without_secrets
from redis_benchmarks_spec.datasink.embedded import DatasinkError, EmbeddedDatasink
from redis_benchmarks_spec.lab.state import LabState, LabStateError, load, save

log = logging.getLogger("rbs.lab.keeper")

KEEPER = "keeper"
SERVERS = ("broker", "datasink")
RESTARTS_FILE = "restarts.jsonl"
CHECK_S = 1.0
MAX_RESTARTS = 5  # per service within WINDOW_S, as StartLimitBurst=5 in the units
WINDOW_S = 600.0  # StartLimitIntervalSec=600


def restarts(root: Path) -> list[dict[str, object]]:
    """Every restart (and give-up) the keeper recorded in ``root``, oldest first."""
    path = root / RESTARTS_FILE
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            out.append(row)
    return out


def _note(root: Path, row: dict[str, object]) -> None:
    with (root / RESTARTS_FILE).open("a") as out:
        out.write(json.dumps(row) + "\n")


class Keeper:
    """One lab's keeper (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.stop = threading.Event()
        self.given_up: set[str] = set()

    def _budget_left(self, name: str) -> bool:
        recent = [r for r in restarts(self.root) if r.get("service") == name and
                  r.get("event") == "restarted" and
                  float(r.get("at", 0)) > time.time() - WINDOW_S]  # type: ignore[arg-type]
        if len(recent) < MAX_RESTARTS:
            return True
        if name not in self.given_up:
            self.given_up.add(name)
            _note(self.root, {"service": name, "event": "gave up", "at": time.time(),
                              "reason": f"{MAX_RESTARTS} restarts within {WINDOW_S:.0f} s"})
            log.error("%s: %d restarts within %.0f s; not restarting it again", name,
                      MAX_RESTARTS, WINDOW_S)
        return False

    def check(self) -> int:
        """One look at every service; how many were restarted."""
        from redis_benchmarks_spec.lab.services import alive, spawn
        state = load(self.root)
        count = 0
        for name, url in (("broker", state.broker_url), ("datasink", state.datasink_url)):
            if self._server_down(name) and self._budget_left(name):
                count += self._restart_server(name, int(url.rsplit(":", 1)[1]))
        for i, service in enumerate(state.services):
            if service.name == KEEPER or alive(service) or not self._budget_left(service.name):
                continue
            kind = service.name.split("-", 1)[0]
            env = without_secrets({**os.environ, **service.env}, DAEMON_SECRETS.get(kind, ()))
            fresh = spawn(self.root, service.name, service.argv, env)
            state.services[i] = replace(fresh, env=service.env)
            save(state)
            self._record(service.name, fresh.pid, service.pid)
            count += 1
        return count

    def _server_down(self, name: str) -> bool:
        return (self.root / name).is_dir() and not EmbeddedDatasink(self.root / name).status().running

    def _restart_server(self, name: str, port: int) -> int:
        try:
            status = EmbeddedDatasink(self.root / name, port=port).up(timeout=60)
        except DatasinkError as exc:
            log.error("%s was not running and did not start again: %s", name, exc)
            _note(self.root, {"service": name, "event": "restart failed", "at": time.time(),
                              "reason": str(exc)[:500]})
            return 0
        self._record(name, status.pid or 0, None)
        return 1

    def _record(self, name: str, pid: int, old_pid: int | None) -> None:
        _note(self.root, {"service": name, "event": "restarted", "at": time.time(), "pid": pid,
                          "old_pid": old_pid})
        log.warning("%s was not running: restarted as pid %d", name, pid)

    def run(self) -> None:
        """Check every :data:`CHECK_S` until SIGTERM; reap the children it started."""
        while not self.stop.is_set():
            try:
                self.check()
            except LabStateError as exc:  # the lab is gone (down removed lab.json)
                log.info("keeper stops: %s", exc)
                return
            _reap()
            self.stop.wait(CHECK_S)


def _reap() -> None:
    """Collect the exit status of every child that ended (the services it restarted)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def describe(root: Path) -> list[str]:
    """What ``rbs lab status`` prints about restarts: one line per service restarted."""
    lines = []
    by_service: dict[str, list[dict[str, object]]] = {}
    for row in restarts(root):
        by_service.setdefault(str(row.get("service")), []).append(row)
    for name, rows in by_service.items():
        done = [r for r in rows if r.get("event") == "restarted"]
        when = ", ".join(time.strftime("%H:%M:%S", time.localtime(float(r["at"])))  # type: ignore[arg-type]
                         for r in done[-5:])
        line = f"{name}: restarted {len(done)} time(s)" + (f", at {when}" if when else "")
        last = rows[-1]
        if last.get("event") in ("gave up", "restart failed"):
            line += f"; {last['event']}: {last.get('reason', '')}"
        lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="rbs-lab-keeper")
    p.add_argument("--dir", type=Path, required=True)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    keeper = Keeper(args.dir.resolve())
    signal.signal(signal.SIGTERM, lambda *_: keeper.stop.set())
    keeper.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["KEEPER", "Keeper", "LabState", "describe", "restarts"]
