"""``dbconfig.dataset``: an RDB file the server starts from, fetched once into a cache.

Sources are http(s) URLs, ``s3://bucket/key`` (boto3, the ``s3`` extra) and local paths. Each
is copied once into a content-addressed cache (``blobs/<sha256>.rdb``) with its size and
checksum; an index entry per source remembers which blob it gave, so the next run reuses the
file after checking its size. The runner then puts the blob in the server's ``dir`` as
``dump.rdb`` (a hard link when the cache shares the file system: Redis replaces that file by
rename when it saves, so the cached copy is never written) and starts the server with
``--dbfilename dump.rdb``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

import platformdirs

from redis_benchmarks_spec.common.errors import TestRunError
from redis_benchmarks_spec.common.paths import absolute

CHUNK = 1 << 20
RDB_MAGIC = b"REDIS"  # every RDB file starts with REDIS and a 4-digit version
DBFILENAME = "dump.rdb"


class DatasetError(TestRunError):
    """The dataset could not be fetched or is not an RDB file; one line naming the source."""


@dataclass(frozen=True)
class CachedDataset:
    """One source's RDB in the cache, and what was verified when it arrived."""

    source: str
    path: Path
    sha256: str
    size: int

    def record(self) -> dict[str, Any]:
        """What the result document keeps about the dataset."""
        return {"source": self.source, "sha256": self.sha256, "size": self.size}


def default_cache_dir() -> Path:
    """``$RBS_DATASET_CACHE``, else the user cache dir (shared by every run on the host)."""
    env = os.environ.get("RBS_DATASET_CACHE")
    return absolute(env) if env else Path(platformdirs.user_cache_dir("redis-benchmarks-spec")) \
        / "datasets"


def fetch(source: str, cache_dir: Path, timeout_s: float = 60.0) -> CachedDataset:
    """The cached RDB of ``source``, fetching it first when the cache does not hold it."""
    index = cache_dir / "index" / f"{hashlib.sha256(source.encode()).hexdigest()}.json"
    cached = _from_index(index, source)
    if cached is not None:
        return cached
    (cache_dir / "blobs").mkdir(parents=True, exist_ok=True)
    index.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix="fetch-", suffix=".part", dir=cache_dir / "blobs")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            digest, size = _download(source, out, timeout_s)
        check_rdb(tmp, source)
        blob = cache_dir / "blobs" / f"{digest}.rdb"
        os.replace(tmp, blob)
    finally:
        tmp.unlink(missing_ok=True)
    entry = CachedDataset(source, blob, digest, size)
    index.write_text(json.dumps({**asdict(entry), "path": str(blob)}))
    return entry


def _from_index(index: Path, source: str) -> CachedDataset | None:
    """A cache hit: the index names a blob that is still there with the recorded size."""
    if not index.exists() or _is_local(source):
        return None  # a local file may have changed since: it is re-read (cheap, no network)
    try:
        raw = json.loads(index.read_text())
        entry = CachedDataset(raw["source"], Path(raw["path"]), raw["sha256"], int(raw["size"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if entry.source != source or not entry.path.is_file() \
            or entry.path.stat().st_size != entry.size:
        return None
    return entry


def _is_local(source: str) -> bool:
    return urlparse(source).scheme not in ("http", "https", "s3")


def _download(source: str, out: IO[bytes], timeout_s: float) -> tuple[str, int]:
    """Copy ``source`` into ``out``; returns (sha256, size)."""
    sink = _HashingWriter(out, source)
    scheme = urlparse(source).scheme
    if scheme in ("http", "https"):
        _http(source, sink, timeout_s)
    elif scheme == "s3":
        _s3(source, sink)
    else:
        _local(source, sink)
    return sink.hexdigest(), sink.size


def max_dataset_bytes() -> int:
    """The largest RDB a suite may bring (``$RBS_MAX_DATASET_BYTES``, default 32 GiB): a
    suite's source is not trusted to be finite (``/dev/zero``, an endless HTTP body)."""
    try:
        return int(os.environ.get("RBS_MAX_DATASET_BYTES", str(32 << 30)))
    except ValueError:
        return 32 << 30


class _HashingWriter:
    """A file-like sink that hashes and counts what passes through, up to a size limit."""

    def __init__(self, out: IO[bytes], source: str = "") -> None:
        self.out, self.hash, self.size = out, hashlib.sha256(), 0
        self.source, self.limit = source, max_dataset_bytes()

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise DatasetError(f"dataset {self.source}: larger than {self.limit} bytes "
                               "(RBS_MAX_DATASET_BYTES)")
        self.hash.update(data)
        return self.out.write(data)

    def hexdigest(self) -> str:
        return self.hash.hexdigest()


def _copy(read: Callable[[int], bytes], sink: _HashingWriter) -> None:
    while chunk := read(CHUNK):
        sink.write(chunk)


def _http(url: str, sink: _HashingWriter, timeout_s: float) -> None:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            expected = response.headers.get("Content-Length")
            _copy(response.read, sink)
    except urllib.error.HTTPError as exc:
        raise DatasetError(f"dataset {url}: HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise DatasetError(f"dataset {url} is unreachable: {exc.reason}") from exc
    except (TimeoutError, ConnectionError) as exc:
        raise DatasetError(f"dataset {url} is unreachable: {exc}") from exc
    if expected is not None and expected.isdigit() and int(expected) != sink.size:
        raise DatasetError(f"dataset {url}: got {sink.size} bytes, Content-Length said "
                           f"{expected} (truncated download)")


def _s3(url: str, sink: _HashingWriter) -> None:
    try:
        import boto3
        import botocore.exceptions
    except ImportError as exc:
        raise DatasetError(f"dataset {url}: s3:// needs boto3 "
                           f"(pip install 'redis-benchmarks-spec[s3]')") from exc
    parsed = urlparse(url)
    try:
        # endpoint and credentials come from the usual AWS settings (AWS_ENDPOINT_URL, ...)
        s3 = boto3.session.Session().client("s3")  # credentials as they are now
        s3.download_fileobj(parsed.netloc, parsed.path.lstrip("/"), sink)
    except botocore.exceptions.ClientError as exc:
        error = exc.response.get("Error", {})
        raise DatasetError(f"dataset {url}: {error.get('Code', '?')} "
                           f"{error.get('Message', '')}".rstrip()) from exc
    except botocore.exceptions.BotoCoreError as exc:
        raise DatasetError(f"dataset {url} is unreachable: {exc}") from exc


def _local(source: str, sink: _HashingWriter) -> None:
    path = Path(source.removeprefix("file://"))
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise DatasetError(f"dataset {source}: not a regular file")
        with path.open("rb") as fh:
            _copy(fh.read, sink)
    except OSError as exc:
        raise DatasetError(f"dataset {source}: cannot read: {exc.strerror or exc}") from exc


def check_rdb(path: Path, source: str) -> None:
    with path.open("rb") as fh:
        head = fh.read(9)
    if not (head.startswith(RDB_MAGIC) and head[5:9].isdigit()):
        raise DatasetError(f"dataset {source}: not an RDB file (starts with {head[:9]!r})")


def place(dataset: CachedDataset, server_dir: Path) -> list[str]:
    """Put the RDB in the server's ``dir``; returns the server arguments that load it."""
    target = server_dir / DBFILENAME
    target.unlink(missing_ok=True)
    try:
        os.link(dataset.path, target)
    except OSError:
        shutil.copyfile(dataset.path, target)  # another file system: copy
    return ["--dbfilename", DBFILENAME]


def load_timeout_s(dataset: CachedDataset, base_s: float = 15.0) -> float:
    """How long the server may take to load it: generous, ~20 MB/s on a slow disk."""
    return base_s + dataset.size / 20e6
