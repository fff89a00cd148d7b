"""The versioned result document of one test run: written by the runner, read by the
datasink, compare and the agent. It is the one definition of that format."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from redis_benchmarks_spec.common.credentials import mask_text, redact_argv
from redis_benchmarks_spec.common.records import known
from redis_benchmarks_spec.results.binary import ServerBinary
from redis_benchmarks_spec.results.profile import (
    ProfileSummary,
    RunTelemetry,
    profiles_from_dict,
)
from redis_benchmarks_spec.results.tool_result import ToolResult

#: 1: up to 313c2e5; 2: cpu_placement and the fields added after it; 3: ``binary`` (what
#: served the run) and ``context.build`` (how its artifact was built). Readers accept any
#: version (common/records.py); the number says which writer's fields to expect.
SCHEMA_VERSION = 3

STATUS_OK = "ok"
STATUS_FAILED = "failed"
# ``dataset`` key of a counted run whose server loaded its preload's snapshot (its record:
# source, sha256, size); runner/preload_snapshot.py
PRELOAD_SNAPSHOT = "preload_snapshot"
STATUS_SKIPPED = "skipped"
#: flag: other processes used the test's CPUs during the run (telemetry.cpu); A/B pairs and
#: reports of A/B sessions leave such a run out
DISTURBED = "disturbed"


@dataclass
class GitInfo:
    """Which Redis the run measured, as far as it is known."""

    org: str = "redis"
    repo: str = "redis"
    branch: str | None = None
    version: str | None = None
    hash: str | None = None
    commit_time_ms: int | None = None
    pr: int | None = None


#: session kinds: only "run" results are history; the others measure a deliberate setup
SESSION_RUN = "run"
SESSION_AB = "ab"
SESSION_CALIBRATION = "calibration"


@dataclass
class RunContext:
    """Where and on what a test ran. The placement fields become datasink labels; the
    session fields say what kind of session produced the run (an A/B side with its extra
    server arguments is not a point of the build's history)."""

    triggering_env: str = "local"
    platform: str = "local"
    topology: str = "oss-standalone"
    build_variant: str = "local"
    deployment_type: str = "process"  # the launcher (process | docker)
    git: GitInfo = field(default_factory=GitInfo)
    # the topology's type (oss-standalone, oss-cluster); '' in documents from before
    # topologies, which were all oss-standalone
    topology_type: str = ""
    session_kind: str = SESSION_RUN
    ab_side: str = ""  # "baseline" or "comparison" in an A/B or calibration session
    extra_server_args: list[str] = field(default_factory=list)  # beyond suite and topology
    # rep-NN of `rbs run --repetitions N` or of an A/B pair; None for a single run. Not a
    # series label: repetitions of one build are points of one series (results/layout.py)
    repetition: int | None = None
    # the host's performance fingerprint id (telemetry.fingerprint) when the agent ran it: a
    # pull request's A/B reuses its base commit's counts only under the same one
    host_fingerprint: str = ""
    # how the binary was built, as its artifact's manifest records it (builder/artifacts.py):
    # build_kind (clean | incremental), built_over, build_reason, deps ({name: version});
    # empty for a binary that came with no artifact (a local run, a document before v3)
    build: dict[str, Any] = field(default_factory=dict)

    @property
    def is_history(self) -> bool:
        """True for a plain run: its points belong in the datasink's series."""
        return self.session_kind == SESSION_RUN

    def session_label(self) -> str:
        """``ab session, side comparison, extra server args: --appendfsync always``."""
        parts = [f"{self.session_kind} session"]
        if self.ab_side:
            parts.append(f"side {self.ab_side}")
        if self.extra_server_args:
            parts.append("extra server args: " + " ".join(redact_argv(self.extra_server_args)))
        return ", ".join(parts)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RunContext:
        data = known(cls, raw)
        data["git"] = GitInfo(**known(GitInfo, data.get("git") or {}))
        return cls(**data)


@dataclass
class CpuUsage:
    """Summary of CPU samples of one side (client tree or server), in % of one core."""

    samples: int = 0
    mean_pct: float = 0.0
    max_pct: float = 0.0
    cores_given: int = 0


@dataclass
class NodeRecord:
    """One server node of the deployment a test ran on, with what it did during the run."""

    index: int
    role: str  # primary | replica
    host: str
    port: int
    cpus: list[int] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    container_id: str = ""
    primary: int | None = None  # for a replica: index of its primary
    cluster_port: int | None = None
    slots: list[int] | None = None  # [first, last] hash slot of a cluster primary
    log_path: str = ""
    notes: list[str] = field(default_factory=list)
    info_delta: dict[str, float] = field(default_factory=dict)
    commandstats_delta: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass
class DeploymentRecord:
    """The topology as it was started: type, nodes, their ports, roles and CPUs."""

    name: str
    type: str
    launcher: str = "process"
    primaries: int = 1
    replicas: int = 0
    io_threads: int | None = None
    setup_s: float | None = None  # nodes up, cluster formed (replica sync not included)
    full_sync_s: list[float] = field(default_factory=list)  # per replica, REPLICAOF to link up
    # per replica, a full sync of the preloaded dataset (runner/replication.resync)
    preloaded_sync_s: list[float] = field(default_factory=list)
    nodes: list[NodeRecord] = field(default_factory=list)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> DeploymentRecord:
        data = known(cls, raw)
        data["nodes"] = [NodeRecord(**known(NodeRecord, n)) for n in data.get("nodes", [])]
        return cls(**data)


@dataclass(frozen=True)
class RunResult:
    """Everything one test run produced. ``metrics`` are the exporter's named values."""

    test_name: str
    run_id: str
    status: str
    context: RunContext = field(default_factory=RunContext)
    suite_file: str = ""
    tested_groups: list[str] = field(default_factory=list)
    tested_commands: list[str] = field(default_factory=list)
    reason: str = ""
    log_tail: str = ""
    tool: str = ""
    tool_version: str = ""
    argv: list[list[str]] = field(default_factory=list)
    redis_version: str = ""
    redis_git_sha: str = ""
    redis_server: str = ""
    # what identifies the binary that served the run (INFO and the artifact's dependency
    # versions, results/binary.py); None in documents before v3
    binary: ServerBinary | None = None
    server_args: list[str] = field(default_factory=list)  # suite + topology + run extras
    cpus: dict[str, list[int]] = field(default_factory=dict)
    # how the CPUs were chosen (runner.cpus): which were handed out last and why
    cpu_placement: str = ""
    start_ms: int = 0
    end_ms: int = 0
    preload_duration_s: float | None = None
    tool_duration_s: float | None = None
    result: ToolResult | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    metric_paths: dict[str, str] = field(default_factory=dict)  # metric name -> its JSONPath
    missing_metrics: list[str] = field(default_factory=list)
    info_delta: dict[str, float] = field(default_factory=dict)
    commandstats_delta: dict[str, dict[str, float]] = field(default_factory=dict)
    cpu: dict[str, CpuUsage] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)
    cleanup_errors: list[str] = field(default_factory=list)  # clean-up that failed after the run
    deployment: DeploymentRecord | None = None  # absent in documents written before topologies
    # the suite's dataset: name, description, RDB source with sha256 and size, init_lua
    # scripts, rdb_checks operation, preload_before_replica, the preload snapshot loaded
    dataset: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # why a flag was raised, one line each
    # {"param": "clients", "value": "64"} for a run of `rbs run --sweep` (runner/sweep.py)
    sweep: dict[str, str] = field(default_factory=dict)
    # a point of a clients/connections sweep: connections, requests per connection, the
    # minimum rule and whether it was met, the limits raised (runner/concurrency.py)
    concurrency: dict[str, Any] = field(default_factory=dict)
    profiles: dict[str, ProfileSummary] = field(default_factory=dict)  # see results/profile.py
    telemetry: RunTelemetry | None = None  # per-thread CPU, RSS, host context
    # a two-host run: both hosts, addresses, interfaces, transport and the measured round
    # trip (runner/client_side.py); empty for the default loopback run
    network: dict[str, Any] = field(default_factory=dict)
    # how the client tools authenticated when the server needed a password: the throwaway
    # ACL user made for the run (runner/run_user.py), or why the suite's password was used
    client_credential: str = ""
    # the deployment's memory after the preload and after the run: each moment's primaries'
    # totals and every node's figures (results/memory.py); the after-preload totals are
    # also metrics under INFO's names
    memory: dict[str, Any] = field(default_factory=dict)
    # a paced run (--rate, --sweep rate=...): offered_rps, achieved_rps, connections,
    # saturated, and latency percentiles uncorrected (the tool's) and corrected for
    # coordinated omission (loadgen/pacing.py); empty for a closed-loop run
    rate: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK

    def _top(self) -> dict[str, Any]:
        """Top-level fields as stored, nested records left as they are. Every stored form
        (result.json, the agent's ledger, the datasink) goes through here: passwords in
        server or client arguments never leave the process."""
        raw = {name: getattr(self, name) for name in _RUN_FIELDS}
        raw["result"] = self.result.to_dict() if self.result else None
        raw["argv"] = [redact_argv(argv) for argv in self.argv]
        raw["server_args"] = redact_argv(self.server_args)
        raw["reason"], raw["log_tail"] = mask_text(self.reason), mask_text(self.log_tail)
        extra = self.context.extra_server_args
        if extra:  # an empty list has nothing to hide: no copy of the context
            raw["context"] = replace(self.context, extra_server_args=redact_argv(extra))
        return raw

    def to_dict(self) -> dict[str, Any]:
        # asdict() deep-copies every leaf (the tool's data too, then thrown away): 70 % of
        # a datasink push's client time (benchmarks/history_scale.py); leaves are immutable
        return {name: _plain(value) for name, value in self._top().items()}

    def to_json(self, indent: int | None = None) -> str:
        """``json.dumps(to_dict())``, with the nested records walked by the C encoder rather
        than copied first."""
        top = self._top()
        separators = None if indent else (",", ":")
        return json.dumps(top, default=_fields_of, indent=indent, sort_keys=bool(indent),
                          separators=separators)

    def to_compact_json(self, without_tool_data: bool = False) -> bytes:
        """:meth:`to_json` compact, encoded by orjson (a datasink push stores one per run;
        the stdlib encoder took a third of a push's client time). ``without_tool_data``: the
        tool's raw output (``result.data``) left out, as the datasink stores a document.
        JSON has no NaN: a non-finite number becomes ``null`` here, where :meth:`to_json`
        writes ``NaN``."""
        top = self._top()
        if without_tool_data and top["result"]:
            top["result"] = {**top["result"], "data": {}}
        try:  # string keys only (every document so far): orjson's faster path
            return orjson.dumps(top, default=_fields_of)
        except orjson.JSONEncodeError:  # a key that is not a string: the same text, slower
            return orjson.dumps(top, default=_fields_of, option=orjson.OPT_NON_STR_KEYS)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RunResult:
        version = raw.get("schema_version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"no result schema_version (got {version!r})")
        # any version reads: unknown fields (a newer writer's) are ignored, absent ones take
        # their defaults (an older writer's); common/records.py
        data = known(cls, raw)
        data["schema_version"] = SCHEMA_VERSION  # what this reader made of it
        data["context"] = RunContext.from_dict(data.get("context") or {})
        data["result"] = ToolResult.from_dict(data["result"]) if data.get("result") else None
        data["cpu"] = {k: CpuUsage(**known(CpuUsage, v)) for k, v in data.get("cpu", {}).items()}
        if data.get("deployment"):
            data["deployment"] = DeploymentRecord.from_dict(data["deployment"])
        data["profiles"] = profiles_from_dict(data.get("profiles") or {})
        data["telemetry"] = RunTelemetry.from_dict(data["telemetry"]) \
            if data.get("telemetry") else None
        data["binary"] = ServerBinary.from_dict(data["binary"]) \
            if isinstance(data.get("binary"), dict) else None
        return cls(**data)

    def write(self, path: Path) -> None:
        """Write atomically, so a crash never leaves a half document that push would choke on."""
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(self.to_json(indent=2))
        tmp.replace(path)

    @classmethod
    def read(cls, path: Path) -> RunResult:
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: not a valid result document: {exc}") from exc


#: RunResult's field names, in order (``fields()`` on every document cost a push time)
_RUN_FIELDS = tuple(f.name for f in fields(RunResult))


def _fields_of(value: Any) -> dict[str, Any]:
    """What ``json.dumps`` writes for a record: its fields (as ``to_dict`` does)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in fields(value)}
    raise TypeError(f"{type(value).__name__} is not part of a result document")


_LEAVES = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    """``dataclasses.asdict`` without its deep copy of immutable leaves (new containers).
    Leaves are tested first: a document is mostly numbers in dicts (INFO deltas), and
    ``is_dataclass`` on each cost most of a datasink push (benchmarks/history_scale.py)."""
    if isinstance(value, _LEAVES):
        return value
    if isinstance(value, dict):
        return {k: v if isinstance(v, _LEAVES) else _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(v if isinstance(v, _LEAVES) else _plain(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    return value


RESULT_FILE = "result.json"  # the name the runner gives every result document


def run_dir(results_dir: Path, test_name: str, topology: str) -> Path:
    """The directory of one test's run on one topology: ``<results_dir>/<test>/<topology>``."""
    return results_dir / test_name / topology


def result_path(results_dir: Path, result: RunResult) -> Path:
    """Where the runner writes ``result``: ``<results_dir>/<test>/<topology>/result.json``."""
    return run_dir(results_dir, result.test_name, result.context.topology) / RESULT_FILE


def is_result_file(path: Path) -> bool:
    """The one rule for "is this a result document": a file named ``result.json`` (even a
    broken one, so that it is reported rather than ignored), or another ``*.json`` whose
    top-level object carries ``run_id`` and ``schema_version`` (a document copied under
    another name). Summaries, tool outputs and markers are not."""
    if path.name == RESULT_FILE:
        return True
    if path.suffix != ".json":
        return False
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return False
    if '"schema_version"' not in text or '"run_id"' not in text:
        return False  # cheap no for large tool outputs (memtier JSON) before parsing
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and "run_id" in data and "schema_version" in data


def find_result_files(directory: Path) -> list[Path]:
    """Every result document under ``directory`` (by :func:`is_result_file`), sorted."""
    return [p for p in sorted(directory.rglob("*.json")) if is_result_file(p)]
