"""memtier_benchmark's command line: the argv for one run of a suite's client config, the
options the driver owns, run length, and ``--version``."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.common.process import minimal_env
from redis_benchmarks_spec.suites.suite import ToolConfig

# options the driver owns, removed from the suite's arguments (value-taking ones); the file
# options among them would let a suite write or read any path on the host
OWNED_VALUE_OPTS = {"-s", "--server", "-p", "--port", "--json-out-file", "-S", "--unix-socket",
                    "-a", "--authenticate", "--uri", "--cert", "--key", "--cacert", "--sni",
                    "-o", "--out-file", "--client-stats", "--hdr-file-prefix", "--data-import"}
TIME_OPTS = {"--test-time", "-n", "--requests"}
OWNED_FLAGS = {"--tls", "--tls-skip-verify", "--cluster-mode"}


@dataclass(frozen=True)
class MemtierTarget:
    """Where memtier connects, and how (auth, TLS, cluster)."""

    host: str
    port: int
    password: str | None = None
    user: str | None = None
    tls: bool = False
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_cacert: str | None = None
    tls_skip_verify: bool = False
    cluster_mode: bool = False


def _option(arg: str, names: set[str]) -> tuple[bool, bool]:
    """(is one of ``names``, carries its value inline) for ``--opt=v`` and ``-pV`` forms."""
    if arg.startswith("--"):
        name = arg.split("=", 1)[0]
        return name in names, "=" in arg
    if len(arg) > 2 and arg[:2] in names:
        return True, True
    return arg in names, False


def _strip(argv: list[str], value_opts: set[str]) -> list[str]:
    """Drop ``value_opts`` (with their values) and the owned flags from ``argv``."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        owned, inline = _option(argv[i], value_opts)
        if owned:
            i += 1 if inline else 2
            continue
        if argv[i] not in OWNED_FLAGS:
            out.append(argv[i])
        i += 1
    return out


def _target_args(target: MemtierTarget) -> list[str]:
    args = ["--server", target.host, "--port", str(target.port)]
    if target.password:
        auth = f"{target.user}:{target.password}" if target.user else target.password
        args += ["--authenticate", auth]
    if target.tls:
        args.append("--tls")
        for opt, value in (("--cert", target.tls_cert), ("--key", target.tls_key),
                           ("--cacert", target.tls_cacert)):
            if value:
                args += [opt, value]
        if target.tls_skip_verify:
            args.append("--tls-skip-verify")
    if target.cluster_mode:
        args.append("--cluster-mode")
    return args


def memtier_argv(binary: str, cfg: ToolConfig, target: MemtierTarget, json_out: Path,
                 test_time: int | None = None) -> list[str]:
    """The argv (never a shell) for one memtier run of ``cfg`` against ``target``.

    The suite's arguments are split with shlex; its server, port, auth, TLS, cluster and
    ``--json-out-file`` options are replaced by ours. ``test_time`` replaces the suite's
    ``--test-time`` or ``-n``/``--requests`` with ``--test-time N``; ``--run-count`` is kept.
    """
    owned = OWNED_VALUE_OPTS | (TIME_OPTS if test_time is not None else set())
    args = _strip(cfg.argv(), owned)
    timing = ["--test-time", str(test_time)] if test_time is not None else []
    if run_count(args) > 1 and "--print-all-runs" not in args:
        # without it memtier writes no per-run blocks: no per-run histograms or byte counts
        args.append("--print-all-runs")
    return [binary, *_target_args(target), *args, *timing, "--json-out-file", str(json_out)]


def option_values(argv: Sequence[str], names: set[str]) -> list[str]:
    """Values of ``names`` in ``argv`` (``--opt v``, ``--opt=v`` and ``-xV`` forms)."""
    values = []
    for i, arg in enumerate(argv):
        matched, inline = _option(arg, names)
        if matched and inline:
            values.append(arg.split("=", 1)[1] if arg.startswith("--") else arg[2:])
        elif matched and i + 1 < len(argv):
            values.append(argv[i + 1])
    return values


def run_count(argv: Sequence[str]) -> int:
    values = [v for v in option_values(argv, {"--run-count", "-x"}) if v.isdigit()]
    return int(values[-1]) if values else 1


def expected_duration(argv: list[str]) -> float | None:
    """Seconds the run should take (test time x run count), when the argv says."""
    times = [v for v in option_values(argv, {"--test-time"}) if v.isdigit()]
    return float(int(times[-1]) * run_count(argv)) if times else None



def memtier_version(binary: str, timeout: float = 10.0) -> str:
    """``memtier_benchmark --version`` -> e.g. ``"2.1.0"``.

    Returns ``"unknown (<reason>)"`` when the binary cannot be run, times out or prints no
    version: the version is recorded metadata and must not fail a run on its own.
    """
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             timeout=timeout, check=False, env=minimal_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    text = (out.stdout or out.stderr).strip()
    match = re.search(r"(\d+\.\d+\.\d+)", text)
    if match:
        return match.group(1)
    return f"unknown ({text.splitlines()[0] if text else f'exit code {out.returncode}'})"
