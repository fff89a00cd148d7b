"""The test session stays on this machine (tests/offmachine.py): a connection or a name
lookup outside loopback, unix sockets and the tests' own namespaces is refused before any
packet leaves, and recorded so its test fails; S3 clients get a local endpoint and no
cloud metadata service."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests import offmachine
from tests.twohost_net import SERVER_ADDR


def _refused(action) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(offmachine.OffMachineConnection):
        action()
    [line] = offmachine.take()  # consumed here: this test expects it
    return line


def test_off_machine_connections_and_lookups_are_refused_and_recorded() -> None:
    with socket.socket() as s:
        assert "192.0.2.1" in _refused(lambda: s.connect(("192.0.2.1", 80)))
    with socket.socket(socket.AF_INET6) as s:
        assert "2001:db8::1" in _refused(lambda: s.connect(("2001:db8::1", 80, 0, 0)))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        assert "8.8.8.8" in _refused(lambda: s.sendto(b"x", ("8.8.8.8", 53)))
    assert "169.254.169.254" in _refused(
        lambda: socket.create_connection(("169.254.169.254", 80), timeout=1))
    assert "example.org" in _refused(lambda: socket.getaddrinfo("example.org", 443))
    # redis-py's own error handling does not hide it from the session
    line = _refused(lambda: redis.Redis(host="203.0.113.5", port=6379,
                                        socket_connect_timeout=1).ping())
    assert "203.0.113.5" in line


def test_loopback_unix_and_the_test_namespaces_are_allowed(tmp_path: Path,
                                                           redis_server) -> None:  # type: ignore[no-untyped-def]
    assert redis_server.client().ping()
    assert redis.Redis(host="localhost", port=redis_server.port).ping()
    with socket.socket(socket.AF_UNIX) as s, pytest.raises(FileNotFoundError):
        s.connect(str(tmp_path / "none.sock"))
    for host in (SERVER_ADDR, "127.0.0.2", "::1", "0.0.0.0"):
        assert offmachine.local_address(host), host
    assert not offmachine.local_address("10.0.0.1")
    assert offmachine.take() == []


def test_s3_clients_get_a_local_endpoint_and_no_metadata_service() -> None:
    import boto3

    client = boto3.client("s3", region_name="us-east-1")
    assert client.meta.endpoint_url == offmachine.LOCAL_S3_ENDPOINT
    # children see the same settings
    code = ("import os; print(os.environ['AWS_EC2_METADATA_DISABLED'], "
            "os.environ['AWS_ENDPOINT_URL'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert out == ["true", offmachine.LOCAL_S3_ENDPOINT]
