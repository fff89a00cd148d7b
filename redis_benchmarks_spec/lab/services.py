"""``rbs lab up`` / ``rbs lab down``: the whole pipeline on one machine, as its services.

``up`` starts, in a lab folder: an embedded broker and an embedded datasink (two
redis-stack-servers with their own data directories; the broker keeps its AOF, as
docs/services.md asks of a broker), the local GitHub stand-in (:mod:`.github_local`), then
``rbs api``, ``rbs builder``, ``rbs site`` and one ``rbs agent`` per platform, each with the commands and
flags docs/services.md gives its systemd unit, pointed at the lab's broker and folders. Two
platforms split the host's CPUs between them (``--cpus``): each agent pins its servers and
clients to its own set. Every process gets its own session (process group) and log, and its
pid goes to the state file (:mod:`.state`).

``down`` stops exactly those: each daemon by its pid (SIGTERM, so an agent finishes the test
it runs, then SIGKILL to its process group after the timeout), checked first to still be
the process the lab started (its argv), then the two servers by their pidfiles.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil
import redis

from redis_benchmarks_spec.builder import verify
from redis_benchmarks_spec.common.credentials import DAEMON_SECRETS, without_secrets
from redis_benchmarks_spec.common.paths import absolute
from redis_benchmarks_spec.common.process import free_port, tail, wait_for
from redis_benchmarks_spec.datasink import suspect_marks
from redis_benchmarks_spec.datasink.embedded import DatasinkError, EmbeddedDatasink
from redis_benchmarks_spec.lab.keeper import KEEPER
from redis_benchmarks_spec.lab.state import LabState, Service, load, save, state_path

TRIGGER_LABEL = "action:run-benchmark"
LAB_REPOS = "redis/redis"
DEFAULT_VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"
# one incremental build of the kept tree in N is checked against a clean build (docs/lab.md)
CHECK_INCREMENTAL_EVERY = 10
PLATFORM_CONFIG = """\
# the lab's pull-request budget: interleaved base/head pairs until each test is decided
until_decided:
  max_repetitions: {max_pairs}
  first_round: {first_round}
  round_repetitions: {round_pairs}
  time_budget: {time_budget}
  metric: {metric}
  base_runs: {base_runs}
  stored_base: {stored_base}
"""
SELECTION = """\
# pull requests run the suites that execute their changed code (at most max_suites);
# with sentinels, a push runs those and the suites that execute what it changes
selection:
"""


class LabError(RuntimeError):
    """The lab could not be started or stopped; the message says which part and why."""


@dataclass(frozen=True)
class LabOptions:
    """What ``rbs lab up`` starts (defaults: the lab docs/lab.md describes)."""

    root: Path
    source: Path  # the git repository that stands for GitHub
    suites_dir: Path
    platforms: tuple[str, ...] = ("lab-a", "lab-b")
    variant: str = DEFAULT_VARIANT
    agent_args: tuple[str, ...] = ()  # e.g. --profilers instructions --test-time 5
    max_pairs: int = 6
    first_round: int = 3
    round_pairs: int = 3
    time_budget: str = "30m"
    prefix: str = "rbs"
    extra_env: dict[str, str] = field(default_factory=dict)
    # kept build trees and built artifacts (default: in the lab folder); a folder that
    # outlives the lab makes the next lab's builds incremental or free
    build_cache: Path | None = None
    max_suites: int | None = None  # the platforms' pull-request suite budget
    sentinels: tuple[str, ...] | None = None  # None: a push runs every suite
    metric: str = "auto"  # what decides when a pull request's pairs stop (until_decided)
    # counted runs of each test at a push: the stored base of the pull requests' counts
    base_runs: int = 2
    # False: pull requests count their base again in fresh pairs (the check of the above)
    stored_base: bool = True
    # more environment for one platform's agent (the watch's RBS_FINGERPRINT_CHANGE_AT)
    platform_env: dict[str, dict[str, str]] = field(default_factory=dict)
    # the standing confirmer of the watched branch (docs/watch.md); a replay that confirms
    # in its own process starts its lab without it
    confirmer: bool = True


def rbs_argv() -> list[str]:
    """How to start ``rbs`` of this installation (the console script beside the
    interpreter, else the module)."""
    script = Path(sys.executable).parent / "rbs"
    return [str(script)] if script.is_file() else [sys.executable, "-m",
                                                   "redis_benchmarks_spec.cli.entry"]


def cpu_sets(count: int) -> list[list[int]]:
    """The host's CPUs split into ``count`` disjoint sets (a lone CPU is shared)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < count:
        return [cpus for _ in range(count)]
    size = len(cpus) // count
    return [cpus[i * size:(i + 1) * size] for i in range(count)]


def _secret_files(root: Path) -> tuple[Path, Path]:
    """The webhook secret and the GitHub token of the lab (mode 0600, made once; beside
    them the site's triage token, ``secrets/site-token``)."""
    secret_dir = root / "secrets"
    secret_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    out = []
    for name in ("webhook-secret", "github-token", "site-token"):
        path = secret_dir / name
        if not path.exists():
            path.touch(mode=0o600)
            path.write_text(secrets.token_hex(20) + "\n")
        out.append(path)
    return out[0], out[1]


def spawn(root: Path, name: str, argv: list[str], env: dict[str, str]) -> Service:
    """Start ``argv`` as the lab's service ``name``: its own session, its log appended."""
    log = root / "logs" / f"{name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        # in the lab folder, whatever folder `rbs lab up` ran in: every path it is given is
        # absolute, and `python -m` must not import a package the current folder holds (a
        # clone's root holds one: maybe another version)
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True, cwd=root)
    return Service(name=name, pid=proc.pid, argv=argv, log=str(log))


def _server(root: Path, name: str) -> str:
    try:
        status = EmbeddedDatasink(root / name, port=free_port()).up(timeout=60)
    except DatasinkError as exc:
        raise LabError(f"{name}: {exc}") from None
    if not status.running or status.url is None:
        raise LabError(f"{name}: did not start ({status.detail})")
    return status.url


def _daemon_specs(options: LabOptions, state: LabState, secret: Path) -> list[tuple[str, list[str]]]:
    """(name, argv) of the api, the builder, each agent and the confirmer, as
    docs/services.md runs them."""
    root, rbs = options.root, rbs_argv()
    cache = (options.build_cache or root).resolve()
    common = ["--broker", state.broker_url, "--stream-prefix", options.prefix]
    port = state.api_url.rsplit(":", 1)[1]
    specs = [
        ("api", [*rbs, "api", *common, "--host", "127.0.0.1", "--port", port, "--threads", "8",
                 "--secret-file", str(secret), "--trigger-label", TRIGGER_LABEL,
                 "--branches", "unstable", "--repos", LAB_REPOS, "--git-remote",
                 str(options.source), "--platforms", ",".join(options.platforms),
                 "--build-variants", options.variant,
                 "--datasink", state.datasink_url]),  # alert issues' triage kept there
        ("builder", [*rbs, "builder", *common, "--consumer", "builder-lab",
                     "--work-dir", str(root / "build"), "--git-mirror", str(root / "mirrors"),
                     "--cache-dir", str(cache / "cache" / "builds"),
                     "--keep-trees", str(cache / "trees"), "--check-incremental-every",
                     str(CHECK_INCREMENTAL_EVERY), "--datasink", state.datasink_url,
                     "--build-timeout", "1800", "--idle-claim-ms", "300000",
                     "--build-variants", options.variant])]
    for platform, cpus in state.platforms.items():
        specs.append((f"agent-{platform}", [
            *rbs, "agent", *common, "--platform", platform, "--consumer", f"lab-{platform}",
            "--suites-dir", options.suites_dir.as_posix(),
            "--work-dir", str(root / f"agent-{platform}"),
            "--results-dir", str(root / f"results-{platform}"),
            "--idle-claim-ms", "300000", "--heartbeat-ttl", "60",
            "--datasink", state.datasink_url, "--cpus", ",".join(map(str, cpus)),
            "--platform-config", str(root / "platforms" / f"{platform}.yml"),
            "--watch-branch", "unstable",  # docs/watch.md
            *options.agent_args]))
    if state.site_url:  # the read-only site over the datasink, comments from the broker
        specs.append(("site", [*rbs, "site", "--host", "127.0.0.1",
                               "--port", state.site_url.rsplit(":", 1)[1],
                               "--datasink", state.datasink_url, *common,
                               "--triage-token-file", str(root / "secrets" / "site-token"),
                               "--artifacts-dir", str(root)]))
    if options.confirmer:  # alerts as issues of the GitHub stand-in (token from the env)
        specs.append(("confirmer", [
            *rbs, "confirmer", *common, "--datasink", state.datasink_url, "--repo", LAB_REPOS,
            "--branch", "unstable", "--source", str(options.source),
            "--consumer", "confirmer-lab", "--interval", "2"]))
    return specs


def _write_platform_configs(options: LabOptions) -> None:
    folder = options.root / "platforms"
    folder.mkdir(parents=True, exist_ok=True)
    text = PLATFORM_CONFIG.format(max_pairs=options.max_pairs, first_round=options.first_round,
                                  round_pairs=options.round_pairs,
                                  time_budget=options.time_budget, metric=options.metric,
                                  base_runs=options.base_runs,
                                  stored_base="true" if options.stored_base else "false")
    if options.max_suites is not None or options.sentinels is not None:
        text += SELECTION
        if options.max_suites is not None:
            text += f"  max_suites: {options.max_suites}\n"
        if options.sentinels is not None:
            text += f"  sentinels: {json.dumps(list(options.sentinels))}\n"
    for platform in options.platforms:
        (folder / f"{platform}.yml").write_text(text)


def up(options: LabOptions) -> LabState:
    """Start the lab in ``options.root`` (:class:`LabError` if one runs there already)."""
    root = absolute(options.root)
    options = replace(options, root=root)  # every folder below it goes on absolute
    if state_path(root).exists():
        raise LabError(f"{state_path(root)}: a lab already runs in {root} (rbs lab down first)")
    root.mkdir(parents=True, exist_ok=True)
    secret, token = _secret_files(root)
    _write_platform_configs(options)
    sets = cpu_sets(len(options.platforms))
    state = LabState(root=str(root), broker_url="", datasink_url="",
                     api_url=f"http://127.0.0.1:{free_port()}", github_url="",
                     site_url=f"http://127.0.0.1:{free_port()}",
                     source=str(options.source), prefix=options.prefix,
                     platforms=dict(zip(options.platforms, sets, strict=True)),
                     suites_dir=str(options.suites_dir))
    try:
        env = _start_all(options, state, secret, token)
        # last, once every service runs: it restarts one that dies (lab/keeper.py)
        # it holds the secrets of what it restarts (every daemon's), no other
        keeps = [name for names in DAEMON_SECRETS.values() for name in names]
        state.services.append(spawn(root, KEEPER, [
            sys.executable, "-m", "redis_benchmarks_spec.lab.keeper", "--dir", str(root)],
            without_secrets(env, keeps)))
        save(state)  # inside: an interrupt before the keeper is on record stops it too
    except (LabError, KeyboardInterrupt):  # interrupted mid-start: what started is stopped
        save(state)
        down(root)
        raise
    return state


def _start_all(options: LabOptions, state: LabState, secret: Path, token: Path
               ) -> dict[str, str]:
    """Start the servers and the services; the lab's environment (the keeper's)."""
    root = Path(state.root)
    state.broker_url = _server(root, "broker")
    state.datasink_url = _server(root, "datasink")
    gh_port = free_port()
    state.github_url = f"http://127.0.0.1:{gh_port}"
    env = {**os.environ, "RBS_GITHUB_TOKEN_FILE": str(token),
           "RBS_GITHUB_API_URL": state.github_url, **options.extra_env}
    for given in ("RBS_GITHUB_TOKEN", "RBS_WEBHOOK_SECRET", "RBS_WEBHOOK_SECRET_FILE"):
        env.pop(given, None)  # the lab's own are files (above and --secret-file)
    # the agents' fetched datasets and preload snapshots (runner/preload_snapshot.py) are
    # the lab's own unless the keeper names a cache: a lab's minutes are its own
    env.setdefault("RBS_DATASET_CACHE", str(root / "datasets"))
    state.services.append(spawn(root, "github", [
        sys.executable, "-m", "redis_benchmarks_spec.lab.github_local", "--port", str(gh_port),
        "--record-dir", str(root / "github"), "--token-file", str(token)],
        without_secrets(env)))
    for name, argv in _daemon_specs(options, state, secret):
        more = options.platform_env.get(name[6:], {}) if name.startswith("agent-") else {}
        # each daemon gets the secrets it reads and no other (docs/security.md)
        keep = DAEMON_SECRETS[name.split("-", 1)[0]]
        service = spawn(root, name, argv, without_secrets({**env, **more}, keep))
        state.services.append(replace(service, env=more))
    save(state)
    if not wait_for(lambda: _healthy(state.api_url) or _any_exited(state), timeout=120,
                    interval=0.5) or _any_exited(state):
        dead = _any_exited(state)
        what = f"{dead.name} exited: {tail(Path(dead.log), 3)}" if dead else \
            "rbs api did not answer /healthz within 120 s"
        raise LabError(what)
    return env


def _healthy(api_url: str) -> bool:
    import urllib.request
    try:
        with urllib.request.urlopen(f"{api_url}/healthz", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def alive(service: Service) -> bool:
    """True while ``service.pid`` is still the process the lab started: its command line
    ends with the arguments the lab gave (a console script shows as ``python rbs ...``)."""
    try:
        proc = psutil.Process(service.pid)
        tail_args = service.argv[1:]
        return proc.status() != psutil.STATUS_ZOMBIE and \
            proc.cmdline()[-len(tail_args):] == tail_args
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _any_exited(state: LabState) -> Service | None:
    return next((s for s in state.services if not alive(s)), None)


def _stop(service: Service, timeout: float) -> str:
    """SIGTERM the service; its process group SIGKILLed if it outlives ``timeout``."""
    if not alive(service):
        return "not running"
    os.kill(service.pid, signal.SIGTERM)
    if wait_for(lambda: not alive(service), timeout=timeout, interval=0.2):
        return "stopped"
    try:  # its children too: a test's servers run in sessions of their own
        children = psutil.Process(service.pid).children(recursive=True)
        os.killpg(service.pid, signal.SIGKILL)  # its own session: the group is its pid
    except (ProcessLookupError, psutil.NoSuchProcess):
        return "stopped"
    for child in children:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    wait_for(lambda: not alive(service), timeout=10, interval=0.2)
    return f"killed after {timeout:.0f}s"


def down(root: Path, timeout: float = 120.0) -> list[tuple[str, str]]:
    """Stop what ``up`` started in ``root``: (service, outcome) for each."""
    root = root.resolve()
    state = load(root)
    outcomes = []
    keeper = [s for s in state.services if s.name == KEEPER]
    for service in keeper:  # first: nothing stopped below is started again
        outcomes.append((service.name, _stop(service, timeout)))
    state = load(root)  # with the pids of what the keeper restarted
    for service in reversed([s for s in state.services if s.name != KEEPER]):
        outcomes.append((service.name, _stop(service, timeout)))
    for name in ("datasink", "broker"):
        if (root / name).is_dir():
            try:
                stopped = EmbeddedDatasink(root / name).down()
            except DatasinkError as exc:
                outcomes.append((name, f"not stopped: {exc}"))
                continue
            outcomes.append((name, "stopped" if stopped else "not running"))
    state_path(root).unlink(missing_ok=True)
    return outcomes


def running(root: Path) -> tuple[LabState, list[tuple[str, bool]]]:
    """The lab's state and whether each service still runs."""
    state = load(root.resolve())
    return state, [(s.name, alive(s)) for s in state.services]


def kept_tree_checks(state: LabState) -> list[str]:
    """Per kept tree of the lab's builder: its last check against a clean build, and every
    mismatch it recorded (builder/verify.py) with how many of the commits it names have
    their points marked suspect in the datasink; [] without kept trees or checks."""
    builder = next((s for s in state.services if s.name == "builder"), None)
    if builder is None or "--keep-trees" not in builder.argv[:-1]:
        return []
    trees = Path(builder.argv[builder.argv.index("--keep-trees") + 1])
    lines = []
    marked: set[str] | None = None
    for tree in sorted(p for p in trees.glob("*") if p.is_dir()):
        checks = verify.read(tree)
        if marked is None and any(c.suspect for c in checks):
            marked = _marked(state.datasink_url)
        for bad in (c for c in checks[:-1] if not c.matched):
            lines.append(f"kept tree {tree.name}: MISMATCH {bad.describe()}"
                         f"{_suspect_words(bad, marked)}")
        if checks:
            last = checks[-1]
            lines.append(f"kept tree {tree.name}: last check "
                         f"{'' if last.matched else 'MISMATCH '}{last.describe()}"
                         f"{_suspect_words(last, marked)}")
    return lines


def _marked(url: str) -> set[str]:
    """The commits marked suspect in the lab's datasink (none when it cannot be read)."""
    if not url:
        return set()
    try:
        with redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5) as client:
            return suspect_marks.marked_commits(client)
    except redis.RedisError:
        return set()


def _suspect_words(check: verify.CheckRecord, marked: set[str] | None) -> str:
    if not check.suspect or marked is None:
        return ""
    done = [s for s in check.suspect if s in marked]
    return (f"; points of {len(done)} of those {len(check.suspect)} commit(s) marked "
            f"suspect in the datasink")
