"""Numbers as people read them: plain notation, never scientific (``56,940``, not
``5.694e+04``), so every table, summary and sentence prints a value the same way."""

from __future__ import annotations

import math


def plain(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits as ``format(value, ".3g")`` gives them,
    but in plain notation: never an exponent, thousands separated, no trailing zeros, and
    a number with more integer digits than ``digits`` shown whole
    (``plain(56940.2, 4)`` is ``56,940``, ``plain(0.000123456)`` is ``0.000123``,
    ``plain(8.0)`` is ``8``)."""
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(float(f"{value:.{digits}g}"))))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


#: below this a p-value is shown as "< 0.0001": more digits say nothing more
P_FLOOR = 0.0001


def plain_p(value: float) -> str:
    """A p-value in plain notation: ``0.0312``, ``1``, and ``< 0.0001`` for anything
    smaller (``1.78e-09`` would be the only exponent in a table of plain numbers)."""
    if math.isfinite(value) and 0 <= value < P_FLOOR:
        return f"< {P_FLOOR:g}"
    return plain(value, 3)
