"""Numbers in plain notation everywhere people read them (never ``5.694e+04``)."""

from __future__ import annotations

from redis_benchmarks_spec.common.numbers import plain


def test_plain_numbers_never_use_an_exponent() -> None:
    cases = {(56940.2, 4): "56,940", (1234.5, 3): "1,234", (0.000123456, 3): "0.000123",
             (8.0, 3): "8", (1.5, 3): "1.5", (3e-12, 2): "0.000000000003",
             (-10.83, 3): "-10.8", (0.0, 3): "0", (9.996, 3): "10"}
    for (value, digits), text in cases.items():
        assert plain(value, digits) == text, (value, digits)
