"""A builder's local artifact cache: a restarted builder, or one whose broker was emptied,
does not recompile what this host already built.

An entry is three files named for (sha, variant, make variables): ``<name>.tar.gz`` (the
artifact), ``<name>.json`` (what built it) and ``<name>.mac``, the HMAC of both with the
artifact key (:func:`.signing.cache_mac` over the artifact's own MAC and the JSON as
written). Whoever can write the cache folder cannot forge that, so an entry is reused only
when the MAC verifies, the bytes match their sha256 and the entry records the verified
commit; anything else is logged, deleted and rebuilt, never announced.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.builder import signing
from redis_benchmarks_spec.builder.compile import Artifact

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Identity:
    """What an entry must have been built for, and the key that signs it."""

    key: bytes = b""
    sha: str = ""
    variant: str = ""


def _files(path: Path) -> tuple[Path, Path, Path]:
    return path, path.with_suffix(".tar.gz"), path.with_suffix(".mac")


def drop(path: Path) -> None:
    """Remove the entry (its three files): an artifact found built from a bad kept tree."""
    for part in _files(path):
        part.unlink(missing_ok=True)


def _mac(who: Identity, data: bytes, meta_json: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    return signing.cache_mac(who.key, signing.mac(who.key, who.sha, who.variant, digest,
                                                  len(data)), meta_json)


def save(path: Path, who: Identity, artifact: Artifact) -> None:
    """Write the entry for ``artifact``; its MAC last, so a torn write never verifies."""
    meta_path, data_path, mac_path = _files(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta_json = json.dumps({k: v for k, v in artifact.__dict__.items() if k != "data"}).encode()
    for target, content in ((data_path, artifact.data), (meta_path, meta_json),
                            (mac_path, _mac(who, artifact.data, meta_json).encode())):
        tmp = target.with_name(f".{target.name}.{os.getpid()}")
        tmp.write_bytes(content)
        tmp.replace(target)


def _problem(who: Identity, data: bytes, meta_json: bytes, tag: bytes) -> str | None:
    """Why the entry cannot be trusted, or None."""
    if not hmac.compare_digest(_mac(who, data, meta_json).encode(), tag.strip()):
        return "its MAC does not verify (not written by a builder holding the artifact key)"
    meta = json.loads(meta_json)
    if meta.get("sha256") != hashlib.sha256(data).hexdigest():
        return "its bytes do not match their sha256"
    if meta.get("source_sha") != who.sha or meta.get("variant") != who.variant:
        return "it does not record the verified commit and variant"
    if meta.get("build_kind") not in ("clean", "incremental"):
        # written before kept trees knew build inputs: maybe built over another commit's
        # deps/ (builder/kept_tree.py)
        return "it does not record how it was built"
    return None


def load(path: Path, who: Identity) -> Artifact | None:
    """The cached artifact, or None (missing, or untrustworthy: then deleted and logged)."""
    files = _files(path)
    if not all(f.exists() for f in files[:2]):
        return None
    try:
        meta_json, data, tag = (f.read_bytes() if f.exists() else b"" for f in files)
        problem = _problem(who, data, meta_json, tag)
        found = None if problem else Artifact(data=data, **json.loads(meta_json))
    except (OSError, ValueError, TypeError) as exc:  # unreadable, not JSON, unknown fields
        problem, found = f"unreadable ({type(exc).__name__}: {exc})", None
    if found is None:
        log.warning("cached build %s: %s; discarded, rebuilding", path, problem)
        for f in files:
            f.unlink(missing_ok=True)
    return found
