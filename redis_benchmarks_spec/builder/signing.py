"""Artifact MACs: builders sign what they built, agents check before they fetch or unpack.

An artifact is identified by the sha256 and size of its bytes, the commit sha and the build
variant; its MAC is HMAC-SHA256 over those with a key only builders and agents hold. Whoever
can write to the broker can forge a build event or an artifact manifest, but not its MAC, so
an agent never runs a binary no builder made for that commit and variant.

The key comes from (first found): an explicit file (``--artifact-key-file``),
``$RBS_ARTIFACT_KEY_FILE``, ``$RBS_ARTIFACT_KEY`` (hex or text), else a per-host key file
created on first use (mode 0600) under the user data dir: a builder and an agent on one host
agree without configuration; across hosts, install the same key file on every builder and
agent (see docs/security.md).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

import platformdirs

ENV_KEY = "RBS_ARTIFACT_KEY"
ENV_KEY_FILE = "RBS_ARTIFACT_KEY_FILE"
MIN_KEY_BYTES = 16
DOMAIN = b"rbs-artifact-v1"
CACHE_DOMAIN = b"rbs-build-cache-v1"


class ArtifactKeyError(ValueError):
    """The artifact key is missing, unreadable or too short."""


def default_key_file() -> Path:
    return Path(platformdirs.user_data_dir("redis-benchmarks-spec")) / "artifact.key"


def _read_key_file(path: Path) -> bytes:
    try:
        key = path.read_bytes().strip()
    except OSError as exc:
        raise ArtifactKeyError(f"artifact key file {path}: {exc.strerror or exc}") from exc
    if len(key) < MIN_KEY_BYTES:
        raise ArtifactKeyError(f"artifact key file {path}: shorter than {MIN_KEY_BYTES} bytes")
    return key


def _host_key(path: Path) -> bytes:
    """The per-host key, created atomically (0600) when missing."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32) + "\n")
        try:
            os.link(tmp, path)  # loses cleanly to a concurrent creator
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return _read_key_file(path)


def load_key(path: Path | None = None, environ: Mapping[str, str] | None = None) -> bytes:
    """The artifact key (see the module docstring for the order); :class:`ArtifactKeyError`."""
    env = os.environ if environ is None else environ
    if path is not None:
        return _read_key_file(path)
    if env.get(ENV_KEY_FILE):
        return _read_key_file(Path(env[ENV_KEY_FILE]))
    if env.get(ENV_KEY):
        key = env[ENV_KEY].strip().encode()
        if len(key) < MIN_KEY_BYTES:
            raise ArtifactKeyError(f"${ENV_KEY} is shorter than {MIN_KEY_BYTES} bytes")
        return key
    return _host_key(default_key_file())


def mac(key: bytes, sha: str, build_variant: str, sha256: str, size_bytes: int) -> str:
    """HMAC-SHA256 (hex) of one artifact's identity."""
    message = b"\n".join([DOMAIN, sha.encode(), build_variant.encode(), sha256.encode(),
                          str(size_bytes).encode()])
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def verify(key: bytes, tag: str, sha: str, build_variant: str, sha256: str,
           size_bytes: int) -> bool:
    """True when ``tag`` is the MAC of that artifact (constant-time compare)."""
    expected = mac(key, sha, build_variant, sha256, size_bytes)
    return bool(tag) and hmac.compare_digest(expected, tag)


def cache_mac(key: bytes, artifact_mac: str, meta_json: bytes) -> str:
    """HMAC-SHA256 (hex) of a builder's local cache entry: the artifact's MAC (so its bytes,
    commit and variant) and its metadata (the JSON beside it, exactly as written)."""
    message = b"\n".join([CACHE_DOMAIN, artifact_mac.encode(), meta_json])
    return hmac.new(key, message, hashlib.sha256).hexdigest()
