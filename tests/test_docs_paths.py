"""The README and docs/ name modules and link pages that exist.

Every ``redis_benchmarks_spec/...py`` path the pages mention, and every short module path
that starts with one of the package's own folders (``runner/execute.py``), must be a file of
the package; every relative link of README.md and of docs/*.md must resolve.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from redis_benchmarks_spec.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "redis_benchmarks_spec"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FULL = re.compile(r"redis_benchmarks_spec/[\w/]+\.py")
# the repository's own scripts, benchmarks and tests, named from the root
FILES = re.compile(r"(?<![\w/.-])(?:scripts|benchmarks|tests)/[\w./-]+\.(?:py|sh)")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _short(packages: list[str]) -> re.Pattern[str]:
    # `runner/execute.py`, not part of a longer path (tests/..., scripts/..., .../runner/x.py)
    return re.compile(rf"(?<![\w/.-])(?:{'|'.join(packages)})/[\w/]+\.py")


def packages() -> list[str]:
    return sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())


def missing_modules(text: str, names: list[str]) -> list[str]:
    """Module paths ``text`` mentions that are no file of the package."""
    found = {m[len("redis_benchmarks_spec/"):] for m in FULL.findall(text)}
    found |= set(_short(names).findall(text))
    return sorted({p for p in found if not (PACKAGE / p).is_file()}
                  | {p for p in FILES.findall(text) if not (ROOT / p).is_file()})


def broken_links(page: Path) -> list[str]:
    """Relative links of ``page`` whose target does not exist."""
    out = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        if not (page.parent / target).exists():
            out.append(target)
    return out


def test_every_named_module_exists() -> None:
    names = packages()
    wrong = {page.relative_to(ROOT).as_posix(): missing_modules(page.read_text(), names)
             for page in PAGES}
    assert {k: v for k, v in wrong.items() if v} == {}


def test_the_check_sees_the_pages_modules() -> None:
    # the architecture page alone names dozens of full module paths: the scan must see them
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert len(set(FULL.findall(text))) > 60
    assert missing_modules("see `redis_benchmarks_spec/runner/nowhere.py`, `agent/gone.py`,"
                           " `scripts/generate_suites.py`, not `x/runner/y.py`", packages()) == \
        ["agent/gone.py", "runner/nowhere.py", "scripts/generate_suites.py"]


def test_readme_and_docs_links_resolve() -> None:
    wrong = {page.relative_to(ROOT).as_posix(): broken_links(page) for page in PAGES}
    assert {k: v for k, v in wrong.items() if v} == {}
    assert len(LINK.findall((ROOT / "README.md").read_text())) > 20  # the links list is seen


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "x.md"
    (tmp_path / "there.md").write_text("")
    page.write_text("[a](there.md) [b](gone.md#part) [c](https://example.com)")
    assert broken_links(page) == ["gone.md"]


def readme_commands() -> list[str]:
    """Every ``rbs ...`` command line of README.md's code blocks (continuations joined)."""
    blocks = re.findall(r"^```\n(.*?)^```", (ROOT / "README.md").read_text(),
                        re.DOTALL | re.MULTILINE)
    lines = [line for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    out = []
    for line in lines:
        words = shlex.split(line, comments=True)
        while words and "=" in words[0]:  # VAR=value rbs ...
            words = words[1:]
        if words and words[0].endswith("rbs"):
            out.append(shlex.join(words[1:]))
    return out


def test_readme_shows_every_main_use() -> None:
    commands = {" ".join(c.split()[:2]) for c in readme_commands()}
    for use in ("run --baseline-server", "compare --baseline-dir", "bisect --local",
                "lab up", "lab replay", "api --broker", "agent --broker", "suites list"):
        assert any(c.startswith(use.split()[0]) for c in commands), use
        assert any(use in c for c in readme_commands()), use


@pytest.mark.parametrize("command", readme_commands())
def test_readme_commands_parse(command: str) -> None:
    """Each command, its subcommand and every flag the README shows exist in ``rbs``."""
    build_parser().parse_args(shlex.split(command))
