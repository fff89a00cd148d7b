"""Every message that travels on a stream, defined once, typed and versioned.

Wire format (one stream entry = one message):

- ``kind``: the message type (``build-request``, ``build-event``, ``build-failure``,
  ``test-status``), stored as plain text so ``redis-cli XRANGE`` stays readable;
- ``v``: the schema version of that kind, plain decimal text;
- every other field is a *type-tagged* value, so nothing is ever guessed from a string
  (``bool("False")`` was a bug of the system we replace):

  ``s:<utf-8 text>``   a ``str``
  ``b:<raw bytes>``    a ``bytes`` value, byte for byte
  ``j:<JSON>``         anything else: bool, int, float, None, list, dict, nested message parts

Python's JSON float repr round-trips exactly, so floats come back bit for bit.
Decoding checks every field against the dataclass annotations; a missing, unknown or
garbled field raises :class:`MalformedMessage` naming the field and the entry id.
A writer of a new field bumps the kind's version; readers refuse versions they do not know.
"""

from __future__ import annotations

import dataclasses
import json
import time
import types
import typing
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin

from redis_benchmarks_spec.common.safejson import loads as bounded_json_loads
from redis_benchmarks_spec.events import validation as check
from redis_benchmarks_spec.events.errors import MessageError

KIND_FIELD = "kind"
VERSION_FIELD = "v"
RESERVED_FIELDS = (KIND_FIELD, VERSION_FIELD)

TAG_STR = b"s:"
TAG_BYTES = b"b:"
TAG_JSON = b"j:"

# an entry is untrusted: bounded before anything is parsed
MAX_FIELDS = 64
MAX_FIELD_BYTES = 1024 * 1024
MAX_JSON_DEPTH = 8


class MalformedMessage(MessageError):
    """A stream entry that cannot be decoded into its message type."""

    def __init__(self, entry_id: str | None, field_name: str | None, reason: str) -> None:
        self.entry_id = entry_id
        self.field_name = field_name
        self.reason = reason
        where = f"entry {entry_id or '?'}"
        if field_name:
            where += f", field {field_name!r}"
        super().__init__(f"malformed stream message ({where}): {reason}")


def now_ms() -> int:
    """Wall-clock time in milliseconds since the epoch."""
    return int(time.time() * 1000)


def new_id() -> str:
    """A fresh, globally unique message id (32 hex characters)."""
    return uuid.uuid4().hex


def event_id_for(request_id: str, build_variant: str) -> str:
    """The deterministic id of the build event for one request and one build variant.

    Deterministic so a builder that crashes after publishing and re-processes the request
    republishes the *same* event id, and agents can recognise work they already did.
    """
    return f"{request_id}:{build_variant}"


# --------------------------------------------------------------------------- message parts

SOURCE_REDIS = "redis"  # location = a Redis key holding the `git archive --format=tar.gz` bytes
SOURCE_S3 = "s3"  # location = s3://bucket/key of that tarball
SOURCE_GIT = "git"  # location = a git remote URL to fetch the request's sha from
SOURCE_KINDS = (SOURCE_REDIS, SOURCE_S3, SOURCE_GIT)

ARTIFACT_REDIS = "redis"  # location = Redis key (or key prefix when chunked)
ARTIFACT_S3 = "s3"  # location = s3://bucket/key
ARTIFACT_KINDS = (ARTIFACT_REDIS, ARTIFACT_S3)


@dataclass(frozen=True)
class SourceLocation:
    """Where a builder finds the source of a commit."""

    kind: str  # one of SOURCE_KINDS
    location: str
    sha256: str | None = None  # of the archive, when kind is redis or s3

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise MessageError(f"source kind {self.kind!r} is not one of {SOURCE_KINDS}")
        if self.kind == SOURCE_GIT:
            check.url("source.location", self.location)
        else:
            check.key("source.location", self.location)
        if self.sha256 is not None:
            check.sha256("source.sha256", self.sha256)


@dataclass(frozen=True)
class SuiteFilters:
    """Which tests a request asks for (regexps match the whole name, Python syntax)."""

    tests_regexp: str = ".*"
    groups_regexp: str = ".*"
    commands_regexp: str = ".*"
    priority_min: int | None = None
    priority_max: int | None = None

    def __post_init__(self) -> None:
        for name in ("tests_regexp", "groups_regexp", "commands_regexp"):
            check.regexp(f"filters.{name}", getattr(self, name))
        check.optional_integer("filters.priority_min", self.priority_min, -check.MAX_INT)
        check.optional_integer("filters.priority_max", self.priority_max, -check.MAX_INT)


@dataclass(frozen=True)
class ArtifactRef:
    """Where a build's packaged binaries are and how to verify them."""

    kind: str  # one of ARTIFACT_KINDS
    location: str
    sha256: str
    size_bytes: int
    chunks: int = 1  # >1: Redis keys f"{location}:{i}" for i in range(chunks)
    # HMAC-SHA256 (hex) with the builders' and agents' artifact key: see builder/signing.py
    mac: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ARTIFACT_KINDS:
            raise MessageError(f"artifact kind {self.kind!r} is not one of {ARTIFACT_KINDS}")
        check.key("artifact.location", self.location)
        check.sha256("artifact.sha256", self.sha256)
        check.artifact_size(self.size_bytes, self.chunks, self.kind == ARTIFACT_REDIS)
        if self.mac:
            check.sha256("artifact.mac", self.mac)


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True)
class Message:
    """Base of every stream message; subclasses set ``KIND`` and ``VERSION``."""

    KIND: ClassVar[str] = ""
    VERSION: ClassVar[int] = 0

    def encode(self) -> dict[str, bytes]:
        """The flat stream fields of this message (pass to ``XADD``)."""
        return encode_message(self)

    @classmethod
    def decode(cls: type[M], fields: Mapping[Any, Any], entry_id: str | None = None) -> M:  # noqa: PYI019
        """Decode stream fields into this message type, or raise :class:`MalformedMessage`."""
        return decode_message(cls, fields, entry_id)


M = TypeVar("M", bound=Message)


@dataclass(frozen=True)
class BuildRequest(Message):
    """A request to build one commit in some build variants (trigger/webhook -> builders)."""

    KIND: ClassVar[str] = "build-request"
    VERSION: ClassVar[int] = 2  # v2: base_sha

    org: str
    repo: str
    branch: str | None
    sha: str
    commit_time_ms: int
    source: SourceLocation
    id: str = field(default_factory=new_id)
    pr: int | None = None
    tag: str | None = None
    version: str | None = None
    filters: SuiteFilters = field(default_factory=SuiteFilters)
    platforms: list[str] = field(default_factory=list)  # empty = every platform
    build_variants: list[str] = field(default_factory=list)  # empty = builder's defaults
    triggering_env: str = "ci"
    requested_at_ms: int = field(default_factory=now_ms)
    # a pull request's base commit (webhook): the builder stores what base..sha changes
    base_sha: str | None = None

    def __post_init__(self) -> None:
        check.ident("id", self.id)
        _check_origin(self)
        if self.base_sha is not None:
            check.sha("base_sha", self.base_sha)
        check.names("platforms", self.platforms)
        check.names("build_variants", self.build_variants)
        check.integer("requested_at_ms", self.requested_at_ms)


@dataclass(frozen=True)
class BuildEvent(Message):
    """One built artifact of one request in one build variant (builders -> agents)."""

    KIND: ClassVar[str] = "build-event"
    VERSION: ClassVar[int] = 2  # v2: artifact.mac

    id: str  # event_id_for(request_id, build_variant)
    request_id: str
    org: str
    repo: str
    branch: str | None
    sha: str
    commit_time_ms: int
    build_variant: str
    artifact: ArtifactRef
    redis_version: str
    version: str | None = None  # release version/tag being benchmarked, when any
    pr: int | None = None
    tag: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # e.g. REDIS_CFLAGS used by the build
    filters: SuiteFilters = field(default_factory=SuiteFilters)
    platforms: list[str] = field(default_factory=list)
    triggering_env: str = "ci"
    built_at_ms: int = field(default_factory=now_ms)

    def __post_init__(self) -> None:
        check.ident("id", self.id)
        check.ident("request_id", self.request_id)
        _check_origin(self)
        check.name("build_variant", self.build_variant)
        check.text("redis_version", self.redis_version, 200)
        check.env("env", self.env)
        check.names("platforms", self.platforms)
        check.integer("built_at_ms", self.built_at_ms)


@dataclass(frozen=True)
class BuildFailure(Message):
    """A build of one request in one variant that failed (builders -> failures stream)."""

    KIND: ClassVar[str] = "build-failure"
    VERSION: ClassVar[int] = 1

    request_id: str
    sha: str
    build_variant: str
    reason: str
    log_tail: str = ""
    org: str = ""
    repo: str = ""
    branch: str | None = None
    failed_at_ms: int = field(default_factory=now_ms)

    def __post_init__(self) -> None:
        check.ident("request_id", self.request_id)
        check.text("sha", self.sha, 64)
        check.name("build_variant", self.build_variant)
        check.optional_ref("branch", self.branch)
        check.text("reason", self.reason)
        check.text("log_tail", self.log_tail, check.MAX_LOG_TAIL)


DEAD_LETTERED = "dead-lettered"  # the entry was moved to the dead-letter stream, with why
TestState = Literal["pending", "running", "completed", "failed", "dead-lettered"]
TEST_STATES: tuple[str, ...] = ("pending", "running", "completed", "failed", DEAD_LETTERED)
# every test and every event ends in one of these (with a reason unless completed); a v1
# reader that predates "dead-lettered" skips such a status as malformed, never crashes
FINAL_STATES: tuple[str, ...] = ("completed", "failed", DEAD_LETTERED)


@dataclass(frozen=True)
class RunStatus(Message):
    """The state of one test of one build event on one platform (agents -> status)."""


    KIND: ClassVar[str] = "test-status"
    VERSION: ClassVar[int] = 1

    event_id: str
    platform: str
    agent: str
    test_name: str
    state: str  # one of TEST_STATES
    reason: str = ""
    ts_ms: int = field(default_factory=now_ms)

    def __post_init__(self) -> None:
        if self.state not in TEST_STATES:
            raise MessageError(f"test state {self.state!r} is not one of {TEST_STATES}")
        check.ident("event_id", self.event_id)
        check.name("platform", self.platform)
        check.name("agent", self.agent)
        check.name("test_name", self.test_name)
        check.text("reason", self.reason)

    @property
    def final(self) -> bool:
        """True when the test will not change state any more."""
        return self.state in FINAL_STATES


def _check_origin(message: BuildRequest | BuildEvent) -> None:
    """The fields a request and its events share: where the code comes from."""
    check.name("org", message.org)
    check.name("repo", message.repo)
    check.optional_ref("branch", message.branch)
    check.sha("sha", message.sha)
    check.integer("commit_time_ms", message.commit_time_ms)
    check.optional_ref("tag", message.tag)
    check.optional_ref("version", message.version)
    check.optional_integer("pr", message.pr, 1, 2**31)
    check.name("triggering_env", message.triggering_env)


MESSAGE_TYPES: dict[str, type[Message]] = {
    t.KIND: t for t in (BuildRequest, BuildEvent, BuildFailure, RunStatus)
}


# --------------------------------------------------------------------------- codec


def encode_value(value: Any) -> bytes:
    """One tagged field value (see the module docstring)."""
    if isinstance(value, str):
        return TAG_STR + value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return TAG_BYTES + bytes(value)
    return TAG_JSON + json.dumps(_jsonable(value), separators=(",", ":")).encode("utf-8")


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise MessageError(f"cannot encode a {type(value).__name__} in a stream message")


def decode_value(raw: bytes | str) -> Any:
    """The Python value of one tagged field value; ``ValueError`` when it is garbled."""
    data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    if len(data) > MAX_FIELD_BYTES:
        raise ValueError(f"value of {len(data)} bytes exceeds {MAX_FIELD_BYTES}")
    tag, body = data[:2], data[2:]
    if tag == TAG_STR:
        return body.decode("utf-8")
    if tag == TAG_BYTES:
        return body
    if tag == TAG_JSON:
        return bounded_json_loads(body, MAX_JSON_DEPTH)
    raise ValueError(f"unknown type tag {tag!r}")


def encode_message(message: Message) -> dict[str, bytes]:
    """The flat stream fields of ``message``, including ``kind`` and ``v``."""
    fields: dict[str, bytes] = {
        KIND_FIELD: message.KIND.encode(),
        VERSION_FIELD: str(message.VERSION).encode(),
    }
    for f in dataclasses.fields(message):
        fields[f.name] = encode_value(getattr(message, f.name))
    return fields


def _text(raw: Any) -> str:
    return raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else str(raw)


def _texts(fields: Mapping[Any, Any], entry_id: str | None) -> dict[str, Any]:
    """Field names as text; a non-UTF-8 name or too many fields is malformed."""
    if len(fields) > MAX_FIELDS:
        raise MalformedMessage(entry_id, None, f"{len(fields)} fields (limit {MAX_FIELDS})")
    texts: dict[str, Any] = {}
    for raw_name, value in fields.items():
        try:
            texts[_text(raw_name)] = value
        except UnicodeDecodeError as exc:
            raise MalformedMessage(entry_id, repr(raw_name)[:80],
                                   "field name is not UTF-8") from exc
    return texts


def _header_text(texts: dict[str, Any], name: str, entry_id: str | None) -> str:
    try:
        return _text(texts[name])[:100]
    except UnicodeDecodeError as exc:
        raise MalformedMessage(entry_id, name, "not UTF-8") from exc


def kind_of(fields: Mapping[Any, Any], entry_id: str | None = None) -> type[Message]:
    """The message class an entry claims to be, or :class:`MalformedMessage`."""
    texts = _texts(fields, entry_id)
    if KIND_FIELD not in texts:
        raise MalformedMessage(entry_id, KIND_FIELD, "missing")
    kind = _header_text(texts, KIND_FIELD, entry_id)
    if kind not in MESSAGE_TYPES:
        raise MalformedMessage(entry_id, KIND_FIELD, f"unknown message kind {kind!r}")
    return MESSAGE_TYPES[kind]


def decode_any(fields: Mapping[Any, Any], entry_id: str | None = None) -> Message:
    """Decode an entry of any known kind (dispatching on its ``kind`` field)."""
    return decode_message(kind_of(fields, entry_id), fields, entry_id)


def decode_message(cls: type[M], fields: Mapping[Any, Any], entry_id: str | None = None) -> M:
    """Decode stream ``fields`` (bytes or str keys/values) into ``cls``, checking every type."""
    texts = _texts(fields, entry_id)
    _check_header(cls, texts, entry_id)
    hints = _hints(cls)
    names = set(hints)
    unknown = sorted(set(texts) - names - set(RESERVED_FIELDS))
    if unknown:
        raise MalformedMessage(entry_id, unknown[0], f"unknown field for {cls.KIND} v{cls.VERSION}")
    kwargs: dict[str, Any] = {}
    for name in sorted(names):
        if name not in texts:
            raise MalformedMessage(entry_id, name, "missing")
        try:
            kwargs[name] = _coerce(decode_value(texts[name]), hints[name], name)
        except (ValueError, TypeError, RecursionError) as exc:  # UnicodeError is a ValueError
            raise MalformedMessage(entry_id, name, str(exc)[:500]) from exc
    try:
        return cls(**kwargs)
    except MessageError as exc:
        raise MalformedMessage(entry_id, None, str(exc)) from exc


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """Resolved annotations of a dataclass's fields (resolving them is slow: cached)."""
    if cls not in _HINTS:
        resolved = typing.get_type_hints(cls)
        _HINTS[cls] = {f.name: resolved[f.name] for f in dataclasses.fields(cls)}
    return _HINTS[cls]


def _check_header(cls: type[Message], texts: dict[str, Any], entry_id: str | None) -> None:
    if KIND_FIELD not in texts:
        raise MalformedMessage(entry_id, KIND_FIELD, "missing")
    kind = _header_text(texts, KIND_FIELD, entry_id)
    if kind != cls.KIND:
        raise MalformedMessage(entry_id, KIND_FIELD, f"expected {cls.KIND!r}, got {kind!r}")
    if VERSION_FIELD not in texts:
        raise MalformedMessage(entry_id, VERSION_FIELD, "missing")
    version = _header_text(texts, VERSION_FIELD, entry_id)
    if version != str(cls.VERSION):
        raise MalformedMessage(entry_id, VERSION_FIELD,
                               f"unsupported {cls.KIND} version {version!r} "
                               f"(this reader knows v{cls.VERSION})")


def _coerce(value: Any, hint: Any, name: str) -> Any:
    """``value`` checked against the annotation ``hint`` (nested dataclasses rebuilt)."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        for option in get_args(hint):
            try:
                return _coerce(value, option, name)
            except (TypeError, ValueError):
                continue
        raise TypeError(f"{value!r} is not a {hint}")
    if hint is type(None):
        if value is not None:
            raise TypeError(f"{value!r} is not None")
        return None
    if origin is list:
        if not isinstance(value, list):
            raise TypeError(f"expected a list, got {type(value).__name__}")
        (item,) = get_args(hint) or (Any,)
        return [_coerce(v, item, name) for v in value]
    if origin is dict:
        if not isinstance(value, dict):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        _, item = get_args(hint) or (str, Any)
        return {str(k): _coerce(v, item, name) for k, v in value.items()}
    if origin is Literal:
        if value not in get_args(hint):
            raise ValueError(f"{value!r} is not one of {get_args(hint)}")
        return value
    if dataclasses.is_dataclass(hint):
        return _build_part(hint, value)
    return _coerce_scalar(value, hint)


def _coerce_scalar(value: Any, hint: Any) -> Any:
    if hint is Any:
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise TypeError(f"expected a boolean, got {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected an integer, got {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"expected a number, got {value!r}")
        return float(value)
    if hint in (str, bytes):
        if not isinstance(value, hint):
            raise TypeError(f"expected {hint.__name__}, got {type(value).__name__}")
        return value
    raise TypeError(f"unsupported annotation {hint!r}")


def _build_part(cls: Any, value: Any) -> Any:
    if not isinstance(value, dict):
        raise TypeError(f"expected an object for {cls.__name__}, got {type(value).__name__}")
    hints = _hints(cls)
    unknown = sorted(set(value) - set(hints))
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} in {cls.__name__}")
    missing = sorted(f.name for f in dataclasses.fields(cls)
                     if f.name not in value and f.default is dataclasses.MISSING
                     and f.default_factory is dataclasses.MISSING)
    if missing:
        raise ValueError(f"missing key {missing[0]!r} in {cls.__name__}")
    kwargs = {k: _coerce(v, hints[k], k) for k, v in value.items()}
    try:
        return cls(**kwargs)
    except MessageError as exc:
        raise ValueError(str(exc)) from exc
