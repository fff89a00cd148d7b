"""Build variants: how to compile Redis (compiler, flags), one YAML file per variant."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from redis_benchmarks_spec.suites.catalog import data_root
from redis_benchmarks_spec.suites.problems import Problem, SpecError
from redis_benchmarks_spec.suites.suite import load_yaml

KEYS = {"id", "os", "arch", "compiler", "cpp_compiler", "build_image", "run_image", "env"}


@dataclass(frozen=True)
class BuildVariant:
    """How to compile Redis: ``{id, os, arch, compiler, cpp_compiler, build_image, run_image,
    env}``; ``env`` (REDIS_CFLAGS, BUILD_TLS, MALLOC, ...) goes to ``make``."""

    id: str
    compiler: str = "gcc"
    cpp_compiler: str = "g++"
    os: str = ""
    arch: str = "amd64"
    build_image: str = ""
    run_image: str = ""
    env: dict[str, str] = field(default_factory=dict)

    def make_env(self) -> dict[str, str]:
        """Variables for ``make``: the compiler and the variant's env (REDIS_CFLAGS, ...)."""
        return {"CC": self.compiler, "CXX": self.cpp_compiler, **self.env}


def default_variants_dir() -> Path:
    """``setups/build-variants`` shipped with the package (the repository's)."""
    return data_root() / "setups" / "build-variants"


def load_variant(path: Path) -> BuildVariant:
    """One variant file; :class:`SpecError` naming the file and key for a bad one."""
    raw = load_yaml(path)
    if not isinstance(raw, dict) or not raw.get("id"):
        raise SpecError([Problem(path, "id", "build variant needs an id")])
    unknown = set(raw) - KEYS
    if unknown:
        raise SpecError([Problem(path, k, "unknown key") for k in sorted(unknown)])
    env = raw.get("env") or {}
    return BuildVariant(id=str(raw["id"]), compiler=str(raw.get("compiler", "gcc")),
                        cpp_compiler=str(raw.get("cpp_compiler", "g++")),
                        os=str(raw.get("os", "")), arch=str(raw.get("arch", "amd64")),
                        build_image=str(raw.get("build_image", "")),
                        run_image=str(raw.get("run_image", "")),
                        env={str(k): "" if v is None else str(v) for k, v in env.items()})


def load_variants(directory: Path | None = None) -> dict[str, BuildVariant]:
    """Every ``*.yml`` variant of ``directory`` by id; a duplicate id is an error."""
    directory = directory or default_variants_dir()
    variants: dict[str, BuildVariant] = {}
    for path in sorted(directory.glob("*.yml")):
        variant = load_variant(path)
        if variant.id in variants:
            raise SpecError([Problem(path, "id", f"duplicate build variant id {variant.id!r}")])
        variants[variant.id] = variant
    return variants
