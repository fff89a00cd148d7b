"""Input checks every command runs before it starts anything.

Each check either returns the validated value or raises :class:`UsageError` naming the
flag, file or value at fault, with a hint. Commands call them up front, so a bad regexp or a
non-executable binary is reported once, before any server starts.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import redis

from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.common import credentials
from redis_benchmarks_spec.events import validation

URL_SCHEMES = ("redis", "rediss", "unix")


def regexp(flag: str, value: str | None, flags: int = 0) -> re.Pattern[str] | None:
    """``value`` compiled, or None when not given."""
    if value is None:
        return None
    try:
        return re.compile(value, flags)
    except re.error as exc:
        raise UsageError(f"{flag} {value!r}", f"not a valid regular expression: {exc}",
                         "escape special characters such as ( [ + * with a backslash") from None


def ref(flag: str, value: str | None) -> str | None:
    """A branch or tag name git accepts (the rule stream messages are held to), or None."""
    if value is None:
        return None
    problem = validation.ref_problem(value)
    if problem is not None:
        raise UsageError(f"{flag} {value!r}", f"not a branch/tag name: {problem}",
                         "give the name as `git branch --list` shows it")
    return value


def executable(flag: str, value: str) -> str:
    """A binary given by path or name: it exists, is a file and may be executed."""
    found = shutil.which(value) if os.sep not in value else value
    path = Path(found) if found else Path(value)
    if not path.exists():
        raise UsageError(f"{flag} {value}", "no such file",
                         "give the path of the binary, e.g. ~/redis/src/redis-server")
    if not path.is_file():
        raise UsageError(f"{flag} {value}", "not a file")
    kind = _program_kind(path)
    if kind is None:
        raise UsageError(f"{flag} {value}", "not an ELF binary nor a script (it starts with "
                         f"{_head(path)!r})", "give the compiled program, e.g. "
                         "~/redis/src/redis-server after `make` in the Redis source")
    if not os.access(path, os.X_OK):
        raise UsageError(f"{flag} {value}", f"not executable: {kind} without the execute permission",
                         f"chmod +x {path}")
    # absolute, since servers start in their own folders; not resolved: Debian's
    # redis-server is a link to redis-check-rdb, and the name it is run by picks the program
    return str(path.absolute())


#: the first bytes of a program the kernel runs: ELF (Linux), Mach-O (macOS), a script
_MAGIC = {b"\x7fELF": "an ELF binary", b"\xcf\xfa\xed\xfe": "a Mach-O binary",
          b"\xce\xfa\xed\xfe": "a Mach-O binary", b"\xca\xfe\xba\xbe": "a Mach-O binary"}


def _head(path: Path, size: int = 16) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(size)
    except OSError:
        return b""


def _program_kind(path: Path) -> str | None:
    """What the file is, when it is a program (None: a text or data file)."""
    head = _head(path)
    if not head and not os.access(path, os.R_OK):
        return "a file"  # unreadable: the execute bit is what is left to judge
    if head.startswith(b"#!"):
        return "a script"
    return _MAGIC.get(head[:4])


def tool(flag: str, value: str | None, name: str) -> str:
    """``value`` checked when given, else ``name`` found on PATH."""
    if value:
        return executable(flag, value)
    found = shutil.which(name)
    if not found:
        raise UsageError(name, "not found on PATH", f"give {flag} or install it")
    return found


def existing_dir(flag: str, path: Path) -> Path:
    """A directory that must exist already."""
    if not path.exists():
        raise UsageError(f"{flag} {path}", "no such directory")
    if not path.is_dir():
        raise UsageError(f"{flag} {path}", "not a directory")
    return path


def writable_dir(flag: str, path: Path, create: bool = False) -> Path:
    """A directory we will write into: it exists and takes a file, or can be created.

    Probed by doing it (a temporary file), since permission bits lie for root and for
    file systems such as /proc. ``create`` leaves the directory in place.
    """
    probe = path
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        what = "not a directory" if probe == path else f"{probe} is not a directory"
        raise UsageError(f"{flag} {path}", what, "give a directory")
    if not create:
        _probe_write(flag, path, probe)
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{flag} {path}", f"cannot create it: {exc.strerror}") from None
    _probe_write(flag, path, path)
    return path


def _probe_write(flag: str, path: Path, directory: Path) -> None:
    if directory != path:
        # not created yet: the nearest existing parent must accept a new entry
        ok = os.access(directory, os.W_OK | os.X_OK) and not _read_only_fs(directory)
        if not ok:
            raise UsageError(f"{flag} {path}", f"cannot create it in {directory}",
                             "give a directory you may write to")
        return
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".rbs-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{flag} {path}", f"not writable: {exc.strerror}",
                         "give a directory you may write to") from None


def _read_only_fs(directory: Path) -> bool:
    try:
        st = os.statvfs(directory)
    except OSError:
        return True
    # /proc and /sys accept no new entries even for root
    return bool(st.f_flag & os.ST_RDONLY) or str(directory.resolve()).startswith(("/proc", "/sys"))


def output_file(flag: str, path: Path) -> Path:
    """A file we will create or overwrite: probed by opening it for append."""
    if path.is_dir():
        raise UsageError(f"{flag} {path}", "is a directory", "give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{flag} {path}", f"no such directory {parent}")
    existed = path.exists()
    try:
        with path.open("a"):
            pass
    except OSError as exc:
        raise UsageError(f"{flag} {path}", f"cannot write it: {exc.strerror}") from None
    if not existed:
        path.unlink()
    return path


def redis_url(flag: str, url: str) -> str:
    """A URL redis-py accepts (``redis://host:port``, ``rediss://``, ``unix://``)."""
    parts = urlsplit(url)
    if parts.scheme not in URL_SCHEMES:
        raise UsageError(f"{flag} {url}", "not a Redis URL", f"write redis://{url}"
                         if "://" not in url else "use redis://, rediss:// or unix://")
    try:
        if parts.scheme != "unix":
            _ = parts.port
    except ValueError:
        raise UsageError(f"{flag} {url}", "the port is not a number") from None
    if parts.scheme != "unix" and not parts.hostname:
        raise UsageError(f"{flag} {url}", "no host", "write redis://HOST:PORT")
    return url


def reachable(flag: str, display: str, client: redis.Redis) -> None:
    """The server answers PING (and accepts our credentials)."""
    try:
        client.ping()
    except redis.AuthenticationError as exc:
        raise UsageError(f"{flag} {display}", f"authentication failed: {exc}",
                         "check the username and password") from None
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise UsageError(f"{flag} {display}", f"cannot connect: {_short(exc)}",
                         "is the server running? check host and port") from None
    except redis.ResponseError as exc:
        raise UsageError(f"{flag} {display}", f"refused PING: {exc}") from None


def has_timeseries(flag: str, display: str, client: redis.Redis) -> None:
    """The server has the RedisTimeSeries module (a harmless, read-only TS.QUERYINDEX)."""
    try:
        client.execute_command("TS.QUERYINDEX", "rbs_probe=1")
    except redis.ResponseError as exc:
        if "unknown command" in str(exc).lower():
            raise UsageError(f"{flag} {display}", "has no RedisTimeSeries module",
                             "use redis-stack-server, or the embedded datasink "
                             "(`rbs datasink up`)") from None
        raise UsageError(f"{flag} {display}", f"refused TS.QUERYINDEX: {exc}") from None


def broker(flag: str, url: str, timeout_s: float = 5.0) -> redis.Redis:
    """A client of the broker at ``url`` that answered PING."""
    redis_url(flag, url)
    client = redis.Redis.from_url(url, socket_timeout=60, socket_connect_timeout=timeout_s)
    reachable(flag, display_url(url), client)
    return client


def display_url(url: str) -> str:
    """``url`` with its credentials (if any) masked, for messages."""
    return credentials.redact_url(url)


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
