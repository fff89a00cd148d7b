"""The lab's folder and its state file: where each service keeps its data and log, and the
pid, argv and URL of each process ``rbs lab up`` started (so ``rbs lab down`` and ``rbs lab
replay`` find them from another process). Written once by ``up``, read by the others."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

STATE_VERSION = 1
STATE_FILE = "lab.json"


class LabStateError(RuntimeError):
    """The lab's state file is missing or unreadable; the message names it."""


@dataclass(frozen=True)
class Service:
    """One process the lab started: its name, pid, argv and log."""

    name: str
    pid: int
    argv: list[str]
    log: str
    # environment besides the lab's (no secret: those come from the keeper's, by kind)
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class LabState:
    """What ``rbs lab up`` started and where everything is."""

    root: str
    broker_url: str
    datasink_url: str
    api_url: str
    github_url: str
    source: str
    prefix: str
    platforms: dict[str, list[int]]  # platform -> its CPU set
    suites_dir: str
    services: list[Service] = field(default_factory=list)
    site_url: str = ""  # the lab's site (rbs site); "" in state files written before it
    version: int = STATE_VERSION

    @property
    def folder(self) -> Path:
        return Path(self.root)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> LabState:
        services = [Service(**s) for s in raw.pop("services", [])]
        return cls(**raw, services=services)


def state_path(root: Path) -> Path:
    return root / STATE_FILE


def save(state: LabState) -> None:
    path = state_path(state.folder)
    partial = path.with_suffix(".partial")
    partial.write_text(state.to_json())
    partial.replace(path)


def load(root: Path) -> LabState:
    """The state ``rbs lab up`` wrote in ``root``."""
    path = state_path(root)
    try:
        raw = json.loads(path.read_text())
        if raw.get("version") != STATE_VERSION:
            raise LabStateError(f"{path}: state version {raw.get('version')!r} is not "
                                f"{STATE_VERSION}")
        return LabState.from_dict(raw)
    except FileNotFoundError:
        raise LabStateError(f"{path}: no lab was started in {root}") from None
    except (OSError, ValueError, TypeError) as exc:
        raise LabStateError(f"{path}: unreadable ({exc})") from None
