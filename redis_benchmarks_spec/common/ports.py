"""Who holds a TCP port: so a server we start is known to be the one answering there."""

from __future__ import annotations

import socket

import psutil


def is_free(host: str, port: int) -> bool:
    """True when nothing listens on ``host:port`` and we could bind it now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as redis-server binds: a port whose last server was killed holds connections in
        # TIME_WAIT, which do not stop a new server from listening there
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def owns_port(pid: int, port: int) -> bool:
    """True when process ``pid`` has a listening socket on ``port``."""
    try:
        conns = psutil.Process(pid).net_connections(kind="inet")
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
               for c in conns)


def listener_pid(port: int) -> int | None:
    """The pid of whoever listens on ``port``, or None when we cannot tell."""
    try:
        conns = psutil.net_connections(kind="inet")
    except psutil.AccessDenied:
        return None
    for c in conns:
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
            return int(c.pid)
    return None


def listener(port: int) -> str:
    """``pid N (name)`` of whoever listens on ``port``, or '' when we cannot tell."""
    pid = listener_pid(port)
    if pid is None:
        return ""
    try:
        return f"pid {pid} ({psutil.Process(pid).name()})"
    except psutil.Error:
        return f"pid {pid}"
