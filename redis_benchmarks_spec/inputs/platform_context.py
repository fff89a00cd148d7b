"""The platforms behind a datasink comparison: each side's record and the noise in effect.

Each side names a platform (``rbs compare --platform``, or ``--baseline-platform`` /
``--comparison-platform``); its description is the platform's newest record, and its noise
is the measurement in effect at the side's newest point (:func:`datasink.platforms.noise_at`),
so a host whose noise changed between two builds' runs is seen. Records are validated as
they are read; a bad one is a problem line, never a crash.
"""

from __future__ import annotations

import redis

from redis_benchmarks_spec.analysis.host_noise import HostSide, noise_flags
from redis_benchmarks_spec.datasink import platforms as store

SIDES = ("baseline", "comparison")


def _side(client: redis.Redis, side: str, platform: str, moment_ms: int | None
          ) -> tuple[HostSide, list[str]]:
    newest = store.latest(client, platform)
    found = store.noise_at(client, platform, moment_ms if moment_ms is not None else 2**62)
    host = HostSide(side, platform, newest.records[0] if newest.records else None,
                    found.records[0] if found.records else None)
    if host.description is None:
        host.note = (f"no platform record for {platform} in the datasink (an agent writes "
                     f"one at startup; or run `rbs platform record --platform {platform}` "
                     "on that host)")
    return host, newest.problems + found.problems


def hosts_of(client: redis.Redis, platforms: dict[str, str | None],
             newest_ms: dict[str, int | None]) -> tuple[list[HostSide], list[str], list[str]]:
    """(hosts, noise flags, problems) for the sides whose platform is named."""
    hosts, problems = [], []
    for side in SIDES:
        platform = platforms.get(side)
        if platform:
            host, found = _side(client, side, platform, newest_ms.get(side))
            hosts.append(host)
            problems += found
    return hosts, noise_flags(hosts), problems
