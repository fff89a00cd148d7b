"""A platform's client host: where the load generator runs when it is not this host.

The settings (``client_host:`` of the platform file, or ``rbs run --client-host``) are the
operator's, checked like any input that could be wrong: one ``ValueError`` naming the key.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"
# what ssh takes as a destination: [user@]host, a Host alias, an IPv6 address in brackets;
# never a leading '-' (it would be read as an option)
_DESTINATION = re.compile(r"^[A-Za-z0-9_.%@:\[\]][A-Za-z0-9_.%@:\[\]-]{0,254}$")
_PROGRAM = re.compile(r"^[A-Za-z0-9_./+-]{1,255}$")
_TOOLS = ("memtier_benchmark", "redis-benchmark")
_KNOWN = {"ssh", "server_address", "ssh_config", "python", "tools", "cpus", "lease_s",
          "connect_timeout_s"}


@dataclass(frozen=True)
class ClientHostConfig:
    """Where the client tools run (over SSH) and the address they reach the servers at."""

    ssh: str  # destination: [user@]host, or a Host of ``ssh_config``
    server_address: str  # this host's address on the benchmark network: the servers bind it
    ssh_config: Path | None = None  # ``ssh -F``: port, key, known hosts, user
    python: str = "python3"  # on the client host: runs the supervisor (stdlib only)
    tools: dict[str, str] = field(default_factory=dict)  # tool -> path on the client host
    cpus: tuple[int, ...] | None = None  # client CPUs there (default: what ssh is given)
    lease_s: float = 30.0  # the supervisor stops everything after this long without a word
    connect_timeout_s: float = 20.0


def check_destination(value: Any) -> str:
    if not isinstance(value, str) or not _DESTINATION.match(value):
        raise ValueError(f"ssh: {value!r} is not an ssh destination ([user@]host)")
    return value


def check_server_address(value: Any) -> str:
    """An IP address of this host the client host can reach (never loopback)."""
    try:
        address = ipaddress.ip_address(str(value))
    except ValueError:
        raise ValueError(f"server_address: {value!r} is not an IP address") from None
    if address.is_loopback or address.is_unspecified:
        raise ValueError(f"server_address: {value!r} cannot be reached from another host "
                         "(give this host's address on the benchmark network)")
    return str(address)


def _program(key: str, value: Any) -> str:
    if not isinstance(value, str) or not _PROGRAM.match(value):
        raise ValueError(f"{key}: {value!r} is not a program name or path")
    return value


def _tools(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise TypeError("tools: expected a mapping of tool name to path")
    unknown = sorted(str(k) for k in raw if k not in _TOOLS)
    if unknown:
        raise ValueError(f"tools: unknown tool {unknown[0]!r} (known: {', '.join(_TOOLS)})")
    return {str(k): _program(f"tools.{k}", v) for k, v in raw.items()}


def _cpus(raw: Any) -> tuple[int, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not raw or not all(
            isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 4096 for c in raw):
        raise ValueError(f"cpus: {raw!r} is not a list of CPU numbers")
    return tuple(raw)


def _seconds(raw: dict[str, Any], key: str, low: float, high: float, default: float) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not low <= value <= high:
        raise ValueError(f"{key}: {value!r} is not a number of seconds from {low} to {high}")
    return float(value)


def parse_client_host(raw: Any) -> ClientHostConfig:
    """The ``client_host`` section, checked; ``ValueError``/``TypeError`` naming the key."""
    if not isinstance(raw, dict):
        raise TypeError("expected a mapping of settings")
    unknown = sorted(str(k) for k in raw if k not in _KNOWN)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_KNOWN))})")
    for key in ("ssh", "server_address"):
        if key not in raw:
            raise ValueError(f"{key}: required")
    config = raw.get("ssh_config")
    if config is not None and not isinstance(config, str):
        raise TypeError(f"ssh_config: {config!r} is not a path")
    return ClientHostConfig(
        ssh=check_destination(raw["ssh"]),
        server_address=check_server_address(raw["server_address"]),
        ssh_config=Path(config) if config else None,
        python=_program("python", raw.get("python", "python3")),
        tools=_tools(raw.get("tools", {})), cpus=_cpus(raw.get("cpus")),
        lease_s=_seconds(raw, "lease_s", 5, 600, 30),
        connect_timeout_s=_seconds(raw, "connect_timeout_s", 1, 300, 20))
