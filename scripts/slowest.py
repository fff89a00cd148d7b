"""Print the 25 slowest tests of one or more JUnit XML reports (scripts/test.sh), with the
total of each report, so every run of the suite says where its time went; and, when the
component audit left ``cpu-*.json`` beside them (tests/component_audit.py), the CPU the
suite used and the 15 tests that used most (phase 1 is bound by the machine's cores)."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SHOWN = 25
SHOWN_CPU = 15


def print_cpu(folders: set[Path]) -> None:
    """The CPU seconds per test the audit recorded in these folders, summed and ranked."""
    cpu: dict[str, float] = {}
    for folder in folders:
        for path in sorted(folder.glob("cpu-*.json")):
            for test, seconds in json.loads(path.read_text()).items():
                cpu[test] = cpu.get(test, 0.0) + float(seconds)
    if not cpu:
        return
    print(f"CPU used by the tests: {sum(cpu.values()):.0f} s; the {min(SHOWN_CPU, len(cpu))} "
          "costliest (the process's and its reaped children's):")
    for test, seconds in sorted(cpu.items(), key=lambda kv: -kv[1])[:SHOWN_CPU]:
        print(f"{seconds:8.1f} s  {test}")


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
    print_cpu({Path(name).parent for name in paths})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
