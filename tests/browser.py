"""Open a page in headless Chromium (Debian's ``chromium``) with the network off: the DOM it
rendered, every console message it logged, and a screenshot."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
from matplotlib import image

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--enable-logging=stderr", "--v=0",
         # the network is off: every host resolves to nothing, any proxy is a dead port
         "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9"]
_CONSOLE = re.compile(r":CONSOLE[^\]]*\] (.*)$", re.MULTILINE)


@dataclass
class Rendered:
    dom: str
    console: list[str]
    screenshot: Path


def chromium() -> str:
    path = shutil.which("chromium")
    if not path:
        raise RuntimeError("chromium is not installed: run scripts/setup.sh")
    return path


#: a page served on loopback: every other host still resolves to nothing
LOOPBACK_ONLY = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


def _run(args: list[str], profile: str) -> subprocess.CompletedProcess[str]:
    url = args[-1]
    flags = [LOOPBACK_ONLY if f.startswith("--host-resolver-rules") and
             url.startswith("http://127.0.0.1:") else f for f in FLAGS]
    return subprocess.run([chromium(), *flags, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120, check=True)


def render(page: Path | str, shot: Path) -> Rendered:
    """Dump the DOM and take a 1200x3000 screenshot of ``page`` (a file, or an
    ``http://127.0.0.1:...`` URL: loopback is reachable with the network off)."""
    url = page if isinstance(page, str) else page.resolve().as_uri()
    with tempfile.TemporaryDirectory() as profile:
        dumped = _run(["--dump-dom", url], profile)
    with tempfile.TemporaryDirectory() as profile:
        shot_run = _run(["--window-size=1200,3000", f"--screenshot={shot}", url], profile)
    console = _CONSOLE.findall(dumped.stderr) + _CONSOLE.findall(shot_run.stderr)
    return Rendered(dumped.stdout, console, shot)


@dataclass
class Plots(HTMLParser):
    """``<figure class="plot">`` elements of a DOM and how many drawn paths each holds."""

    found: list[tuple[str, str, int]] = field(default_factory=list)  # (kind, test, paths)
    external: list[str] = field(default_factory=list)  # resources a viewer would fetch

    def __post_init__(self) -> None:
        super().__init__()
        self._open: list[object] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "figure" and "plot" in (a.get("class") or ""):
            self._open = [a.get("data-plot") or "", a.get("data-test") or "", 0]
        elif tag in ("path", "use") and self._open:
            self._open[2] = int(self._open[2]) + 1  # type: ignore[call-overload]
        if tag in ("script", "link", "img", "iframe", "object", "embed"):
            self.external.append(f"<{tag} {a}>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure" and self._open:
            kind, test, paths = self._open
            self.found.append((str(kind), str(test), int(paths)))  # type: ignore[call-overload]
            self._open = []


def plots_of(dom: str) -> Plots:
    parser = Plots()
    parser.feed(dom)
    return parser


def blank(shot: Path) -> bool:
    """True when the screenshot is a single colour (nothing was drawn)."""
    pixels = image.imread(str(shot))
    return float(np.std(pixels)) < 0.01
