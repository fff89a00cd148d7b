"""``dbconfig``: how the server is configured and the dataset put in place before a test.

Every key the performance team's corpus (redis-benchmarks-specification 0.3.47) uses is read
into a typed field here and validated; the runner acts on each (see runner/preload.py and
runner/dataset.py). Keys whose value decides what is measured (``init_lua``, ``dataset``,
``rdb_checks``) make the suite unloadable when malformed: running it without them would
measure something else.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from redis_benchmarks_spec.common.words import split_words
from redis_benchmarks_spec.suites.auth import Credentials, declared
from redis_benchmarks_spec.suites.problems import WARNING
from redis_benchmarks_spec.suites.reader import SpecReader
from redis_benchmarks_spec.suites.toolconfig import ToolConfig, parse_tool

DBCONFIG_KEYS = {
    "configuration-parameters", "check", "preload_tool", "init_commands", "init_lua",
    "dataset", "dataset_name", "dataset_description", "resources", "rdb_checks",
    "wait_for_bgsave", "preload_before_replica", "skip_throughput_floor",
    "low-throughput-benchmark",
}
CHECK_KEYS = {"keyspacelen"}
RDB_CHECKS_KEYS = {"operation", "keyspacelen", "value_size", "sample_keys"}
RDB_OPERATIONS = ("save", "load")
DATASET_SCHEMES = ("http", "https", "s3")
# problems under these keys stop the suite from loading (see the module docstring)
FATAL_KEYS = ("dbconfig.init_lua", "dbconfig.dataset", "dbconfig.rdb_checks",
              "dbconfig.configuration-parameters")

# Server parameters a suite may not set: they load code into the server, read or write host
# files, or move the server off the address and directory the runner gave it. Suites can come
# with a pull request (untrusted), and none of the team's 0.3.47 corpus sets any of these.
FORBIDDEN_SERVER_PARAMETERS = frozenset({
    "loadmodule", "include", "dir", "dbfilename", "appendfilename", "appenddirname", "logfile",
    "pidfile", "unixsocket", "unixsocketperm", "aclfile", "cluster-config-file", "daemonize",
    "supervised", "syslog-enabled", "syslog-ident", "syslog-facility", "port", "bind",
    "tls-port", "tls-cert-file", "tls-key-file", "tls-client-cert-file", "tls-client-key-file",
    "tls-ca-cert-file", "tls-ca-cert-dir", "tls-dh-params-file", "enable-module-command",
    "enable-protected-configs", "replicaof",
    "slaveof",
})
_DATASET_NAME = re.compile(r"^[A-Za-z0-9._:+-]{1,200}$")


@dataclass(frozen=True)
class RdbChecks:
    """``dbconfig.rdb_checks``: the untimed setup and fail-closed checks of an RDB test.

    ``save``: the measured command saves the preloaded dataset; ``load``: the dataset is
    saved and the database flushed before the measured command loads it back. Either way the
    dataset must have exactly ``keyspacelen`` keys and each of ``sample_keys`` a value of
    ``value_size`` bytes, unchanged after the command, which must have run exactly once.
    """

    operation: str
    keyspacelen: int
    value_size: int
    sample_keys: tuple[str, ...]

    @property
    def command(self) -> str:
        """The commandstats entry of the measured command (DEBUG RELOAD for a load)."""
        return "save" if self.operation == "save" else "debug"


@dataclass
class DbConfig:
    configuration_parameters: dict[str, str] = field(default_factory=dict)
    keyspacelen: int | None = None
    preload_tool: ToolConfig | None = None
    init_commands: list[list[str]] = field(default_factory=list)
    init_lua: list[str] = field(default_factory=list)  # each run once through EVAL <s> 0
    dataset: str | None = None  # an RDB: http(s):// or s3:// URL, or an absolute local path
    dataset_name: str | None = None
    dataset_description: str | None = None
    resources: dict[str, Any] = field(default_factory=dict)
    rdb_checks: RdbChecks | None = None
    wait_for_bgsave: bool = False
    preload_before_replica: bool = False
    skip_throughput_floor: bool = False
    low_throughput_benchmark: bool = False
    # who the runner and the clients authenticate as (suites/auth.py): as the server starts,
    # and once the init commands ran; None: no AUTH
    auth_at_start: Credentials | None = field(default=None, repr=False)
    auth: Credentials | None = field(default=None, repr=False)

    def server_args(self) -> list[str]:
        """``configuration-parameters`` as redis-server arguments (``--save ""`` style)."""
        args: list[str] = []
        for key, value in self.configuration_parameters.items():
            args.append(f"--{key}")
            args.extend(shlex.split(str(value)) if str(value).strip() else [""])
        return args

    @property
    def throughput_floor_waived(self) -> bool:
        """Sub-1-op/s results are expected by design (a single save or reload); a
        ``wait_for_bgsave`` suite measures the save, not the client's rate (the runner drops
        a rate too short to measure there)."""
        return self.skip_throughput_floor or self.low_throughput_benchmark or \
            self.wait_for_bgsave


def _server_parameters(reader: SpecReader, value: Any) -> dict[str, Any]:
    """``configuration-parameters``, refusing what :data:`FORBIDDEN_SERVER_PARAMETERS` names
    and values that would smuggle in another option (``save: '"" --loadmodule x.so'``)."""
    key = "dbconfig.configuration-parameters"
    params = reader.mapping(value, key)
    for name, param in params.items():
        if str(name).lower() in FORBIDDEN_SERVER_PARAMETERS:
            reader.problem(f"{key}.{name}", "a suite may not set this server parameter (it "
                                            "touches host files, loads code or moves the server)")
        try:
            words = split_words("" if param is None else str(param))
        except ValueError as exc:
            reader.problem(f"{key}.{name}", f"cannot split the value: {exc}")
            continue
        if any(w.startswith("--") for w in words):
            reader.problem(f"{key}.{name}", f"value {param!r} holds another server option")
    return params


def _init_commands(reader: SpecReader, value: Any) -> list[list[str]]:
    commands: list[list[str]] = []
    items = value if isinstance(value, list) else reader.str_list(value,
                                                                  "dbconfig.init_commands")
    for i, item in enumerate(items):
        key = f"dbconfig.init_commands[{i}]"
        if isinstance(item, list):
            commands.append([str(v) for v in item])
        elif isinstance(item, str):
            try:
                commands.append(split_words(item))
            except ValueError as exc:
                reader.problem(key, f"cannot split command: {exc}")
        else:
            reader.problem(key, f"expected a string or list, got {type(item).__name__}")
    return commands


def _init_lua(reader: SpecReader, value: Any) -> list[str]:
    scripts = [value] if isinstance(value, str) else value
    if scripts is None:
        return []
    if not isinstance(scripts, list):
        reader.problem("dbconfig.init_lua", f"expected a Lua script or a list of scripts, "
                                            f"got {type(value).__name__}")
        return []
    out = []
    for i, script in enumerate(scripts):
        if not isinstance(script, str) or not script.strip():
            reader.problem(f"dbconfig.init_lua[{i}]", "expected a non-empty Lua script")
            continue
        out.append(script)
    return out


def _dataset(reader: SpecReader, value: Any, base_dir: Path) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        reader.problem("dbconfig.dataset", f"expected a URL or path of an RDB file, "
                                           f"got {value!r}")
        return None
    url = urlparse(value.strip())
    if url.scheme in DATASET_SCHEMES:
        if not url.netloc or (url.scheme == "s3" and not url.path.strip("/")):
            reader.problem("dbconfig.dataset", f"incomplete URL {value!r}")
            return None
        return value.strip()
    if url.scheme and len(url.scheme) > 1:  # "C:" is a drive, anything longer a scheme
        reader.problem("dbconfig.dataset", f"unsupported URL scheme {url.scheme!r} in "
                                           f"{value!r} (http, https, s3 or a local path)")
        return None
    path = Path(value.strip()).expanduser()
    return str(path if path.is_absolute() else (base_dir / path).resolve())


def _rdb_checks(reader: SpecReader, value: Any) -> RdbChecks | None:
    key = "dbconfig.rdb_checks"
    raw = reader.mapping(value, key)
    if not raw:
        return None
    reader.unknown(raw, RDB_CHECKS_KEYS, f"{key}.")
    before = len(reader.problems)
    operation = raw.get("operation")
    if operation not in RDB_OPERATIONS:
        reader.problem(f"{key}.operation", f"expected one of {RDB_OPERATIONS}, "
                                           f"got {operation!r}")
    count = reader.integer(raw.get("keyspacelen"), f"{key}.keyspacelen", minimum=1)
    size = reader.integer(raw.get("value_size"), f"{key}.value_size", minimum=1)
    samples = raw.get("sample_keys")
    if not isinstance(samples, list) or not samples or not all(
            isinstance(s, str | int) and not isinstance(s, bool) for s in samples):
        reader.problem(f"{key}.sample_keys", "expected a non-empty list of key names")
        samples = []
    for name in ("keyspacelen", "value_size"):
        if name not in raw:
            reader.problem(f"{key}.{name}", "missing")
    if len(reader.problems) > before or count is None or size is None:
        return None
    return RdbChecks(str(operation), count, size, tuple(str(s) for s in samples))


def _describe(reader: SpecReader, raw: dict[str, Any]) -> tuple[str | None, str | None]:
    name = reader.text(raw.get("dataset_name"), "dbconfig.dataset_name")
    if name is not None and not _DATASET_NAME.match(name):
        # it becomes a label in the datasink and a profiler tag
        reader.problem("dbconfig.dataset_name", f"expected [A-Za-z0-9._:+-]{{1,200}}, "
                                                f"got {name!r}")
        name = None
    return name, reader.text(raw.get("dataset_description"), "dbconfig.dataset_description")


def parse_dbconfig(reader: SpecReader, value: Any, base_dir: Path) -> DbConfig:
    """``dbconfig``; ``base_dir`` (the suite's folder) anchors a relative dataset path."""
    raw = reader.mapping(value, "dbconfig")
    reader.unknown(raw, DBCONFIG_KEYS, "dbconfig.")
    check = reader.mapping(raw.get("check"), "dbconfig.check")
    reader.unknown(check, CHECK_KEYS, "dbconfig.check.")
    params = _server_parameters(reader, raw.get("configuration-parameters"))
    name, description = _describe(reader, raw)
    db = DbConfig(
        configuration_parameters={str(k): "" if v is None else str(v) for k, v in params.items()},
        keyspacelen=reader.integer(check.get("keyspacelen"), "dbconfig.check.keyspacelen"),
        preload_tool=parse_tool(reader, raw.get("preload_tool"), "dbconfig.preload_tool",
                                preload=True),
        init_commands=_init_commands(reader, raw.get("init_commands")),
        init_lua=_init_lua(reader, raw.get("init_lua")),
        dataset=_dataset(reader, raw.get("dataset"), base_dir),
        dataset_name=name,
        dataset_description=description,
        resources=reader.mapping(raw.get("resources"), "dbconfig.resources"),
        rdb_checks=_rdb_checks(reader, raw.get("rdb_checks")),
        wait_for_bgsave=reader.flag(raw.get("wait_for_bgsave"), "dbconfig.wait_for_bgsave"),
        preload_before_replica=reader.flag(raw.get("preload_before_replica"),
                                           "dbconfig.preload_before_replica"),
        skip_throughput_floor=reader.flag(raw.get("skip_throughput_floor"),
                                          "dbconfig.skip_throughput_floor"),
        low_throughput_benchmark=reader.flag(raw.get("low-throughput-benchmark"),
                                             "dbconfig.low-throughput-benchmark"),
    )
    db.auth_at_start, db.auth = declared(reader, params, db.init_commands)
    _cross_checks(reader, db)
    return db


def _cross_checks(reader: SpecReader, db: DbConfig) -> None:
    checks = db.rdb_checks
    if checks and db.keyspacelen is not None and db.keyspacelen != checks.keyspacelen:
        reader.problem("dbconfig.rdb_checks.keyspacelen",
                       f"{checks.keyspacelen} differs from dbconfig.check.keyspacelen "
                       f"{db.keyspacelen}")
    if db.preload_before_replica and db.preload_tool is None and not db.init_lua \
            and not db.init_commands:
        reader.problem("dbconfig.preload_before_replica", "set, but there is no preload",
                       WARNING)
