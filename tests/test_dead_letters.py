"""`rbs admin dead-letter`: the dead-letter stream has a reader that shows each entry's
origin and reason (the record GroupConsumer.dead_letter writes)."""

from __future__ import annotations

import pytest

from redis_benchmarks_spec.events.consumer import GroupConsumer, publish
from redis_benchmarks_spec.events.dead_letters import read_dead_letters
from redis_benchmarks_spec.events.messages import BuildFailure
from redis_benchmarks_spec.events.names import StreamNames
from tests.cli import rbs_in_process
from tests.conftest import RedisServer

NAMES = StreamNames.with_prefix("dl")


def test_dead_letters_listed_with_reasons(redis_server: RedisServer,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    client = redis_server.client()
    bad = client.xadd(NAMES.build_failures, {"kind": "build-failure", "v": "1", "sha": "j:{"})
    publish(client, NAMES.build_failures, BuildFailure(request_id="r1", sha="s",
                                                       build_variant="v", reason="x"))
    consumer = GroupConsumer(client, NAMES.build_failures, "g", "c-1", block_ms=100,
                             dead_letter_stream=NAMES.dead_letter)
    (entry,) = consumer.read()
    assert consumer.decode(entry, BuildFailure) is None  # dead-lettered, with its reason
    (letter,) = read_dead_letters(client, NAMES)
    assert letter.entry_id == bad.decode() and letter.stream == NAMES.build_failures
    assert letter.consumer == "c-1" and "malformed" in letter.reason
    assert letter.original == {"kind": "build-failure", "v": "1", "sha": "j:{"}
    assert rbs_in_process(["admin", "dead-letter", "--broker", redis_server.url, "--stream-prefix",
                           "dl"]) == 0
    out = capsys.readouterr().out
    assert bad.decode() in out and "malformed" in out and "sha=j:{" in out
