"""A replayed commit's cost per stage, read from what the lab records in a real broker: the
request's and the build event's times, the platforms' stored run documents and their
event-end statuses; a platform with nothing stored has no figure (never a made-up one)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from redis_benchmarks_spec.events.follow import PlatformProgress, RequestProgress
from redis_benchmarks_spec.events.messages import BuildRequest, RunStatus
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, record_statuses
from redis_benchmarks_spec.lab.stage_cost import stage_cost
from tests.hostile_fixtures import event, signed_ref
from tests.pipeline_fixtures import unused_source

SHA = "f" * 40
T0 = 1_790_000_000_000  # the request, in ms


def test_stages_come_from_the_recorded_times(redis_server: Any) -> None:
    client = redis_server.client()
    names = StreamNames.with_prefix(f"sc{uuid.uuid4().hex[:8]}")
    request = BuildRequest(org="redis", repo="redis", branch="unstable", sha=SHA,
                           commit_time_ms=T0, source=unused_source(), requested_at_ms=T0)
    built = event(signed_ref(client, names, SHA, b"x"), SHA, built_at_ms=T0 + 95_000)
    # p1: two runs 100-130 s and 140-160 s after the request, its end at 163.5 s
    runs = [{"start_ms": T0 + 100_000, "end_ms": T0 + 130_000},
            {"start_ms": T0 + 140_000, "end_ms": T0 + 160_000}]
    client.hset(f"{names.prefix}:results:{built.id}:p1", "t", json.dumps(runs))
    client.hset(f"{names.prefix}:results:{built.id}:p2", "t", "not json")
    record_statuses(client, names, [
        RunStatus(built.id, "p1", "a1", EVENT_DONE, "completed", ts_ms=T0 + 163_500),
        RunStatus(built.id, "p2", "a2", EVENT_DONE, "failed", ts_ms=T0 + 170_000)])
    progress = RequestProgress(request, {built.id: built}, platforms={
        (built.id, "p1"): PlatformProgress(done=True), (built.id, "p2"): PlatformProgress()})

    cost = stage_cost(client, names, [progress])

    assert cost.build_s == 95.0
    assert cost.setup_s == {"p1": 5.0} and cost.runs_s == {"p1": 60.0}
    assert cost.push_judge_s == {"p1": 3.5}  # p2 stored nothing readable: no figure
    assert cost.line() == "build 95 s, setup 5 s, runs 60 s, push+judge 4 s, confirm -"
    assert json.loads(json.dumps(cost.to_dict()))["runs_s"] == {"p1": 60.0}
