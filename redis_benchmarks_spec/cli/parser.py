"""The argument parser every ``rbs`` command uses.

One class so that every (sub)command gets the same behaviour: ``-v`` accepted anywhere on
the command line, defaults shown in ``--help``, help text without reStructuredText markup,
a parse error reported as one line naming the command (exit code 2), and every path made
absolute where it enters: each :class:`~pathlib.Path` the parse yields (a flag's value or its
default, alone or in a list) is absolute against the folder ``rbs`` was started in, so no
command hands a relative path to a child that runs elsewhere (``git -C``, a daemon).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from redis_benchmarks_spec.cli.errors import EXIT_USAGE
from redis_benchmarks_spec.common.paths import absolute

# a reStructuredText role (:mod:`x`, :func:`y`): text written for maintainers
_ROLE = re.compile(r":(?:mod|func|class|meth|attr|data):`")
# defaults not worth showing in help: they mean "not given"
_QUIET_DEFAULTS: tuple[object, ...] = (None, False, "", [], ())


class RbsHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps description line breaks, shows non-trivial defaults, drops ``RST`` quoting."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = (action.help or "").replace("``", "`")
        default = action.default
        if (default is argparse.SUPPRESS or "default" in text or not action.option_strings
                or _is_quiet(default)):
            return text
        return f"{text} (default: %(default)s)"

    def _format_text(self, text: str) -> str:
        # a module docstring serves as description: its paragraphs for maintainers (those
        # naming modules, functions or classes) are not for the user
        kept = [p for p in text.split("\n\n") if not _ROLE.search(p)]
        return super()._format_text("\n\n".join(kept).replace("``", "`"))


def _is_quiet(default: object) -> bool:
    try:
        return default in _QUIET_DEFAULTS
    except TypeError:  # unhashable or odd comparisons: show it
        return False


class RbsParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with the house rules above; sub-parsers inherit it."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", RbsHelpFormatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        # SUPPRESS: a sub-parser sets `verbose` only when -v is given after the command, so
        # it never resets a -v given before it
        self.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                          help="debug logging (accepted anywhere on the command line)")

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None,
                         ) -> tuple[argparse.Namespace, list[str]]:
        """argparse's parse, then every path in the result made absolute (once, here)."""
        parsed, rest = super().parse_known_args(args, namespace)
        for name, value in vars(parsed).items():
            setattr(parsed, name, _absolute(value))
        return parsed, rest

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (hint: {self.prog} --help)\n")
        sys.exit(EXIT_USAGE)


def _absolute(value: Any) -> Any:
    """``value`` with its paths absolute (a path, or a list or tuple of them)."""
    if isinstance(value, Path):
        return absolute(value)
    if isinstance(value, (list, tuple)) and any(isinstance(v, Path) for v in value):
        return type(value)(absolute(v) if isinstance(v, Path) else v for v in value)
    return value
