"""``rbs compare`` of two results folders: the folders checked before anything is judged.

An empty folder, a folder with no result document (not a session's, nor a side of one), or
two folders with no test in common are input mistakes: one line naming the folder, exit 2,
never a table of UNKNOWN rows.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from redis_benchmarks_spec.analysis.session_runs import BASELINE, COMPARISON
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.inputs.session_folder import RunsOnDisk
from redis_benchmarks_spec.results.layout import session_documents

_HINT = "give a folder rbs run wrote: results/<session>/baseline, or a results folder"


def _side_error(flag: str, folder: Path, regexp: str) -> UsageError:
    if not any(folder.iterdir()):
        return UsageError(f"{flag} {folder}", "empty folder, no run to compare", _HINT)
    if not session_documents(folder):
        return UsageError(f"{flag} {folder}",
                          "no result.json under it: not a session's results folder", _HINT)
    return UsageError(f"{flag} {folder}", f"no run of a test matching the filters "
                      f"(--tests-regexp {regexp!r})", "the folder holds other tests: widen the -regexp filters")


def _names(tests: set[str]) -> str:
    shown = sorted(tests)
    more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
    return ", ".join(shown[:3]) + more


def check_sides(args: argparse.Namespace, found: RunsOnDisk) -> None:
    """Raise a :class:`UsageError` naming the folder when a side has no run, or when the
    two sides share no test (after the name filters)."""
    folders = {BASELINE: args.baseline_dir, COMPARISON: args.comparison_dir}
    tests = {side: {r.result.test_name for r in found.runs if r.side == side}
             for side in folders}
    for side, folder in folders.items():
        if not tests[side]:
            raise _side_error(f"--{side}-dir", folder, args.tests_regexp)
    if not tests[BASELINE] & tests[COMPARISON]:
        raise UsageError(
            f"--baseline-dir {folders[BASELINE]} and --comparison-dir {folders[COMPARISON]}",
            f"no test in common (baseline: {_names(tests[BASELINE]) or 'none'}; "
            f"comparison: {_names(tests[COMPARISON]) or 'none'})",
            "compare folders of the same tests, or narrow both with --tests-regexp")
