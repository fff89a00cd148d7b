"""One way for tests to call ``rbs`` and one way to write a suite.

``rbs`` runs the installed CLI as a user does: its own process, with a timeout so a hung
command fails its test instead of the whole run. ``rbs_in_process`` calls ``main(argv)`` here,
for tests that read what the command wrote with ``capsys`` or need no process.
``write_suite`` writes one suite file as the catalog reads them: ``<folder>/<name>.yml``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

from redis_benchmarks_spec.cli.main import main

REPO = Path(__file__).resolve().parents[1]
#: the CLI the tests run; with PYTHONPATH set, it imports the checkout under test
RBS = str(REPO / ".venv" / "bin" / "rbs")


def rbs(*args: str, timeout: float = 300, env: Mapping[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``rbs *args`` in its own process; its output captured as text, never raising on a
    non-zero exit. ``env`` adds to (or overrides) this process's environment."""
    return subprocess.run([RBS, *args], capture_output=True, text=True, timeout=timeout,
                          check=False, env={**os.environ, **env} if env is not None else None,
                          cwd=cwd)


def rbs_in_process(argv: list[str]) -> int:
    """``rbs argv`` through ``main`` in this process; its exit code."""
    return int(main(argv))


def write_suite(folder: Path, name: str, text: str) -> Path:
    """Write ``text`` as the suite file ``<folder>/<name>.yml`` (the folder made if needed)
    and return the file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yml"
    path.write_text(text)
    return path
