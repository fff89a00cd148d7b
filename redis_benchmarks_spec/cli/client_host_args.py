"""``rbs run --client-host``: the client tools on another host, reached over SSH."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from rich.console import Console

from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.common.process import ProcessRegistry
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner.client_host import (
    ClientHostConfig,
    check_destination,
    check_server_address,
)
from redis_benchmarks_spec.runner.remote_client import RemoteClient, RemoteClientError


def add_client_host_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("client on another host (docs/two-hosts.md)")
    g.add_argument("--client-host", default=None, metavar="DEST",
                   help="run memtier_benchmark / redis-benchmark on this host over SSH "
                        "([user@]host or a Host of --client-ssh-config); default: this host, "
                        "over loopback")
    g.add_argument("--server-address", default=None, metavar="IP",
                   help="this host's address on the benchmark network: the servers listen "
                        "there and the client host connects to it (with --client-host)")
    g.add_argument("--client-ssh-config", type=Path, default=None, metavar="FILE",
                   help="ssh -F FILE for the client host (port, key, known hosts, user)")
    g.add_argument("--client-cpus", default=None, metavar="LIST",
                   help="CPUs of the client host the tools are pinned to, e.g. 2,3 "
                        "(default: the first ones ssh's session may use)")


def client_host_from_args(args: argparse.Namespace) -> ClientHostConfig | None:
    """The flags as settings, checked; one :class:`UsageError` naming the flag at fault."""
    if args.client_host is None:
        for flag, value in (("--server-address", args.server_address),
                            ("--client-ssh-config", args.client_ssh_config),
                            ("--client-cpus", args.client_cpus)):
            if value is not None:
                raise UsageError(flag, "only means something with --client-host")
        return None
    try:
        dest = check_destination(args.client_host)
    except ValueError as exc:
        raise UsageError(f"--client-host {args.client_host}", str(exc).split(": ", 1)[1])
    if args.server_address is None:
        raise UsageError("--client-host", "needs --server-address (this host's address "
                         "that the client host reaches)")
    try:
        address = check_server_address(args.server_address)
    except ValueError as exc:
        raise UsageError(f"--server-address {args.server_address}",
                         str(exc).split(": ", 1)[1]) from None
    config_file = args.client_ssh_config
    if config_file is not None and not config_file.is_file():
        raise UsageError(f"--client-ssh-config {config_file}", "no such file")
    return ClientHostConfig(ssh=dest, server_address=address, ssh_config=config_file,
                            cpus=_cpus(args.client_cpus))


def _cpus(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    parts = text.split(",")
    if not all(p.strip().isdigit() for p in parts):
        raise UsageError(f"--client-cpus {text}", "not a comma-separated list of CPU numbers")
    return tuple(int(p) for p in parts)


def probe_client_host(config: ClientHostConfig) -> str:
    """Connect once and leave: '' when the client host's supervisor answers, else why not."""
    with tempfile.TemporaryDirectory(prefix="rbs-client-host-") as tmp:
        client = RemoteClient(config, ProcessRegistry(), Path(tmp) / "ssh.log")
        try:
            client.open()
        except RemoteClientError as exc:
            return str(exc)
        finally:
            client.close()
    return ""


def ssh_hint(config: ClientHostConfig) -> str:
    config_flag = f"-F {config.ssh_config} " if config.ssh_config else ""
    return f"try: ssh {config_flag}{config.ssh} true"


def check_client_host(config: ClientHostConfig) -> None:
    """Before anything starts: a client host that does not answer is a usage error."""
    problem = probe_client_host(config)
    if problem:
        raise UsageError("--client-host", problem, ssh_hint(config))


def network_line(results: list[RunResult]) -> str:
    """``client lab-clx-3 (10.0.0.23, ens2f1) -> server lab-icx-1 (10.0.0.11, ens1f0):
    RTT median 0.052 ms (0.049-0.061 over 3 tests)``, or '' when no test reached the run."""
    nets = [r.network for r in results if r.network.get("rtt_ms")]
    if not nets:
        return ""
    client, server = nets[0]["client"], nets[0]["server"]
    medians = sorted(float(n["rtt_ms"]["median"]) for n in nets)
    spread = f" ({medians[0]:.3f}-{medians[-1]:.3f} over {len(medians)} tests)" \
        if len(medians) > 1 else ""
    return (f"client {client['host']} ({client['address']}, {client['interface'] or '?'}) "
            f"-> server {server['host']} ({server['address']}, {server['interface'] or '?'}): "
            f"RTT median {medians[len(medians) // 2]:.3f} ms{spread}")


def say_network(console: Console, results: list[RunResult]) -> None:
    line = network_line(results)
    if line:
        console.print(line, highlight=False, soft_wrap=True, markup=False)
