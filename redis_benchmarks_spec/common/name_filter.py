"""The one meaning of ``--tests-regexp``, ``--groups-regexp`` and ``--commands-regexp``,
for ``rbs run``, the agent, ``rbs trigger`` and ``rbs compare`` alike.

- Each regexp is *searched* in a name (``re.search``: ``hash`` matches
  ``memtier_benchmark-1Mkeys-hash-hget``); anchor it (``^...$``) to match whole names.
- Test names and tested groups are case-sensitive; tested commands are not (Redis commands
  are case-insensitive: ``hset`` matches ``HSET``).
- A regexp that is not given, empty or ``.*`` filters nothing, so a suite without
  tested-groups still passes when no group filter is asked for.
- A groups (commands) regexp passes when it matches any one of the tested groups (commands).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MATCH_ALL = (None, "", ".*")


@dataclass(frozen=True)
class NameFilter:
    """Regexps on a test's name, tested groups and tested commands (see the module doc)."""

    tests: str | None = None
    groups: str | None = None
    commands: str | None = None

    def matches_test(self, name: str) -> bool:
        return self.tests in MATCH_ALL or re.search(str(self.tests), name) is not None

    def matches(self, name: str, groups: Iterable[str], commands: Iterable[str]) -> bool:
        """True when the test passes all three regexps."""
        if not self.matches_test(name):
            return False
        if self.groups not in MATCH_ALL and not any(
                re.search(str(self.groups), g) for g in groups):
            return False
        return self.commands in MATCH_ALL or any(
            re.search(str(self.commands), c, re.IGNORECASE) for c in commands)

    @property
    def filters_items(self) -> bool:
        """True when groups or commands are filtered (a caller may need to look them up)."""
        return self.groups not in MATCH_ALL or self.commands not in MATCH_ALL
