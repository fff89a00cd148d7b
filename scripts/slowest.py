"""Print the 25 slowest tests of one or more JUnit XML reports (scripts/test.sh), with the
total of each report, so every run of the suite says where its time went."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SHOWN = 25


def main(paths: list[str]) -> int:
    rows: list[tuple[float, str]] = []
    for name in paths:
        path = Path(name)
        if not path.is_file():
            continue
        total = 0.0
        for case in ET.parse(path).getroot().iter("testcase"):
            seconds = float(case.get("time") or 0.0)
            total += seconds
            rows.append((seconds, f"{case.get('classname', '')}::{case.get('name', '')}"))
        print(f"{path.stem}: test time {total:.0f} s (summed over processes)")
    if not rows:
        print("no test report found", file=sys.stderr)
        return 1
    print(f"the {min(SHOWN, len(rows))} slowest tests:")
    for seconds, test in sorted(rows, reverse=True)[:SHOWN]:
        print(f"{seconds:8.1f} s  {test}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
