"""No false failures: the server's error counters decide; memtier's audit only hints.

Uses the recorded memtier sample of a WRONGTYPE collision (tests/fixtures/memtier) and a real
redis-server for the counters.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from redis_benchmarks_spec.loadgen.base import Invocation
from redis_benchmarks_spec.loadgen.memtier_audit import audit_notes, in_transaction
from redis_benchmarks_spec.loadgen.memtier_driver import MemtierDriver
from redis_benchmarks_spec.loadgen.memtier_json import load_json
from redis_benchmarks_spec.results.assembly import merged_findings
from redis_benchmarks_spec.runner.error_hints import (
    SUSPECTED_ERRORS,
    server_counts_errors,
    weigh_tool_notes,
)
from redis_benchmarks_spec.telemetry import info as info_mod
from tests.conftest import RedisServer
from tests.test_memtier_parse import WRONGTYPE

HSET = ["memtier_benchmark", "--command", "HSET __key__ f __data__"]
# the held-out corpus suite's shape: HSETNX/HEXISTS/HGET/HDEL inside MULTI/EXEC, pipeline 20
MULTI = ["memtier_benchmark", "--pipeline=20", "--command", "MULTI",
         "--command", "HSETNX __key__ f __data__", "--command", "HEXISTS __key__ f",
         "--command", "HGET __key__ f", "--command", "HDEL __key__ f", "--command", "EXEC"]


def test_audit_is_a_note_with_its_reasoning() -> None:
    [note] = audit_notes(load_json(WRONGTYPE), "", HSET)
    assert "about 36,248 error replies" in note
    assert "estimated from received bytes" in note and "decide" in note


def test_transactions_are_not_audited_by_reply_size() -> None:
    assert in_transaction(MULTI) and not in_transaction(HSET)
    notes = audit_notes(load_json(WRONGTYPE), "", [*MULTI, "--command", "HSET __key__ f x"])
    assert len(notes) == 1 and "+QUEUED" in notes[0] and "36,248" not in notes[0]


def test_memtier_driver_never_fails_on_the_audit(tmp_path: Path) -> None:
    json_path = tmp_path / "client-0.json"
    shutil.copyfile(WRONGTYPE, json_path)
    stdout = tmp_path / "client-0.out"
    stdout.write_text("")
    inv = Invocation(HSET, stdout, json_path, 5.0)
    result = MemtierDriver("memtier_benchmark").parse(inv, 0)
    assert result.totals.ops_per_sec > 0
    assert len(result.notes) == 1 and "error replies" in result.notes[0]


def test_server_counters_are_the_authority(tmp_path: Path) -> None:
    server = RedisServer(tmp_path)
    try:
        client = server.client()
        before = info_mod.snapshot(client)
        client.set("k", "v")
        after = info_mod.snapshot(client)
    finally:
        server.stop()
    assert server_counts_errors([after])
    count, _ = info_mod.error_replies(before, after)
    assert count == 0
    tool = MemtierDriver("memtier_benchmark")
    inv_dir = tmp_path / "inv"
    inv_dir.mkdir()
    shutil.copyfile(WRONGTYPE, inv_dir / "c.json")
    (inv_dir / "c.out").write_text("")
    tool_result = tool.parse(Invocation(HSET, inv_dir / "c.out", inv_dir / "c.json", 5.0), 0)
    flags, notes = merged_findings([weigh_tool_notes(tool_result,
                                                     server_counts_errors([after]), count)])
    assert flags == []
    assert "the server counted 0 error replies, and its count decides" in notes[0]
    # a server without error counters (Redis < 6.2): the hint raises a flag, never a failure
    old = info_mod.InfoSnapshot({k: v for k, v in after.info.items()
                                 if k != "total_error_replies"}, after.commandstats)
    assert not server_counts_errors([old])
    flags, notes = merged_findings([weigh_tool_notes(tool_result, False, 0)])
    assert flags == [SUSPECTED_ERRORS]
    assert "no error counters" in notes[0]
