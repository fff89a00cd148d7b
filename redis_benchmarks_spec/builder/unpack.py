"""Unpacking an artifact tarball on an agent, as if it came from an attacker.

Only regular files with plain names (no folder, no ``..``, no absolute path) are written;
links, devices and folders are refused; every member's size is bounded, and so is the total
and the ratio to the compressed size (a 500 KB gzip bomb cannot fill the disk). A garbage or
truncated archive raises :class:`UnpackError` naming the reason, never a bare ``tarfile``,
``zlib`` or ``EOFError``.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
import zlib
from pathlib import Path

MAX_MEMBERS = 16
MAX_MEMBER_BYTES = 256 * 1024 * 1024
MAX_TOTAL_BYTES = 512 * 1024 * 1024
MAX_RATIO = 64  # unpacked / packed: compiled binaries compress 3-5x
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,100}")
_COPY_BYTES = 1024 * 1024


class UnpackError(ValueError):
    """The archive is garbage, truncated, or breaks a limit."""


def _check_member(member: tarfile.TarInfo, total: int, limit: int) -> None:
    if not member.isfile():
        raise UnpackError(f"member {member.name!r} is not a regular file (type {member.type!r})")
    if not _PLAIN_NAME.fullmatch(member.name):
        raise UnpackError(f"member name {member.name!r} is not a plain file name")
    if member.size > MAX_MEMBER_BYTES:
        raise UnpackError(f"member {member.name!r} is {member.size} bytes "
                          f"(limit {MAX_MEMBER_BYTES})")
    if total + member.size > limit:
        raise UnpackError(f"unpacked size would exceed {limit} bytes")


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path) -> int:
    source = tar.extractfile(member)
    if source is None:
        raise UnpackError(f"member {member.name!r} has no data")
    # O_EXCL | O_NOFOLLOW: never through a link planted in dest, never over a file twice
    fd = os.open(dest / member.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
    written = 0
    with os.fdopen(fd, "wb") as out:
        while chunk := source.read(_COPY_BYTES):
            written += len(chunk)
            if written > member.size:
                raise UnpackError(f"member {member.name!r} is longer than its header says")
            out.write(chunk)
    if written != member.size:
        raise UnpackError(f"member {member.name!r} is truncated ({written}/{member.size} bytes)")
    return written


def unpack(data: bytes, dest: Path) -> list[str]:
    """Extract the plain files of a tar.gz into the (new or empty) folder ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise UnpackError(f"{dest} is not empty")  # never mix with files from elsewhere
    limit = min(MAX_TOTAL_BYTES, max(len(data), 1) * MAX_RATIO)
    names: list[str] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r|gz") as tar:
            for member in tar:
                if len(names) >= MAX_MEMBERS:
                    raise UnpackError(f"more than {MAX_MEMBERS} members")
                _check_member(member, total, limit)
                total += _write(tar, member, dest)
                names.append(member.name)
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise UnpackError(f"not a valid tar.gz: {type(exc).__name__}: {exc}") from exc
    except FileExistsError as exc:
        raise UnpackError(f"member {Path(exc.filename or '').name!r} appears twice") from exc
    except OSError as exc:  # gzip.BadGzipFile is an OSError
        raise UnpackError(f"not a valid tar.gz: {exc}") from exc
    if not names:
        raise UnpackError("the archive holds no file")
    return names
