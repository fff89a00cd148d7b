"""Tests stay on this machine: a socket audit hook (PEP 578) that fails any test whose
process connects, sends or resolves a name outside loopback, unix sockets and the
network namespaces the tests make themselves (tests/twohost_net.py).

The hook sees this Python process only; children (pip, git, ssh, the daemons) are
separate processes, which the environment set here steers instead: no cloud metadata
service, and every S3 client a local endpoint unless its test names its own (moto).
A violation is refused at once (``OffMachineConnection`` from the call) and recorded, so
the test fails at teardown even when the code under test swallows the error.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import threading
from typing import Any

from tests.twohost_net import CLIENT_ADDR, SERVER_ADDR

# the addresses the namespaces of tests/twohost_net.py have (made and removed by the tests)
NAMESPACE_ADDRESSES = frozenset({SERVER_ADDR, CLIENT_ADDR})
LOCAL_NAMES = frozenset({"", "localhost", "localhost.localdomain", "ip6-localhost",
                         "ip6-loopback"})
# what every S3 client a test makes talks to unless the test names another local one:
# the discard port on loopback (nothing listens; a connection is refused at once)
LOCAL_S3_ENDPOINT = "http://127.0.0.1:9"


# name lookups whose first argument is the name (a DNS query may leave the machine)
LOOKUPS = frozenset({"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex"})


class OffMachineConnection(RuntimeError):
    """A test tried to reach outside this machine."""


_lock = threading.Lock()
violations: list[str] = []  # "what: detail" since the last take()
_own_names: frozenset[str] = frozenset()


def local_address(host: object) -> bool:
    """``host`` is loopback, unspecified, a test namespace's address or a local name."""
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return False
    if host.lower() in LOCAL_NAMES or host in _own_names:
        return True
    try:
        ip = ipaddress.ip_address(host.split("%")[0].strip("[]"))
    except ValueError:
        return False  # a name to resolve: only names of this host are
    mapped = getattr(ip, "ipv4_mapped", None)
    ip = mapped or ip
    return ip.is_loopback or ip.is_unspecified or str(ip) in NAMESPACE_ADDRESSES


def _refuse(what: str, detail: Any) -> None:
    line = f"{what}: {detail!r}"
    with _lock:
        violations.append(line)
    raise OffMachineConnection(f"tests may only reach loopback, unix sockets and their own "
                               f"namespaces: {line}")


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        sock, address = args[0], args[-1]
        family = getattr(sock, "family", None)
        if family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple) \
                and not local_address(address[0]):
            _refuse(event, address)
    elif event in LOOKUPS and not local_address(args[0]):
        _refuse(event, args[0])


def take() -> list[str]:
    """The violations recorded since the last call (and forget them)."""
    with _lock:
        found = list(violations)
        violations.clear()
    return found


def install() -> None:
    """Set the environment every S3 client and child sees, then add the hook (once)."""
    global _own_names
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    os.environ["AWS_ENDPOINT_URL"] = LOCAL_S3_ENDPOINT
    os.environ.pop("AWS_ENDPOINT_URL_S3", None)
    hostname = socket.gethostname()
    _own_names = frozenset({hostname, hostname.split(".")[0]})
    if not getattr(sys, "_rbs_offmachine_hook", False):
        sys.addaudithook(_hook)
        sys._rbs_offmachine_hook = True  # type: ignore[attr-defined]
