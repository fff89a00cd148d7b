"""Measure how long a daemon shows a broker password in /proc/<pid>/cmdline.

    .venv/bin/python scripts/argv_window.py [--runs 5]

For each of ``rbs agent|builder|api`` started with ``--broker redis://:PW@...`` (refused),
polls /proc/<pid>/cmdline from the moment Popen returns until the process exits and prints
for how long the password was seen (that process is the caller's: the password is in its
argv from exec; rbs refuses and exits). Then starts ``rbs agent`` the supported way (URL
without password, $RBS_BROKER_PASSWORD_FILE) against a password-protected redis-server and
polls its cmdline and environ for 5 s: the window there is zero.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PW = "window-pw-8812"
RBS = str(Path(sys.executable).parent / "rbs")


def seen_for(proc: subprocess.Popen[bytes], seconds: float) -> tuple[float, int]:
    first = last = None
    polls = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end and proc.poll() is None:
        for what in ("cmdline", "environ"):
            try:
                text = Path(f"/proc/{proc.pid}/{what}").read_bytes()
            except OSError:
                continue
            if PW.encode() in text:
                now = time.monotonic()
                first, last = first or now, now
        polls += 1
    return (last - first if first is not None and last is not None else 0.0), polls


def refused(command: str, runs: int) -> None:
    windows, lives = [], []
    for _ in range(runs):
        started = time.monotonic()
        proc = subprocess.Popen([RBS, command, "--broker", f"redis://:{PW}@127.0.0.1:1"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        window, _ = seen_for(proc, 30)
        proc.wait(timeout=30)
        lives.append(time.monotonic() - started)
        windows.append(window)
        assert proc.returncode == 2, proc.returncode
    print(f"rbs {command} --broker redis://:PW@...: refused (exit 2); lived "
          f"{statistics.median(lives) * 1000:.0f} ms (median of {runs}), password seen "
          f"for {statistics.median(windows) * 1000:.0f} ms of that")


def supported() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        from redis_benchmarks_spec.common.process import free_port
        port = free_port()
        server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                   "--save", "", "--requirepass", PW, "--dir", tmp],
                                  stdout=subprocess.DEVNULL)
        (d / "pw").write_text(PW)
        (d / "suites").mkdir()
        env = {**os.environ, "RBS_BROKER_PASSWORD_FILE": str(d / "pw"),
               "RBS_DATASINK_PASSWORD_FILE": str(d / "pw"), "RBS_ARTIFACT_KEY": "k" * 64}
        url = f"redis://127.0.0.1:{port}"
        time.sleep(0.3)
        agent = subprocess.Popen([RBS, "agent", "--broker", url, "--platform", "p",
                                  "--suites-dir", str(d / "suites"), "--work-dir", str(d / "w"),
                                  "--results-dir", str(d / "r"), "--datasink", url],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            window, polls = seen_for(agent, 5.0)
            alive = agent.poll() is None
        finally:
            for proc in (agent, server):
                proc.terminate()
                proc.wait(timeout=30)
    print(f"rbs agent with $RBS_BROKER_PASSWORD_FILE: running={alive}, {polls} polls of "
          f"cmdline+environ over 5 s, password seen for {window * 1000:.0f} ms")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    for command in ("agent", "builder", "api"):
        refused(command, args.runs)
    supported()
    return 0


if __name__ == "__main__":
    sys.exit(main())
