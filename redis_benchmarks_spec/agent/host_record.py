"""What an agent writes about its host at startup: the platform's description and its
intrinsic latency (``results.platform``), so comparisons show the hosts behind the numbers.

A daemon keeps going whatever happens here: a measurement that fails is logged and the
description is stored without it; a datasink that refuses is logged (the next start, or
``rbs platform record``, writes it again).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import redis

from redis_benchmarks_spec.datasink import platforms
from redis_benchmarks_spec.results.platform import IntrinsicLatency, PlatformRecord
from redis_benchmarks_spec.telemetry import platform_probe

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class NoiseOptions:
    """How the agent measures its noise at startup (``seconds`` 0: not at all)."""

    seconds: float = 5.0
    cpu: int | None = None


def _noise(options: NoiseOptions) -> IntrinsicLatency | None:
    if options.seconds <= 0:
        return None
    try:
        return platform_probe.measure_noise(options.seconds, options.cpu)
    except (platform_probe.NoiseProbeError, OSError) as exc:
        log.warning("host noise not measured: %s (description stored without it)", exc)
        return None


def record_host(datasink: redis.Redis, platform: str, options: NoiseOptions
                ) -> PlatformRecord:
    """Describe this host, measure its noise and store both under ``platform``."""
    record = platform_probe.record(platform, "agent", _noise(options))
    try:
        platforms.write(datasink, record)
    except redis.RedisError as exc:
        log.warning("platform record of %s not stored: %s", platform, exc)
        return record
    noise = record.noise
    log.info("platform %s recorded (host %s%s)", platform, record.host,
             f", {noise.lost_pct:.2f} % of time lost to interruptions" if noise else
             ", noise not measured")
    return record
