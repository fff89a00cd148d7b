"""Whose embedded datasink this is.

Every checkout of the repository keeps its own embedded datasink, in
``<checkout>/.cache/datasink`` (its port is recorded there too), so ``make run`` in a second
clone neither pushes into the first clone's server nor offers to stop it. An installed
package (no checkout around it) keeps one in the user data folder. That is the owner a
command speaks for: :func:`this_owner`.

The owner of a running server is the one whose command started it, recorded beside its
pidfile when it starts (``redis-stack-server.owner``, with the server's pid, so a record
left by an earlier server is never taken for the current one's). ``status`` and ``up`` say
whose it is; ``down`` stops only a server whose recorded owner is the caller. A datasink
folder named explicitly (``--datasink-data-dir``) may be another owner's: the commands using
it say that they share it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs
import psutil

from redis_benchmarks_spec.common.ports import listener_pid

APP = "redis-benchmarks-spec"
#: the folder holding the package: a checkout when it has the project's pyproject.toml
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
OWNERFILE = "redis-stack-server.owner"
RECORD_VERSION = 1

CHECKOUT = "checkout"
USER_FOLDER = "user data folder"
KINDS = (CHECKOUT, USER_FOLDER)


class OwnerRecordError(ValueError):
    """An owner file that does not hold an owner record; names the file."""


@dataclass(frozen=True)
class Owner:
    """A checkout (its root) or the user data folder of an installed package."""

    kind: str
    path: Path

    def __str__(self) -> str:
        return f"{self.kind} {self.path}"

    @property
    def datasink_dir(self) -> Path:
        """Where this owner's embedded datasink lives by default."""
        if self.kind == CHECKOUT:
            return self.path / ".cache" / "datasink"
        return self.path / "datasink"

    def as_dict(self) -> dict[str, str]:
        """Plain values for JSON output and the owner file."""
        return {"kind": self.kind, "path": str(self.path)}


def is_checkout(root: Path) -> bool:
    """True when ``root`` is a source tree of this project (not site-packages)."""
    return (root / "pyproject.toml").is_file() and (root / "redis_benchmarks_spec").is_dir()


def this_owner() -> Owner:
    """The owner this process speaks for: the checkout its code runs from, else the user
    data folder."""
    if is_checkout(PACKAGE_ROOT):
        return Owner(CHECKOUT, PACKAGE_ROOT)
    return Owner(USER_FOLDER, Path(platformdirs.user_data_dir(APP)).resolve())


def record(data_dir: Path, pid: int, owner: Owner) -> None:
    """Record ``owner`` as the owner of the server ``pid`` working in ``data_dir``."""
    path = data_dir / OWNERFILE
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"version": RECORD_VERSION, "pid": pid, **owner.as_dict()}) + "\n")
    tmp.replace(path)  # a reader sees the old record or the new one, never half of one


def recorded(data_dir: Path, pid: int) -> Owner | None:
    """The recorded owner of server ``pid`` in ``data_dir``; None when none was recorded
    for that pid (a server started before owners were recorded, or a record left by an
    earlier server)."""
    path = data_dir / OWNERFILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
        kind, where, for_pid = data["kind"], data["path"], data["pid"]
    except (ValueError, KeyError, TypeError) as exc:
        raise OwnerRecordError(f"{path} does not hold an owner record: {text[:80]!r}") from exc
    if kind not in KINDS or not isinstance(where, str) or not Path(where).is_absolute() \
            or not isinstance(for_pid, int):
        raise OwnerRecordError(f"{path} does not hold an owner record: {text[:80]!r}")
    return Owner(kind, Path(where)) if for_pid == pid else None


def forget(data_dir: Path) -> None:
    """Remove the owner record (its server stopped)."""
    (data_dir / OWNERFILE).unlink(missing_ok=True)


def whose(owner: Owner | None, me: Owner) -> str:
    """``this checkout (/work/a)``, ``checkout /work/b (shared: not this checkout's)`` or
    ``not recorded (...)``: how a command names the owner of the datasink it uses."""
    if owner is None:
        return "not recorded (started by an older rbs)"
    if owner == me:
        return f"this {owner.kind} ({owner.path})"
    return f"{owner} (shared: not this {me.kind}'s)"


def holder_of(port: int) -> str:
    """``the embedded datasink of checkout /x (pid N)`` when an embedded datasink listens on
    ``port`` (told by the owner record in its working folder), else ''."""
    pid = listener_pid(port)
    if pid is None:
        return ""
    try:
        folder = Path(psutil.Process(pid).cwd())
    except psutil.Error:
        return ""
    try:
        owner = recorded(folder, pid)
    except OwnerRecordError:
        return ""
    return f"the embedded datasink of {owner} (pid {pid})" if owner else ""
