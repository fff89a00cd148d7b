"""Every path a user gives or a default names is absolute where it enters ``rbs``.

The parser makes each :class:`~pathlib.Path` of a parse absolute (a flag's value or its
default, alone or in a list); programs (``--redis-server``) and git locations (``--repo``,
``--git-remote``) are absolutized by their argparse types. The guard below walks every
option of every command: one that names a folder or file but is parsed as plain text would
slip past both, and fails here by its name."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from redis_benchmarks_spec.builder.daemon import BuilderConfig
from redis_benchmarks_spec.builder.source import GitOptions
from redis_benchmarks_spec.cli.main import build_parser
from redis_benchmarks_spec.common.paths import (
    absolute,
    absolute_file,
    absolute_location,
    absolute_program,
)

PATH_TYPES = (Path, absolute_file, absolute_program, absolute_location)
PATHISH_METAVARS = {"DIR", "FILE", "GIT_DIR", "FOLDER"}
PATHISH_SUFFIXES = ("-dir", "-file", "-bin", "-server", "-path", "-mirror", "-trees",
                    "-cache", "-cert", "-key")


def _commands(parser: argparse.ArgumentParser, prog: str = "rbs"
              ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{prog} {name}")


def _pathish(action: argparse.Action) -> bool:
    long = [o for o in action.option_strings if o.startswith("--")]
    return (action.metavar in PATHISH_METAVARS
            or any(o.endswith(PATHISH_SUFFIXES) for o in long)
            or any(o in ("--source", "--repo", "--git-remote", "--out") for o in long))


def test_every_path_option_is_parsed_as_a_path() -> None:
    loose = []
    for prog, parser in _commands(build_parser()):
        for action in parser._actions:
            if not action.option_strings and action.dest in ("help", "verbose"):
                continue
            if not _pathish(action) or action.nargs == 0 or action.type in PATH_TYPES:
                continue
            if action.help == argparse.SUPPRESS:
                continue
            name = action.option_strings[-1] if action.option_strings else action.dest
            if prog == "rbs confirmer" and name == "--repo":  # ORG/NAME, not a folder
                continue
            loose.append(f"{prog} {name} (type {getattr(action.type, '__name__', action.type)})")
    assert not loose, "path options parsed as text (make them type=Path): " + ", ".join(loose)


@pytest.mark.parametrize("argv", [
    ["lab", "replay", "--prs", "prs.txt", "--out", "out"],
    ["lab", "up", "--source", "redis-src"],
    ["lab", "status"],
    ["lab", "down"],
    ["bisect", "--local", "--good", "a" * 40, "--bad", "b" * 40, "--test", "t"],
    ["builder", "--broker", "redis://x:1", "--git-mirror", "m", "--keep-trees", "t",
     "--cache-dir", "c", "--git-remote", "../redis"],
    ["agent", "--broker", "redis://x:1", "--platform", "p", "--redis-benchmark-bin",
     "bin/redis-benchmark"],
    ["run", "--redis-server", "./src/redis-server", "--suites-dir", "s"],
    ["suites", "lint", "--other-suites-dir", "a", "--other-suites-dir", "b"],
])
def test_parsed_paths_and_defaults_are_absolute(argv: list[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(argv)
    found = 0
    for name, value in vars(args).items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, Path):
                found += 1
                assert item.is_absolute(), (argv, name, item)
                assert str(item).startswith(str(tmp_path)) or not str(item).startswith(
                    str(tmp_path.parent)), (name, item)
    assert found, f"no path parsed from {argv}"
    for attr in ("redis_server", "redis_benchmark_bin", "git_remote"):
        text = getattr(args, attr, None)
        if text:
            assert os.path.isabs(text), (attr, text)


def test_program_names_and_urls_stay_as_given(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert absolute_program("redis-server") == "redis-server"  # looked up on PATH
    assert absolute_program("./redis-server") == str(tmp_path / "redis-server")
    for url in ("https://github.com/redis/redis.git", "file:///srv/redis.git",
                "git@github.com:redis/redis.git"):
        assert absolute_location(url) == url
    assert absolute_location("../redis") == str(tmp_path.parent / "redis")
    assert absolute(Path("a/../b")) == tmp_path / "b"


def test_builder_config_folders_are_absolute(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A library caller (not the CLI) gets the same: the mirror is handed to ``git -C
    <tree>``, where a relative folder names another place."""
    monkeypatch.chdir(tmp_path)
    git = GitOptions(mirror_dir=Path(".cache/lab/mirrors"))
    assert git.mirror_dir == tmp_path / ".cache" / "lab" / "mirrors"
    from redis_benchmarks_spec.events.names import StreamNames
    config = BuilderConfig(names=StreamNames.with_prefix("p"), consumer="c", variants={},
                           work_dir=Path("w"), cache_dir=Path("c"), keep_trees=Path("t"),
                           git=git, artifact_key=b"k" * 32)
    assert (config.work_dir, config.cache_dir, config.keep_trees) == (
        tmp_path / "w", tmp_path / "c", tmp_path / "t")


def test_paths_given_in_the_environment_are_absolute(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder named by ``$RBS_*`` enters like a flag's: absolute against the folder the
    command started in (the embedded server runs in its data folder, daemons elsewhere)."""
    from redis_benchmarks_spec.common.tools import tools_dirs
    from redis_benchmarks_spec.datasink.embedded import libssl_dir
    from redis_benchmarks_spec.inputs.noise_file import default_path
    from redis_benchmarks_spec.runner.dataset import default_cache_dir
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ssl").mkdir()
    (tmp_path / "ssl" / "libssl.so.1.1").write_bytes(b"")
    for name, value in (("RBS_NOISE_FILE", "noise.json"), ("RBS_LIBSSL_DIR", "ssl"),
                        ("RBS_TOOLS_DIR", "bin"), ("RBS_DATASET_CACHE", "datasets")):
        monkeypatch.setenv(name, value)
    assert default_path() == tmp_path / "noise.json"
    assert libssl_dir() == tmp_path / "ssl"
    assert tools_dirs()[0] == tmp_path / "bin"
    assert default_cache_dir() == tmp_path / "datasets"
