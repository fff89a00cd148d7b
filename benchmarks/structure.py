"""Structural figures of the package, read from its source (nothing is run).

    python benchmarks/structure.py [--root DIR]

Prints: each package's floor (1 + the highest floor it imports from; imports inside
functions count) and the imports that run sideways or up against the floors of
``tests/test_layers.py``; the ``RunResult`` fields and the modules that write them after the
document is made (an assignment, augmented assignment or mutating call on ``<x>.<field>``
where ``<x>`` holds a result document: ``result``, ``doc``, ``r``, ``self.result``, in a
module that names ``RunResult``); and the
analysis modules that read a file or the datasink.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = "redis_benchmarks_spec"
MUTATING = {"append", "extend", "update", "setdefault", "pop", "insert", "remove", "clear"}
HOLDERS = {"result", "doc", "r"}
READS = {"read_text", "read_bytes", "read", "open", "load"}


def _trees(root: Path) -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(), str(p)) for p in sorted((root / PACKAGE).rglob("*.py"))}


def _imports(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        if node.module == PACKAGE:
            return [f"{PACKAGE}.{a.name}" for a in node.names]
        return [node.module]
    return []


def package_edges(root: Path, trees: dict[Path, ast.Module]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for path, tree in trees.items():
        parts = path.relative_to(root / PACKAGE).parts
        if len(parts) < 2:
            continue
        edges[parts[0]]
        for node in ast.walk(tree):
            for module in _imports(node):
                names = module.split(".")
                if names[0] == PACKAGE and len(names) > 1 and names[1] != parts[0] \
                        and (root / PACKAGE / names[1]).is_dir():
                    edges[parts[0]].add(names[1])
    return edges


def floors(edges: dict[str, set[str]]) -> dict[str, int]:
    out: dict[str, int] = {}

    def floor(pkg: str, seen: frozenset[str]) -> int:
        if pkg in out:
            return out[pkg]
        if pkg in seen:
            return 0  # a cycle between packages: reported by the back-edges below
        value = 1 + max((floor(d, seen | {pkg}) for d in edges.get(pkg, ())), default=0)
        out[pkg] = value
        return value

    for pkg in edges:
        floor(pkg, frozenset())
    return out


def _holder(value: ast.expr) -> bool:
    if isinstance(value, ast.Name):
        return value.id in HOLDERS
    return isinstance(value, ast.Attribute) and value.attr == "result"


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        out: list[ast.expr] = []
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
            while isinstance(target, ast.Subscript):
                target = target.value
            out += target.elts if isinstance(target, ast.Tuple) else [target]
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in MUTATING:
        return [node.func.value]
    return []


def result_writers(root: Path, trees: dict[Path, ast.Module]) -> tuple[int, dict[str, set[str]]]:
    document = trees[root / PACKAGE / "results" / "document.py"]
    cls = next(n for n in ast.walk(document) if isinstance(n, ast.ClassDef)
               and n.name == "RunResult")
    names = {n.target.id for n in cls.body
             if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    writers: dict[str, set[str]] = defaultdict(set)
    for path, tree in trees.items():
        if "RunResult" not in path.read_text():
            continue  # a ``result`` there is a tool's result, not the document
        for node in ast.walk(tree):
            for t in _targets(node):
                if isinstance(t, ast.Attribute) and t.attr in names and _holder(t.value):
                    writers[str(path.relative_to(root))].add(t.attr)
    return len(names), writers


def analysis_reads(root: Path, trees: dict[Path, ast.Module]) -> list[str]:
    out = []
    for path, tree in trees.items():
        if path.relative_to(root / PACKAGE).parts[0] != "analysis":
            continue
        for node in ast.walk(tree):
            what = [m for m in _imports(node)
                    if m == "redis" or m.startswith(("redis.", f"{PACKAGE}.datasink"))]
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else \
                    func.id if isinstance(func, ast.Name) else ""
                what += [name] if name in READS else []
            out += [f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)} {w}" for w in what]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    root = parser.parse_args().root.resolve()
    trees = _trees(root)
    edges = package_edges(root, trees)
    found = floors(edges)
    print(f"packages: {len(found)}, floors: {max(found.values())}")
    for level in sorted(set(found.values()), reverse=True):
        print(f"  floor {level}: {', '.join(sorted(p for p, f in found.items() if f == level))}")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.test_layers import FLOORS
    wrong = sorted(f"{a} -> {b}" for a, deps in edges.items() for b in deps
                   if FLOORS.get(b, 0) >= FLOORS.get(a, 99))
    print(f"package imports sideways or up against tests/test_layers.py: {len(wrong)}"
          + (f" ({', '.join(wrong)})" if wrong else ""))
    fields, writers = result_writers(root, trees)
    written = set().union(*writers.values()) if writers else set()
    print(f"RunResult: {fields} fields; {len(written)} written after construction, by "
          f"{len(writers)} modules")
    for module, names in sorted(writers.items()):
        print(f"  {module}: {', '.join(sorted(names))}")
    reads = analysis_reads(root, trees)
    modules = sorted({r.split(":")[0] for r in reads})
    print(f"analysis modules that read a file or the datasink: {len(modules)}"
          + (f" ({', '.join(modules)})" if modules else ""))


if __name__ == "__main__":
    main()
