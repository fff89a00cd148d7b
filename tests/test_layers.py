"""The package's floors: a package imports only from packages on floors below its own.

The floors are the ones README.md's "Layout" section draws (and docs/architecture.md's, with
a paragraph per package); this test reads every module's imports (those inside functions too)
and fails on an import that runs sideways or up, on a package no floor names, and on a drawing
that differs from the floors below.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "redis_benchmarks_spec"

FLOORS: dict[str, int] = {
    "common": 1,
    "suites": 2, "events": 2, "results": 2,
    "loadgen": 3, "telemetry": 3, "datasink": 3, "builder": 3, "intake": 3, "api": 3,
    "analysis": 4,
    "runner": 5, "inputs": 5, "pullrequest": 5,
    "agent": 6, "notify": 6, "bisection": 6, "lab": 6, "web": 6,
    "cli": 7,
}


def _imported(node: ast.AST) -> list[str]:
    """Modules of this package that ``node`` imports (``from pkg import sub`` included)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        if node.module == PACKAGE:
            return [f"{PACKAGE}.{a.name}" for a in node.names]
        return [node.module]
    return []


def package_imports() -> list[tuple[str, str, str]]:
    """(importing file, its package, imported package) for every import across packages."""
    out = []
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = path.relative_to(ROOT / PACKAGE).parts
        if len(parts) < 2:
            continue  # the package's own __init__.py and _data
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for module in _imported(node):
                names = module.split(".")
                if names[0] == PACKAGE and len(names) > 1 and names[1] != parts[0] \
                        and (ROOT / PACKAGE / names[1]).is_dir():
                    out.append((str(path.relative_to(ROOT)), parts[0], names[1]))
    return out


def test_every_package_has_a_floor() -> None:
    packages = {p.name for p in (ROOT / PACKAGE).iterdir()
                if p.is_dir() and (p / "__init__.py").is_file()}
    assert packages == set(FLOORS), \
        "place the new package on a floor (here, in README and docs/architecture.md)"


def test_imports_only_go_down() -> None:
    found = package_imports()
    assert len(found) > 100  # the scan sees the package's imports
    wrong = [f"{path}: {pkg} (floor {FLOORS[pkg]}) imports {dep} (floor {FLOORS[dep]})"
             for path, pkg, dep in found if FLOORS[dep] >= FLOORS[pkg]]
    assert wrong == []


def test_the_scan_sees_an_import_inside_a_function(tmp_path: Path) -> None:
    tree = ast.parse("def f():\n    from redis_benchmarks_spec import cli\n")
    assert [m for n in ast.walk(tree) for m in _imported(n)] == [f"{PACKAGE}.cli"]


def _layout_section(page: str) -> str:
    text = (ROOT / page).read_text()
    return text.split("## Layout", 1)[1].split("\n## ", 1)[0]


def _drawn(section: str) -> dict[str, int]:
    drawn: dict[str, int] = {}
    for floor, names in re.findall(r"^floor (\d+)\s+(.+)$", section, re.MULTILINE):
        for name in re.findall(r"([a-z_]+)/", names):
            drawn[name] = int(floor)
    return drawn


def test_readme_draws_these_floors() -> None:
    assert _drawn(_layout_section("README.md")) == FLOORS


def test_architecture_page_draws_and_describes_these_floors() -> None:
    section = _layout_section("docs/architecture.md")
    assert _drawn(section) == FLOORS
    for name in FLOORS:  # one paragraph per package says what it owns and may import
        assert re.search(rf"^\*\*{name}/\*\*", section, re.MULTILINE), name


READS = {"read_text", "read_bytes", "open", "load"}  # Path.read_*, open(), json.load()


def test_analysis_reads_no_file_and_no_datasink() -> None:
    """Analysis computes from values it is handed; ``inputs`` reads them (files, datasink)."""
    found = []
    for path in sorted((ROOT / PACKAGE / "analysis").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            modules = [m for m in _imported(node)
                       if m == "redis" or m.startswith(("redis.", f"{PACKAGE}.datasink"))]
            name = node.func.attr if isinstance(node, ast.Call) and \
                isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                else None
            reads = [name] if name in READS else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno}: {what}"  # type: ignore[attr-defined]
                      for what in modules + reads]
    assert found == []
