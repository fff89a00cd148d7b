"""HdrHistogram helpers for memtier's ``Compressed Histogram`` strings (values in microseconds).

Percentiles are computed the way memtier computes the ones it prints, so they are exact rather
than approximately equal: memtier writes ``hdr_value_at_percentile(h, p) / 1000.0`` with
``"%.3f"``, and HdrHistogram_c's ``hdr_value_at_percentile`` ranks with
``(int64_t)((p / 100) * total_count + 0.5)`` and answers the *highest equivalent value* of
the bucket that rank falls in. The Python ``hdrhistogram`` package ranks with
``p * total / 100`` (a different float rounding) and answers 0 for an empty histogram where C
answers ``highest_equivalent_value(0)`` (memtier's odd ``0.007`` for an empty ``Waits``), so
:func:`value_at_percentile` re-implements the C rule on the decoded counts. Values are whole
microseconds, so ``value / 1000`` already has at most three decimals: no further rounding.

Merging adds counts bucket by bucket, which is what makes percentiles of merged runs and of
parallel clients exact (never an average of percentiles).
"""

from __future__ import annotations

import binascii
import struct
import zlib
from collections.abc import Iterable

from hdrh.codec import HdrCookieException, HdrHistogramSettingsException, HdrLengthException
from hdrh.histogram import HdrHistogram

from redis_benchmarks_spec.results.tool_result import PERCENTILES, LatencySummary, percentile_label

US_PER_MS = 1000.0

_DECODE_ERRORS = (ValueError, TypeError, IndexError, binascii.Error, zlib.error, struct.error,
                  HdrCookieException, HdrLengthException, HdrHistogramSettingsException)


def decode(encoded: str) -> HdrHistogram:
    """Decode a base64 ``"HISTFAAA..."`` string; raises ValueError when it is not one."""
    if not isinstance(encoded, str) or not encoded.startswith("HIST"):
        raise ValueError(f"not an encoded HdrHistogram: {str(encoded)[:20]!r}")
    try:
        return HdrHistogram.decode(encoded)
    except _DECODE_ERRORS as exc:
        raise ValueError(f"cannot decode HdrHistogram {encoded[:20]!r}...: {exc}") from exc


def encode(hist: HdrHistogram) -> str:
    """The base64 ``"HISTFAAA..."`` form of ``hist`` (decodable by :func:`decode` and by
    any HdrHistogram implementation)."""
    raw = hist.encode()
    return raw.decode("ascii") if isinstance(raw, bytes) else str(raw)


def merge(histograms: Iterable[HdrHistogram]) -> HdrHistogram | None:
    """One histogram holding every recorded value of ``histograms``; None if all are empty.

    The result takes the bucket layout of the first non-empty input (memtier always uses
    1 us .. 600 s with 2 significant figures, so inputs line up and counts add exactly).
    """
    merged: HdrHistogram | None = None
    for hist in histograms:
        if hist.get_total_count() == 0:
            continue
        if merged is None:
            merged = HdrHistogram(hist.lowest_trackable_value, hist.highest_trackable_value,
                                  hist.significant_figures)
        merged.add(hist)
    return merged


def merge_encoded(encoded: Iterable[str]) -> str | None:
    """Merge encoded histograms and encode the result (None if all are empty)."""
    hist = merge(decode(e) for e in encoded)
    return encode(hist) if hist is not None else None


def value_at_percentile(hist: HdrHistogram, percentile: float) -> int:
    """Microseconds at ``percentile``, exactly as HdrHistogram_c (and so memtier) computes it."""
    requested = min(percentile, 100.0)
    rank = max(int((requested / 100) * hist.get_total_count() + 0.5), 1)
    index = _index_reaching(hist, rank)
    value = hist.get_value_from_index(index) if index is not None else 0
    if percentile == 0.0:
        return int(hist.get_lowest_equivalent_value(value))
    return int(hist.get_highest_equivalent_value(value))


def _index_reaching(hist: HdrHistogram, rank: int) -> int | None:
    """The first bucket index at which the running count reaches ``rank``."""
    running = 0
    for index in range(hist.counts_len):
        running += hist.get_count_at_index(index)
        if running >= rank:
            return index
    return None


def percentile_ms(hist: HdrHistogram, percentile: float) -> float:
    """Milliseconds at ``percentile``: the number memtier prints in ``Percentile Latencies``."""
    return value_at_percentile(hist, percentile) / US_PER_MS


def summarize(hist: HdrHistogram | None) -> LatencySummary:
    """Count, mean, min, max and the standard percentiles (``PERCENTILES``), in milliseconds.

    An empty (or missing) histogram gives an empty summary: no invented zeros or 0.007s.
    """
    if hist is None or hist.get_total_count() == 0:
        return LatencySummary()
    return LatencySummary(
        count=int(hist.get_total_count()),
        mean_ms=hist.get_mean_value() / US_PER_MS,
        min_ms=hist.get_min_value() / US_PER_MS,
        max_ms=hist.get_max_value() / US_PER_MS,
        percentiles_ms={percentile_label(p): percentile_ms(hist, p) for p in PERCENTILES},
    )


def summarize_encoded(encoded: str | None) -> LatencySummary:
    """:func:`summarize` of an encoded histogram (an empty summary for None)."""
    return summarize(decode(encoded) if encoded else None)
