"""Stream messages: exact round trips through a real Redis stream, strict decoding."""

from __future__ import annotations

import math

import pytest

from redis_benchmarks_spec.events.messages import (
    ArtifactRef,
    BuildEvent,
    BuildFailure,
    BuildRequest,
    MalformedMessage,
    MessageError,
    RunStatus,
    SourceLocation,
    SuiteFilters,
    decode_any,
    decode_value,
    encode_value,
    event_id_for,
)
from redis_benchmarks_spec.events.names import StreamNames


def _request(**over: object) -> BuildRequest:
    base: dict[str, object] = {
        "org": "redis", "repo": "redis", "branch": "unstable", "sha": "a" * 40, "commit_time_ms": 1_700_000_000_123,
        "source": SourceLocation("redis", "rbs:source:aaa:1", sha256="f" * 64), "pr": 1234,
        "tag": None, "version": "7.2.4",
        "filters": SuiteFilters(tests_regexp="memtier.*get", priority_min=0, priority_max=10),
        "platforms": ["icelake-2s", "cascadelake"], "build_variants": ["gcc:12.2.0-amd64-debian-bookworm-default"],
    }
    base.update(over)
    return BuildRequest(**base)  # type: ignore[arg-type]


def _event() -> BuildEvent:
    return BuildEvent(
        id=event_id_for("r1", "gcc"), request_id="r1", org="redis", repo="redis", branch=None,
        sha="b" * 40, commit_time_ms=5, build_variant="gcc",
        artifact=ArtifactRef("redis", "rbs:artifact:b:gcc", "c" * 64, 123456, chunks=3),
        redis_version="7.0.15", env={"REDIS_CFLAGS": "-O3 -fno-omit-frame-pointer"},
    )


@pytest.mark.parametrize("value", [
    True, False, 0, -1, 2**62, 0.1, 1e-300, -0.0, 3.141592653589793, None, "", "False",
    "0", "null", "j:1", "ünïcødé", [], [1, "x", None, True], {"a": [1.5]},
    b"", b"\x00\xff\x80binary", "s:looks-tagged",
])
def test_values_round_trip_exactly(value: object) -> None:
    back = decode_value(encode_value(value))
    assert back == value and type(back) is type(value)
    if isinstance(value, float):
        assert math.copysign(1, back) == math.copysign(1, value)  # -0.0 stays -0.0


@pytest.mark.parametrize("msg", [
    _request(), _request(branch=None, pr=None, tag="v7.2.4", version=None), _event(),
    BuildFailure(request_id="r", sha="s", build_variant="gcc", reason="make exited 2",
                 log_tail="error: x\n" * 3),
    RunStatus(event_id="e", platform="p", agent="a", test_name="t", state="failed",
                  reason="timeout"),
])
def test_messages_round_trip_through_a_real_stream(redis_server, msg) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    entry_id = client.xadd("s", msg.encode())
    [(got_id, fields)] = client.xrange("s")
    assert got_id == entry_id
    assert type(msg).decode(fields, got_id.decode()) == msg
    assert decode_any(fields) == msg
    assert fields[b"v"] == str(msg.VERSION).encode() and fields[b"kind"] == msg.KIND.encode()


def test_booleans_are_never_parsed_from_text() -> None:
    # a "False" string must stay a string; an int field given "False" is malformed
    fields = _request().encode()
    fields["pr"] = b"s:False"
    with pytest.raises(MalformedMessage, match="field 'pr'"):
        BuildRequest.decode(fields, "9-1")


@pytest.mark.parametrize("mutate,field_name", [
    (lambda f: f.pop("sha"), "sha"),
    (lambda f: f.update(commit_time_ms=b"j:{not json"), "commit_time_ms"),
    (lambda f: f.update(commit_time_ms=b"j:1.5"), "commit_time_ms"),
    (lambda f: f.update(platforms=b"j:[1]"), "platforms"),
    (lambda f: f.update(org=b"x:no tag"), "org"),
    (lambda f: f.update(source=b'j:{"kind":"ftp","location":"x"}'), "source"),
    (lambda f: f.update(filters=b'j:{"bogus":1}'), "filters"),
    (lambda f: f.update(v=b"99"), "v"),
    (lambda f: f.pop("kind"), "kind"),
    (lambda f: f.update(extra=b"s:x"), "extra"),
])
def test_malformed_entries_name_field_and_entry(mutate, field_name) -> None:  # type: ignore[no-untyped-def]
    fields = _request().encode()
    mutate(fields)
    with pytest.raises(MalformedMessage) as info:
        BuildRequest.decode(fields, "1700-7")
    assert info.value.field_name == field_name
    assert info.value.entry_id == "1700-7"
    assert "1700-7" in str(info.value) and field_name in str(info.value)


def test_wrong_kind_is_malformed() -> None:
    with pytest.raises(MalformedMessage, match="expected 'build-event'"):
        BuildEvent.decode(_request().encode(), "1-1")


def test_invalid_values_refused_at_construction() -> None:
    with pytest.raises(MessageError):
        RunStatus(event_id="e", platform="p", agent="a", test_name="t", state="done")
    with pytest.raises(MessageError):
        SourceLocation("ftp", "x")


def test_stream_names_prefix_and_env() -> None:
    names = StreamNames.from_env({"RBS_STREAM_PREFIX": "lab1", "RBS_BUILDS_STREAM": "custom"})
    assert names.build_requests == "lab1:build-requests"
    assert names.builds == "custom"
    assert names.status_key("e1") == "lab1:status:e1"
    assert names.heartbeat_key("icelake", "host-1") == "lab1:heartbeat:icelake:host-1"
    assert names.platform_group("icelake") == "platform:icelake"
    assert names.platform_of_group("platform:icelake") == "icelake"
    assert StreamNames().dead_letter == "rbs:dead-letter"


@pytest.mark.parametrize("branch", ["unstable\u202e", "fe\u200bat", "a\u2066b\u2069",
                                    "\ufeffmain", "x\u00a0y", "a\u2028b"])
def test_a_ref_that_shows_as_another_name_is_refused_on_the_stream(branch: str) -> None:
    """Anyone with broker access writes entries: a branch with a bidirectional or invisible
    character (Trojan Source) is refused where the entry is decoded, naming the character."""
    from redis_benchmarks_spec.events.messages import (
        SOURCE_GIT,
        BuildRequest,
        MalformedMessage,
        SourceLocation,
    )
    good = BuildRequest(org="redis", repo="redis", branch="unstable", sha="a" * 40,
                        commit_time_ms=1, source=SourceLocation(SOURCE_GIT, "/srv/redis"))
    fields = {k.encode() if isinstance(k, str) else k: v for k, v in good.encode().items()}
    assert BuildRequest.decode(fields).branch == "unstable"
    fields[b"branch"] = b"s:" + branch.encode()
    with pytest.raises(MalformedMessage, match=r"U\+[0-9A-F]{4}"):
        BuildRequest.decode(fields)
    assert "ünïcode/feature" == BuildRequest.decode(
        {**fields, b"branch": "s:ünïcode/feature".encode()}).branch
