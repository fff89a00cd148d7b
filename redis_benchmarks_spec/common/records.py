"""Reading a stored record written by any version of the package.

A lab upgrades its hosts one at a time: an older agent, notifier or report reads documents
a newer one wrote, and a newer one reads every document ever stored. So a reader takes the
fields its record knows and ignores the others (a newer writer's additions), and a field
the document lacks takes the record's documented default (an older writer), as rq's
``Job.restore`` does. Only a field without a default is required.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=256)  # a page reads 2,000 documents, three records each
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def known(cls: type, raw: dict[str, Any]) -> dict[str, Any]:
    """The items of ``raw`` that name a field of the dataclass ``cls``."""
    if not is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a record")
    names = _field_names(cls)
    return {k: v for k, v in raw.items() if k in names}


def unknown(cls: type, raw: dict[str, Any]) -> list[str]:
    """The keys of ``raw`` that ``cls`` does not know (a newer writer's fields)."""
    names = {f.name for f in fields(cls)} if is_dataclass(cls) else set()
    return sorted(k for k in raw if k not in names)
