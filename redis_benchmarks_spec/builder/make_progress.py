"""What a running ``make`` of Redis is doing, read from its log as it grows.

A build of a commit takes from seconds (one object file and a link over a kept tree) to
minutes (``deps/`` and every object from clean), and a user waiting on ``rbs run
--comparison-commit`` or ``rbs bisect --local`` sees nothing but this. :class:`MakeWatch`
follows the log that :func:`.compile.run_make` writes (``V=1``: every compiler command
line), and tells its caller the phase (the folder make works in, a ``configure`` step, the
files compiled so far and the last one, the link of a binary) whenever the phase changes
(at most one line every :data:`MIN_GAP_S`) and at least every ``heartbeat_s`` seconds,
with the seconds since make started.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: a line at least this often while make runs, even when its phase has not changed
HEARTBEAT_S = 10.0
#: phase changes closer together than this are folded into the next line
MIN_GAP_S = 2.0
#: how often :func:`.compile.run_make` reads the log
POLL_S = 0.5

_DIRECTORY = re.compile(r"make(?:\[\d+\])?: (Entering|Leaving) directory [`'\"](.+?)['\"]")
_SOURCE = re.compile(r"[\w./+-]+\.(?:c|cc|cpp|cxx|S)$")
_OUTPUT = re.compile(r"(?:^|\s)-o\s+(\S+)")
_COMPILER = re.compile(r"^(?:\S*/)?(?:cc|gcc|g\+\+|c\+\+|clang|clang\+\+)(?:-[\d.]+)?$")

#: (seconds since make started, what it is doing) -> None
Report = Callable[[float, str], None]


@dataclass
class MakePhase:
    """What the log says make is doing: where (the folder of the innermost make), how many
    files it compiled, the last one, and what it links."""

    root: Path
    where: str = ""
    compiled: int = 0
    last: str = ""
    linking: list[str] = field(default_factory=list)  # links started since the last compile
    configuring: bool = False
    _partial: str = field(default="", repr=False)
    _folders: list[str] = field(default_factory=list, repr=False)  # make's, innermost last

    def feed(self, text: str) -> None:
        """Take the next piece of the log (lines may be cut anywhere)."""
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._line(line.strip())

    def _line(self, line: str) -> None:
        folder = _DIRECTORY.search(line)
        if folder:
            if folder.group(1) == "Entering":
                self._folders.append(self._relative(folder.group(2)))
            elif self._folders:
                self._folders.pop()
            self.where = self._folders[-1] if self._folders else ""
            self.linking, self.configuring = [], False
            return
        if line.startswith("checking ") or "./configure" in line:
            self.configuring = True
            return
        words = line.split()
        if not words or not _COMPILER.match(words[0]):
            return
        self.configuring = False
        output = _OUTPUT.search(line)
        if "-c" in words:
            sources = [w for w in words if _SOURCE.search(w)]
            self.compiled += 1
            self.last = Path(sources[-1]).name if sources else self.last
            self.linking = []
        elif output and not output.group(1).endswith((".o", ".so", ".a")):
            self.linking.append(Path(output.group(1)).name)

    def _relative(self, folder: str) -> str:
        path = Path(folder)
        try:
            return str(path.relative_to(self.root)) or "."
        except ValueError:
            return path.name

    def describe(self) -> str:
        """One phrase: "src: 42 files compiled (last t_set.c)", "linking redis-server" (every
        link since the last compile: with -flto each is long, and they run side by side)."""
        where = f"{self.where}: " if self.where and self.where != "." else ""
        if self.linking:
            return f"{where}linking {', '.join(self.linking)}"
        if self.configuring:
            return f"{where}configure"
        if self.compiled:
            last = f" (last {self.last})" if self.last else ""
            return f"{where}{self.compiled} file(s) compiled{last}"
        return f"{where}starting" if where else "starting"

    def key(self) -> tuple[str, str, bool]:
        """What a change of phase is: a new folder, a link, a configure step."""
        return self.where, ",".join(self.linking), self.configuring


class MakeWatch:
    """Follows a make log and reports (module doc); :func:`.compile.run_make` calls
    :meth:`feed` with the log's new text and :meth:`tick` every :data:`POLL_S`."""

    def __init__(self, report: Report, root: Path, heartbeat_s: float = HEARTBEAT_S,
                 min_gap_s: float = MIN_GAP_S) -> None:
        self.report = report
        self.phase = MakePhase(root)
        self.heartbeat_s = heartbeat_s
        self.min_gap_s = min_gap_s
        self._said_at = 0.0
        self._said_key: tuple[str, str, bool] = ("", "", False)
        self.lines = 0  # lines reported

    def feed(self, text: str) -> None:
        self.phase.feed(text)

    def tick(self, elapsed_s: float) -> None:
        """Report when the phase changed (not sooner than ``min_gap_s`` after the last line)
        or ``heartbeat_s`` passed since the last line."""
        since = elapsed_s - self._said_at
        changed = self.phase.key() != self._said_key
        if since >= self.heartbeat_s or (changed and since >= self.min_gap_s):
            self._said_at = elapsed_s
            self._said_key = self.phase.key()
            self.lines += 1
            self.report(elapsed_s, self.phase.describe())
