"""HdrHistogram helpers: memtier's ``Compressed Histogram`` strings (values in microseconds).

Percentiles come from the decoded histogram exactly as memtier computes its printed ones
(``value_at_percentile / 1000``, in milliseconds), so merged runs and merged parallel clients
get exact percentiles rather than averages of percentiles.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable

from hdrh.codec import HdrCookieException, HdrHistogramSettingsException, HdrLengthException
from hdrh.histogram import HdrHistogram

from redis_benchmarks_spec.loadgen.result import PERCENTILES, LatencySummary, percentile_label

US_PER_MS = 1000.0


def decode(encoded: str) -> HdrHistogram:
    """Decode a base64 "HISTFAAA..." string; raises ValueError on garbage."""
    try:
        return HdrHistogram.decode(encoded)
    except (ValueError, TypeError, zlib.error, struct.error, HdrCookieException,
            HdrLengthException, HdrHistogramSettingsException) as exc:
        raise ValueError(f"cannot decode HdrHistogram: {exc}") from exc


def merge(histograms: Iterable[HdrHistogram]) -> HdrHistogram | None:
    """One histogram holding every recorded value of ``histograms`` (None if there are none)."""
    merged: HdrHistogram | None = None
    for hist in histograms:
        if hist.get_total_count() == 0:
            continue
        if merged is None:
            merged = HdrHistogram(hist.lowest_trackable_value,
                                  hist.highest_trackable_value,
                                  hist.significant_figures)
        merged.add(hist)
    return merged


def merge_encoded(encoded: Iterable[str]) -> str | None:
    hist = merge(decode(e) for e in encoded)
    return encode(hist) if hist is not None else None


def encode(hist: HdrHistogram) -> str:
    raw = hist.encode()
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def summarize(hist: HdrHistogram | None) -> LatencySummary:
    """Count, mean, min, max and the standard percentiles, in milliseconds."""
    if hist is None or hist.get_total_count() == 0:
        return LatencySummary()
    return LatencySummary(
        count=int(hist.get_total_count()),
        mean_ms=hist.get_mean_value() / US_PER_MS,
        min_ms=hist.get_min_value() / US_PER_MS,
        max_ms=hist.get_max_value() / US_PER_MS,
        percentiles_ms={percentile_label(p): hist.get_value_at_percentile(p) / US_PER_MS
                        for p in PERCENTILES},
    )
