"""Problems found while loading spec files: each names the file and the key at fault."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ERROR = "error"
WARNING = "warning"

# kinds of problem a caller treats specially (lint --strict, rbs run's per-suite report)
UNKNOWN_KEY = "unknown-key"
NAME_MISMATCH = "name-mismatch"
UNPARSEABLE = "unparseable"
NAME_COLLISION = "name-collision"
# the suite describes itself wrongly (tested-commands it never issues): what it measures is
# sound, so a warning for other folders (38 suites of the team's corpus), an error under strict
DESCRIPTION = "description"
STRICT_KINDS = (UNKNOWN_KEY, DESCRIPTION)


@dataclass(frozen=True)
class Problem:
    path: Path
    key: str
    message: str
    severity: str = ERROR
    kind: str = ""

    def strict(self) -> Problem:
        """This problem as ``rbs suites lint --strict`` sees it: unknown keys and a wrong
        tested-commands are errors."""
        if self.kind in STRICT_KINDS and self.severity == WARNING:
            return Problem(self.path, self.key, self.message, ERROR, self.kind)
        return self

    def __str__(self) -> str:
        where = f"{self.path}" + (f": {self.key}" if self.key else "")
        return f"{self.severity}: {where}: {self.message}"


class SpecError(ValueError):
    """A spec file could not be turned into a model; carries the problems that stopped it."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))
