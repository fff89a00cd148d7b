"""Two hosts on this machine: two network namespaces joined by a veth pair, an sshd on the
client side, and helpers to run commands on either side.

Everything here is made by the test and removed by it, by name or pid, also on failure:
namespace and link names carry the test process's pid and a random suffix, so parallel runs
never collide; the sshd has a throwaway host key, an authorized key made for the test, and
its own config in the test's directory. Each side runs in its own UTS namespace too (its own
hostname) and the sshd in a private mount namespace with a tmpfs on /run, where sshd needs
its privilege-separation directory: nothing of the machine's configuration is changed.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from redis_benchmarks_spec.common.process import wait_for

SERVER_ADDR = "10.211.0.1"
CLIENT_ADDR = "10.211.0.2"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30,
                          check=check)


def ns_pids(ns: str) -> set[int]:
    """Every process in network namespace ``ns``."""
    out = _ip("netns", "pids", ns, check=False).stdout
    return {int(p) for p in out.split()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass
class TwoHosts:
    """The namespaces, the veth ends, the sshd and its files (see the module doc)."""

    workdir: Path
    tag: str = field(default_factory=lambda: f"{os.getpid()}-{secrets.token_hex(3)}")
    server_ns: str = ""
    client_ns: str = ""
    server_if: str = ""
    client_if: str = ""
    ssh_port: int = 2222  # any port is free in a namespace made a moment ago
    sshd: subprocess.Popen[bytes] | None = None
    delayer: subprocess.Popen[bytes] | None = None  # tests/netdelay.py, without netem
    delay_kind: str = ""  # "netem" or "nfqueue" while a delay is on
    ssh_config: Path | None = None
    server_hostname: str = ""
    client_hostname: str = ""
    created: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        short = secrets.token_hex(3)
        self.server_ns, self.client_ns = f"rbs-t{self.tag}-srv", f"rbs-t{self.tag}-cli"
        self.server_if, self.client_if = f"rbs{short}s", f"rbs{short}c"  # <= 15 chars
        self.server_hostname = f"rbs-server-{short}"
        self.client_hostname = f"rbs-client-{short}"

    # -- set up -----------------------------------------------------------------------

    def up(self) -> TwoHosts:
        for ns in (self.server_ns, self.client_ns):
            _ip("netns", "add", ns)
            self.created.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        _ip("link", "add", self.server_if, "type", "veth", "peer", "name", self.client_if)
        for ifname, ns, addr in ((self.server_if, self.server_ns, SERVER_ADDR),
                                 (self.client_if, self.client_ns, CLIENT_ADDR)):
            _ip("link", "set", ifname, "netns", ns)
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", ifname)
            _ip("-n", ns, "link", "set", ifname, "up")
        self._start_sshd()
        return self

    def _keys(self) -> Path:
        keys = self.workdir / "ssh"
        keys.mkdir(mode=0o700)
        for name in ("host_key", "id_client"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rbs-test",
                            "-f", str(keys / name)], check=True, timeout=30)
        (keys / "authorized_keys").write_text((keys / "id_client.pub").read_text())
        host_pub = (keys / "host_key.pub").read_text().split()
        (keys / "known_hosts").write_text(
            f"[{CLIENT_ADDR}]:{self.ssh_port} {host_pub[0]} {host_pub[1]}\n")
        return keys

    def _start_sshd(self) -> None:
        keys = self._keys()
        (keys / "sshd_config").write_text(
            f"Port {self.ssh_port}\nListenAddress {CLIENT_ADDR}\n"
            f"HostKey {keys / 'host_key'}\nAuthorizedKeysFile {keys / 'authorized_keys'}\n"
            f"PidFile {keys / 'sshd.pid'}\nStrictModes no\nUsePAM no\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PermitRootLogin prohibit-password\nPubkeyAuthentication yes\nLogLevel ERROR\n")
        self.ssh_config = keys / "ssh_config"
        self.ssh_config.write_text(
            f"Host loadgen\n  HostName {CLIENT_ADDR}\n  Port {self.ssh_port}\n  User root\n"
            f"  IdentityFile {keys / 'id_client'}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {keys / 'known_hosts'}\n  StrictHostKeyChecking yes\n"
            "  LogLevel ERROR\n")
        script = (f"mount -t tmpfs rbs-test /run && mkdir -m 755 /run/sshd && "
                  f"hostname {self.client_hostname} && "
                  f"exec /usr/sbin/sshd -D -e -f {keys / 'sshd_config'}")
        log = (self.workdir / "sshd.log").open("ab")
        self.sshd = subprocess.Popen(
            ["ip", "netns", "exec", self.client_ns, "unshare", "--mount", "--uts",
             "--propagation", "private", "sh", "-c", script],
            stdout=log, stderr=subprocess.STDOUT)
        if not wait_for(self._sshd_answers, 15):
            raise RuntimeError(f"sshd in {self.client_ns} did not start: "
                               f"{(self.workdir / 'sshd.log').read_text()[-2000:]}")

    def _sshd_answers(self) -> bool:
        probe = self.in_server(["ssh", "-F", str(self.ssh_config), "-o", "BatchMode=yes",
                                "loadgen", "true"], timeout=10)
        return probe.returncode == 0

    # -- use --------------------------------------------------------------------------

    def server_argv(self, argv: list[str]) -> list[str]:
        """``argv`` on the server host: its namespace and its own hostname."""
        script = f'hostname {self.server_hostname} && exec "$@"'
        return ["ip", "netns", "exec", self.server_ns, "unshare", "--uts", "sh", "-c",
                script, "sh", *argv]

    def in_server(self, argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.server_argv(argv), capture_output=True, text=True,
                              timeout=timeout, check=False)

    def add_delay(self, ms: int) -> str:
        """Every packet the server sends on the link waits ``ms``: ``tc netem`` on the
        server's end of the veth, or, on a kernel built without netem (this VM's), the
        same delay by a netfilter queue (tests/netdelay.py). Returns which was used."""
        netem = subprocess.run(["tc", "-n", self.server_ns, "qdisc", "add", "dev",
                                self.server_if, "root", "netem", "delay", f"{ms}ms"],
                               capture_output=True, text=True, timeout=30, check=False)
        if netem.returncode == 0:
            self.delay_kind = "netem"
            return "netem"
        if "qdisc kind is unknown" not in netem.stderr:
            raise RuntimeError(f"tc netem: {netem.stderr.strip()}")
        self._queue_delay(ms)
        self.delay_kind = "nfqueue"
        return "nfqueue"

    def remove_delay(self) -> None:
        """Undo :meth:`add_delay` (nothing when none was added)."""
        if self.delay_kind == "netem":
            subprocess.run(["tc", "-n", self.server_ns, "qdisc", "del", "dev",
                            self.server_if, "root"], check=True, timeout=30)
        elif self.delay_kind == "nfqueue" and self.delayer is not None:
            subprocess.run(["ip", "netns", "exec", self.server_ns, "iptables", "-D", "OUTPUT",
                            "-o", self.server_if, "-j", "NFQUEUE", "--queue-num", "7"],
                           check=True, timeout=30)
            self.delayer.terminate()
            self.delayer.wait(timeout=10)
            self.delayer = None
        self.delay_kind = ""

    def _queue_delay(self, ms: int) -> None:
        repo = str(Path(__file__).resolve().parents[1])
        self.delayer = subprocess.Popen(
            ["ip", "netns", "exec", self.server_ns, sys.executable, "-m", "tests.netdelay",
             "--queue", "7", "--delay-ms", str(ms)], cwd=repo, stdout=subprocess.PIPE,
            stderr=(self.workdir / "netdelay.log").open("ab"))
        assert self.delayer.stdout is not None
        if self.delayer.stdout.readline().strip() != b"ready":
            raise RuntimeError(f"netdelay did not start: "
                               f"{(self.workdir / 'netdelay.log').read_text()[-2000:]}")
        # the queue is bound before the rule sends packets to it
        subprocess.run(["ip", "netns", "exec", self.server_ns, "iptables", "-A", "OUTPUT",
                        "-o", self.server_if, "-j", "NFQUEUE", "--queue-num", "7"],
                       check=True, timeout=30)

    def leftovers(self, settle_s: float = 10.0) -> dict[str, set[int]]:
        """Processes in either namespace other than the sshd listener and the delayer the
        test started, given ``settle_s`` to go: a session's processes on the client host
        (sshd's, the supervisor's) exit after its connection has closed, not with the local
        ssh (ci1 of 2026-12-03 saw one still there when the probe returned), while a tool left
        running (a 60 s sleep here) stays past it."""
        keep = {p.pid for p in (self.sshd, self.delayer) if p is not None}

        def left() -> dict[str, set[int]]:
            return {ns: ns_pids(ns) - keep for ns in (self.server_ns, self.client_ns)}

        wait_for(lambda: not any(left().values()), settle_s, interval=0.1)
        return left()

    # -- tear down --------------------------------------------------------------------

    def down(self) -> None:
        """Stop the sshd by its pid, kill what is left in our namespaces (only processes of
        the test live there), and delete both namespaces, which removes the veth pair."""
        for proc in (self.sshd, self.delayer):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        for ns in self.created:
            for pid in ns_pids(ns):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
            wait_for(lambda ns=ns: not any(_alive(p) for p in ns_pids(ns)), 10)
        for ns in reversed(self.created):
            _ip("netns", "del", ns, check=False)
        self.created.clear()


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    """The pids still alive after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    return {p for p in pids if _alive(p)}
