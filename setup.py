"""Ships the suites and setups inside the wheel.

``test-suites/`` and ``setups/`` live at the repository root (where people edit them and
every script and doc points); at build time they are copied into the package as
``redis_benchmarks_spec/_data/``, where an installed ``rbs`` finds them
(``redis_benchmarks_spec.suites.catalog.data_root``). Editable installs read them in place.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = ("test-suites", "setups")


class BuildPyWithData(build_py):
    """``build_py`` plus a copy of the YAML data into ``redis_benchmarks_spec/_data``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "redis_benchmarks_spec" / "_data"
        for name in SHIPPED:
            source = ROOT / name
            if not source.is_dir():
                raise FileNotFoundError(f"{source} is missing: the wheel would ship no {name}")
            shutil.copytree(source, target / name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithData})
