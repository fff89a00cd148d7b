"""Suite files as an attacker writes them (they can arrive with a pull request): each bad
file is reported by name and skipped, the rest of the catalogue loads, memory stays bounded,
and no suite name becomes a path outside the results folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from redis_benchmarks_spec.suites.catalog import load_catalog
from redis_benchmarks_spec.suites.yaml_safe import YamlRejected, loads
from tests.cli import RBS, rbs, write_suite

GOOD = """\
version: 0.4
name: {name}
tested-groups: [string]
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -c 1 -n 100 -t set
"""
# nine levels of nine aliases: 9**9 (387 M) leaves once expanded
BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi"))


def hostile_dir(tmp_path: Path) -> Path:
    d = tmp_path / "suites"
    write_suite(d, "good", GOOD.format(name="good"))
    (d / "utf16.yml").write_bytes(GOOD.format(name="utf16").encode("utf-16"))
    (d / "binary.yml").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    (d / "latin1.yml").write_bytes(GOOD.format(name="latin1").encode() + b"# caf\xe9\n")
    write_suite(d, "deep", "a: " + "[" * 50_000 + "]" * 50_000 + "\n")
    write_suite(d, "bomb", BOMB + GOOD.format(name="bomb"))
    write_suite(d, "huge", GOOD.format(name="huge") + "# " + "x" * (17 * 1024 * 1024))
    write_suite(d, "escape", GOOD.format(name="../../escaped"))
    write_suite(d, "absolute", GOOD.format(name="/tmp/absolute-escape"))
    write_suite(d, "list", "- just\n- a list\n")
    write_suite(d, "weird", GOOD.format(name="weird") + "dbconfig: [1, 2]\n")
    return d


def test_one_bad_file_never_takes_down_the_catalogue(tmp_path: Path) -> None:
    catalog = load_catalog(hostile_dir(tmp_path))
    # a wrongly shaped dbconfig is reported; the suite may still load without it
    assert [s.name for s in catalog.suites if s.name != "weird"] == ["good"]
    reported = {p.path.name: p.message for p in catalog.errors}
    assert "UTF-16" in reported["utf16.yml"]
    assert "binary" in reported["binary.yml"]
    assert "not UTF-8" in reported["latin1.yml"]
    # our depth check, or PyYAML's own nesting limit (6.0.2+) when its parser meets it first
    assert "deeper than" in reported["deep.yml"] or \
        "maximum nesting depth" in reported["deep.yml"], reported["deep.yml"]
    assert "alias bomb" in reported["bomb.yml"]
    assert "bytes" in reported["huge.yml"]
    assert "not a name" in reported["escape.yml"] and "not a name" in reported["absolute.yml"]
    assert {"list.yml", "weird.yml"} <= set(reported)


def test_lint_reports_each_file_in_bounded_memory(tmp_path: Path) -> None:
    d = hostile_dir(tmp_path)
    # 1 GiB of address space for the whole CLI: the bomb reached 2.26 GB before
    done = subprocess.run(["prlimit", f"--as={1024**3}", "--", RBS, "suites", "lint", str(d)],
                          capture_output=True, text=True, timeout=120, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "Traceback" not in out and "MemoryError" not in out
    for name in ("utf16", "binary", "latin1", "deep", "bomb", "huge", "escape", "absolute"):
        assert f"{name}.yml" in out, name


def test_rbs_run_never_writes_outside_results_dir(tmp_path: Path) -> None:
    d = hostile_dir(tmp_path)
    results = tmp_path / "area" / "results"
    done = rbs("run", "--suites-dir", str(d), "--results-dir", str(results),
               "--no-datasink", "--tests-regexp", ".*escape.*", timeout=120)
    assert "Traceback" not in done.stdout + done.stderr
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "area" / "escaped").exists()
    assert not Path("/tmp/absolute-escape").exists()
    assert not any(p.name == "result.json" for p in results.rglob("*"))


@pytest.mark.parametrize("text,reason", [
    ("a: &a [1]\n" + "".join(f"k{i}: *a\n" for i in range(1001)), "aliases"),
    ("x: " + "{a: " * 100 + "1" + "}" * 100, "deeper"),
])
def test_limits_of_the_loader(text: str, reason: str) -> None:
    with pytest.raises(YamlRejected, match=reason):
        loads(text.encode())
    assert loads(b"a: &a {k: 1}\nb: *a\n") == {"a": {"k": 1}, "b": {"k": 1}}


FORBIDDEN_SUITE = """
version: 0.4
name: {name}
dbconfig:
  configuration-parameters:
    save: '{save}'
{extra}
tested-commands: [get]
redis-topologies: [oss-standalone]
clientconfig:
  tool: redis-benchmark
  arguments: -n 10 GET k
"""


@pytest.mark.parametrize("name,save,extra,why", [
    ("loads-a-module", '""', "    loadmodule: /tmp/evil.so", "may not set this server parameter"),
    ("moves-the-dir", '""', "    dir: /etc", "may not set this server parameter"),
    ("smuggles-an-option", '"" --loadmodule /tmp/evil.so', "", "holds another server option"),
    ("upper-case-include", '""', "    INCLUDE: /etc/redis.conf",
     "may not set this server parameter"),
])
def test_suites_cannot_set_dangerous_server_parameters(tmp_path: Path, name: str, save: str,
                                                       extra: str, why: str) -> None:
    write_suite(tmp_path, "ok", FORBIDDEN_SUITE.format(name="ok", save='""', extra=""))
    write_suite(tmp_path, name, FORBIDDEN_SUITE.format(name=name, save=save,
                                                       extra=extra))
    catalog = load_catalog(tmp_path)
    assert [s.name for s in catalog.suites] == ["ok"]
    assert any(why in p.message and p.path.name == f"{name}.yml" for p in catalog.problems), \
        catalog.problems
