"""Nothing lost: push result files from disk, remember what was pushed, never delete.

Result documents stay where the runner wrote them. After a file is pushed, a marker
``<file>.pushed`` beside it records which datasink took it (its URL without password, for
people, and the datasink's id, a random value the datasink keeps under
:data:`keys.DATASINK_ID_KEY`, to decide), so a later push of the same
directory to the same datasink skips it, while a push to a new (or wiped) datasink sends
it again. Pushes are idempotent anyway (duplicate policy LAST), so re-sending is harmless.
When the datasink is unreachable, every file stays on disk and the report says so.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import redis

from redis_benchmarks_spec.datasink import keys
from redis_benchmarks_spec.datasink.writer import BATCH_RUNS, PushOptions, PushReport, push_results
from redis_benchmarks_spec.results import document
from redis_benchmarks_spec.results.document import RunResult

MARKER_SUFFIX = ".pushed"
# what a datasink failure looks like from here: the server cannot be reached or refuses us
UNREACHABLE = (redis.ConnectionError, redis.TimeoutError)


@dataclass(frozen=True)
class DatasinkConfig:
    """How to reach a datasink: URL, credentials and TLS files, in one place.

    Any TLS file turns a ``redis://`` URL into ``rediss://``.
    """

    url: str
    username: str | None = None
    password: str | None = None
    ssl_ca_certs: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    timeout_s: float = 10.0

    @property
    def uses_tls(self) -> bool:
        return self.url.startswith("rediss://") or any(
            (self.ssl_ca_certs, self.ssl_certfile, self.ssl_keyfile))

    @property
    def display_url(self) -> str:
        """The URL without any password, for messages and markers."""
        parts = urlsplit(self._effective_url())
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        if parts.username:
            netloc = f"{parts.username}@{netloc}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    def _effective_url(self) -> str:
        if self.uses_tls and self.url.startswith("redis://"):
            return "rediss://" + self.url[len("redis://"):]
        return self.url


def connect(config: DatasinkConfig) -> redis.Redis:
    """A client for ``config`` (no I/O yet: the first command connects)."""
    kwargs: dict[str, object] = {
        "socket_timeout": config.timeout_s,
        "socket_connect_timeout": config.timeout_s,
    }
    if config.username is not None:
        kwargs["username"] = config.username
    if config.password is not None:
        kwargs["password"] = config.password
    if config.uses_tls:
        kwargs.update({name: value for name, value in (
            ("ssl_ca_certs", config.ssl_ca_certs), ("ssl_certfile", config.ssl_certfile),
            ("ssl_keyfile", config.ssl_keyfile)) if value})
    return redis.Redis.from_url(config._effective_url(), **kwargs)


def datasink_id(client: redis.Redis) -> str:
    """The datasink's identity, created on first use (one round trip)."""
    fresh = uuid.uuid4().hex
    previous = client.set(keys.DATASINK_ID_KEY, fresh, nx=True, get=True)
    if previous is None:
        return fresh
    return previous.decode() if isinstance(previous, bytes) else str(previous)


def marker_path(result_file: Path) -> Path:
    """Where the "pushed" marker of ``result_file`` lives."""
    return result_file.with_name(result_file.name + MARKER_SUFFIX)


def find_result_files(results_dir: Path) -> list[Path]:
    """Every result document under ``results_dir`` (other JSON, like summaries, is left out)."""
    if not results_dir.is_dir():
        raise FileNotFoundError(f"results directory {results_dir} does not exist")
    return document.find_result_files(results_dir)


def push_results_dir(client: redis.Redis, results_dir: Path,
                     options: PushOptions | None = None, force: bool = False) -> PushReport:
    """Push every result document under ``results_dir`` not yet pushed to this datasink.

    ``force`` re-pushes files already marked. Files are never deleted or changed; a marker is
    written beside each pushed one. If the datasink cannot be reached, the report lists every
    file not pushed and ``error`` says why.
    """
    files: list[tuple[Path, RunResult | None]] = [
        (f, None) for f in find_result_files(results_dir)]
    return push_result_files(client, files, options, force)


def push_result_files(client: redis.Redis, files: list[tuple[Path, RunResult | None]],
                      options: PushOptions | None = None, force: bool = False) -> PushReport:
    """:func:`push_results_dir` of given files; a document given beside its path (a run
    this process just made) is pushed as it is, only a None is read from the file."""
    report = PushReport()
    try:
        sink = datasink_id(client)
    except UNREACHABLE as exc:
        report.error = f"datasink unreachable: {exc}"
        report.files_not_pushed = [str(f) for f, _ in files]
        return report
    known: set[str] = set()  # series created during this push: later points go by TS.MADD
    todo = []
    for path, result in files:
        if not force and _pushed_to(path) == sink:
            report.files_already_pushed.append(str(path))
        else:
            todo.append((path, result))
    for first in range(0, len(todo), BATCH_RUNS):
        try:
            _push_files(client, todo[first:first + BATCH_RUNS], (sink, options), report, known)
        except UNREACHABLE as exc:
            report.error = f"datasink unreachable while pushing {todo[first][0]}: {exc}"
            report.files_not_pushed += [str(f) for f, _ in todo[first:]]
            break
    return report


def _push_files(client: redis.Redis, files: list[tuple[Path, RunResult | None]],
                how: tuple[str, PushOptions | None], report: PushReport,
                known: set[str]) -> None:
    """Push a batch of files in one round trip, then mark each file whose run went."""
    sink, options = how
    loaded: list[tuple[Path, RunResult]] = []
    for path, result in files:
        if result is None:
            try:
                result = RunResult.read(path)
            except ValueError as exc:
                report.failed[str(path)] = str(exc)
                report.files_not_pushed.append(str(path))
                continue
        loaded.append((path, result))
    one = push_results(client, [r for _p, r in loaded], options, known)
    report.merge(one)
    pushed = set(one.pushed)
    url = client_url(client)
    for path, result in loaded:
        if result.run_id in one.failed:
            report.files_not_pushed.append(str(path))
        elif result.run_id in pushed:
            _write_marker(path, sink, url, [result.run_id], len(keys.series_ids(result)))


def client_url(client: redis.Redis) -> str:
    """``redis://host:port/db`` of ``client`` (never its password)."""
    kwargs = client.connection_pool.connection_kwargs
    scheme = "rediss" if client.connection_pool.connection_class.__name__.startswith("SSL") \
        else "redis"
    if "path" in kwargs:
        return f"unix://{kwargs['path']}"
    return (f"{scheme}://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
            f"/{kwargs.get('db', 0)}")


def _write_marker(path: Path, sink: str, url: str, run_ids: list[str], datapoints: int) -> None:
    marker = marker_path(path)
    tmp = marker.with_suffix(marker.suffix + ".tmp")
    tmp.write_text(json.dumps({
        "datasink_id": sink, "datasink_url": url, "pushed_ms": int(time.time() * 1000),
        "pushed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "run_ids": run_ids, "datapoints": datapoints,
    }, sort_keys=True))
    tmp.replace(marker)


def _pushed_to(path: Path) -> str | None:
    """The datasink id recorded in ``path``'s marker, or None if it has none."""
    marker = marker_path(path)
    try:
        data = json.loads(marker.read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError:
        return None  # a torn marker only means "push again", which is idempotent
    return data.get("datasink_id") if isinstance(data, dict) else None
