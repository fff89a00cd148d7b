"""Count the tests that start each real component (issue 41: the count does not fall).

Reads the ``components-*.json`` records tests/component_audit.py wrote for one run of the
suite (scripts/test.sh), prints per component the number of tests that started one (and,
from ``starts-*.json``, how many processes of it they started), and
compares the number of tests that start any real component with the floor kept in
tests/data/real-components.json. ``--record`` writes the floor from this run. A Redis build
the cache held starts nothing, so builds are printed but not held to the floor.

Usage: .venv/bin/python scripts/components.py REPORTS_DIR [--record]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

FLOOR = Path(__file__).resolve().parents[1] / "tests" / "data" / "real-components.json"
CACHE_DEPENDENT = {"redis build"}


def load(folder: Path) -> dict[str, set[str]]:
    """Each test's components, over every worker's record."""
    tests: dict[str, set[str]] = {}
    for path in sorted(folder.glob("components-*.json")):
        for test, kinds in json.loads(path.read_text()).items():
            tests.setdefault(test, set()).update(kinds)
    return tests


def load_starts(folder: Path) -> Counter[str]:
    """Processes of each kind the tests' own processes started, over every worker."""
    out: Counter[str] = Counter()
    for path in sorted(folder.glob("starts-*.json")):
        out.update(json.loads(path.read_text()))
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    tests = load(Path(argv[0]))
    if not tests:
        print(f"no component record in {argv[0]}", file=sys.stderr)
        return 1
    per_kind = Counter(k for kinds in tests.values() for k in kinds)
    real = sorted(t for t, kinds in tests.items() if kinds - CACHE_DEPENDENT)
    starts = load_starts(Path(argv[0]))
    print(f"tests that start a real component: {len(real)} (processes the tests started)")
    for kind, count in sorted(per_kind.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {count:5d}  {kind} ({starts.get(kind, 0)})")
    if "--record" in argv:
        FLOOR.parent.mkdir(parents=True, exist_ok=True)
        FLOOR.write_text(json.dumps({"tests": len(real), "per_kind": dict(sorted(per_kind.items()))},
                                    indent=1) + "\n")
        print(f"floor recorded in {FLOOR}")
        return 0
    if not FLOOR.is_file():
        return 0
    floor = json.loads(FLOOR.read_text())
    fallen = {k: (n, per_kind.get(k, 0)) for k, n in floor["per_kind"].items()
              if k not in CACHE_DEPENDENT and per_kind.get(k, 0) < n}
    if len(real) < floor["tests"] or fallen:
        print(f"the count of real-component tests fell below {FLOOR.name}: "
              f"{len(real)} < {floor['tests']} or per kind {fallen}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
