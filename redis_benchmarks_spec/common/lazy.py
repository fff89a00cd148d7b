"""Modules imported on first use.

scipy.stats alone costs about 1.5 s of CPU to import, and every ``rbs`` command (``--help``
included) imports the analysis modules to register its options. Commands that never compute
a statistic should not pay for it.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for the module ``name``; imports it on the first attribute access."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)
