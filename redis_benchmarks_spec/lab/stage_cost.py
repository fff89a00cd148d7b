"""What one replayed commit cost, stage by stage, from what the lab recorded on the way.

From the broker alone (nothing is timed twice): the build request's ``requested_at_ms`` and
the build event's ``built_at_ms`` (the build, queue included); per platform, the stored result
documents' ``start_ms``/``end_ms`` (the runs: first start to last end) and the event's end
status (``__event__``'s ``ts_ms``); so

- ``build_s``: request to build event (the slowest variant),
- ``setup_s``: build event to the platform's first run (fetch, unpack, suite selection),
- ``runs_s``: the platform's first run start to its last run end,
- ``push_judge_s``: last run end to the event's end (the datasink push and the judging of
  the new points on arrival),

and ``confirm_s``, which the replay measures itself (the confirmer's re-runs, bisection and
alerts after the commit's events ended). A stage whose records are missing is ``None``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.events.follow import RequestProgress
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, read_statuses


@dataclass
class StageCost:
    """Seconds per stage of one commit (see the module doc); per platform where it differs."""

    build_s: float | None = None
    setup_s: dict[str, float] = field(default_factory=dict)
    runs_s: dict[str, float] = field(default_factory=dict)
    push_judge_s: dict[str, float] = field(default_factory=dict)
    confirm_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"build_s": self.build_s, "setup_s": self.setup_s, "runs_s": self.runs_s,
                "push_judge_s": self.push_judge_s, "confirm_s": self.confirm_s}

    def line(self) -> str:
        """One line for the terminal: each stage, the slowest platform's figure."""
        def most(values: dict[str, float]) -> str:
            return f"{max(values.values()):.0f} s" if values else "-"
        build = "-" if self.build_s is None else f"{self.build_s:.0f} s"
        confirm = "-" if self.confirm_s is None else f"{self.confirm_s:.0f} s"
        return f"build {build}, setup {most(self.setup_s)}, runs {most(self.runs_s)}, " \
               f"push+judge {most(self.push_judge_s)}, confirm {confirm}"


def _run_windows(client: redis.Redis, names: StreamNames, event_id: str,
                 platform: str) -> tuple[int, int] | None:
    """(first start, last end) in ms of the platform's stored runs of the event."""
    starts, ends = [], []
    for value in client.hvals(f"{names.prefix}:results:{event_id}:{platform}"):
        try:
            runs = json.loads(value)
        except ValueError:
            continue
        for doc in runs if isinstance(runs, list) else []:
            start, end = (doc.get("start_ms"), doc.get("end_ms")) if isinstance(doc, dict) \
                else (None, None)
            if isinstance(start, int) and isinstance(end, int) and 0 < start <= end:
                starts.append(start)
                ends.append(end)
    return (min(starts), max(ends)) if starts else None


def stage_cost(client: redis.Redis, names: StreamNames,
               progress: list[RequestProgress]) -> StageCost:
    """The stages of one pushed commit's requests (see the module doc)."""
    cost = StageCost()
    for prog in progress:
        for event_id, event in prog.events.items():
            build = (event.built_at_ms - prog.request.requested_at_ms) / 1000
            cost.build_s = max(cost.build_s or 0.0, build) if build >= 0 else cost.build_s
            ended = {s.platform: s.ts_ms for s in read_statuses(client, names, event_id)
                     if s.test_name == EVENT_DONE}
            for (eid, platform) in prog.platforms:
                window = _run_windows(client, names, eid, platform) if eid == event_id else None
                if window is None:
                    continue
                first, last = window
                cost.setup_s[platform] = max(0.0, (first - event.built_at_ms) / 1000)
                cost.runs_s[platform] = (last - first) / 1000
                if platform in ended:
                    cost.push_judge_s[platform] = max(0.0, (ended[platform] - last) / 1000)
    return cost
