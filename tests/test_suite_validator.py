"""One suite validator for lint, run, the agent and the trigger: what `rbs suites lint`
rejects never runs, and every skip names the file and the reason. Duplicate YAML keys are
errors naming the file, the key and the line."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest

from redis_benchmarks_spec.agent.agent import Agent, AgentConfig
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import read_statuses
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.suites.catalog import SuiteFilter, load_catalog
from redis_benchmarks_spec.suites.validate import validate_catalog
from redis_benchmarks_spec.suites.yaml_safe import DuplicateKey, loads
from tests.cli import rbs, write_suite
from tests.pipeline_fixtures import SUITE, publish_event

GOOD = """\
version: 0.4
name: {name}
tested-groups: [string]
tested-commands: [set]
dbconfig:
  check:
    keyspacelen: {keyspacelen}
clientconfig:
  tool: redis-benchmark
  arguments: -c 1 -n 200 -t set
"""
DUPLICATE = """\
version: 0.4
name: dup-key
tested-commands: [set]
dbconfig:
  check:
    keyspacelen: 0
  check:
    keyspacelen: 5
clientconfig:
  tool: redis-benchmark
  arguments: -c 1 -n 200 -t set
"""


def folder(tmp_path: Path) -> Path:
    d = tmp_path / "suites"
    write_suite(d, "good", GOOD.format(name="good", keyspacelen=0))
    write_suite(d, "negative", GOOD.format(name="negative", keyspacelen=-5))
    write_suite(d, "text", GOOD.format(name="text", keyspacelen="'many'"))
    write_suite(d, "dup-key", DUPLICATE)
    return d


def test_duplicate_keys_are_errors_naming_key_and_lines() -> None:
    with pytest.raises(DuplicateKey) as caught:
        loads(DUPLICATE.encode())
    assert caught.value.key == "dbconfig.check"
    assert (caught.value.line, caught.value.first_line) == (7, 5)
    with pytest.raises(DuplicateKey, match="line 2 .first at line 1"):
        loads(b"a: [{x: 1, y: 2}]\na: 3\n")
    with pytest.raises(DuplicateKey) as nested:
        loads(b"l:\n  - {x: 1}\n  - {x: 1, x: 2}\n")
    assert nested.value.key == "l[1].x"
    # a merge's keys may be overridden: that is what a merge is for
    assert loads(b"a: &a {k: 1, j: 2}\nb:\n  <<: *a\n  k: 3\n")["b"] == {"k": 3, "j": 2}


def test_the_list_form_repeating_a_key_is_an_error(tmp_path: Path) -> None:
    text = GOOD.format(name="listform", keyspacelen=0).replace(
        "dbconfig:\n  check:\n    keyspacelen: 0\n",
        "dbconfig:\n  - check: {keyspacelen: 0}\n  - check: {keyspacelen: 9}\n")
    write_suite(tmp_path, "listform", text)
    [rejected] = validate_catalog(tmp_path).rejected
    assert "dbconfig.check: given twice" in rejected.line()


def test_lint_and_the_validator_agree_on_what_never_runs(tmp_path: Path) -> None:
    d = folder(tmp_path)
    catalog = validate_catalog(d)
    assert [s.name for s in catalog.suites] == ["good"]
    reasons = {r.path.name: r.reason for r in catalog.rejected}
    assert reasons["negative.yml"] == \
        "dbconfig.check.keyspacelen: expected an integer >= 0, got -5"
    assert reasons["text.yml"] == \
        "dbconfig.check.keyspacelen: expected an integer >= 0, got 'many'"
    assert reasons["dup-key.yml"].startswith(
        "dbconfig.check: duplicate key at line 7 (first at line 5)")
    lint = rbs("suites", "lint", str(d))
    assert lint.returncode == 1
    for name in ("negative.yml", "text.yml", "dup-key.yml"):
        assert name in lint.stderr
    assert f"{d / 'dup-key.yml'}: dbconfig.check: duplicate key at line 7" in lint.stderr
    # every file lint names with an error is a file the validator rejects, and vice versa
    erring = {line.split(": ")[1] for line in lint.stderr.splitlines()
              if line.startswith("error: ")}
    assert erring == {str(r.path) for r in catalog.rejected}


def test_run_skips_what_lint_rejects_naming_file_and_reason(tmp_path: Path) -> None:
    d = folder(tmp_path)
    done = rbs("run", "--suites-dir", str(d), "--results-dir", str(tmp_path / "results"),
               "--no-datasink", "--format", "json")
    out = done.stdout + done.stderr
    assert "Traceback" not in out
    assert done.returncode == 1, out  # the good suite ran ok; three asked for were not run
    assert f"skipped {d / 'negative.yml'}: dbconfig.check.keyspacelen: expected an integer " \
           ">= 0, got -5" in done.stderr
    assert f"skipped {d / 'text.yml'}: dbconfig.check.keyspacelen" in done.stderr
    assert f"skipped {d / 'dup-key.yml'}: dbconfig.check: duplicate key" in done.stderr
    assert "3 selected suite file(s) not run" in done.stderr
    written = sorted(p.parent.parent.name for p in (tmp_path / "results").rglob("result.json"))
    assert written == ["good"], written


def test_run_of_only_rejected_suites_is_refused(tmp_path: Path) -> None:
    d = folder(tmp_path)
    done = rbs("run", "--suites-dir", str(d), "--test", "negative", "--no-datasink",
               "--results-dir", str(tmp_path / "results"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"skipped {d / 'negative.yml'}" in done.stderr + done.stdout
    assert "no valid suite" in done.stderr
    assert not list((tmp_path / "results").rglob("result.json"))


def test_trigger_names_rejected_suites_and_refuses_a_selection_of_only_those(
        tmp_path: Path) -> None:
    d = folder(tmp_path)
    # refused before the broker is contacted (nothing listens on port 1)
    done = rbs("trigger", "--repo", str(Path(__file__).resolve().parents[1]),
               "--suites-dir", str(d), "--tests-regexp", "^(negative|text)$",
               "--broker", "redis://127.0.0.1:1")
    assert done.returncode == 2, done.stderr
    assert f"skipped {d / 'negative.yml'}: dbconfig.check.keyspacelen" in done.stderr
    assert f"skipped {d / 'text.yml'}" in done.stderr
    assert "every suite it picks" in done.stderr


def test_agent_logs_and_fails_rejected_suites_and_runs_the_rest(
        redis_server, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    d = tmp_path / "suites"
    write_suite(d, "ok", SUITE.format(name="ok", n=500))
    broken = SUITE.format(name="broken", n=500).replace(
        "dbconfig:\n", "dbconfig:\n  check:\n    keyspacelen: -1\n")
    write_suite(d, "broken", broken)
    write_suite(d, "garbled", "name: [unclosed\n")
    names = StreamNames.with_prefix(f"t{uuid.uuid4().hex[:8]}")
    pushed: list[RunResult] = []
    config = AgentConfig(names=names, platform="p1", consumer="p1-a", suites_dir=d,
                         work_dir=tmp_path / "work", results_dir=tmp_path / "results",
                         block_ms=200)
    agent = Agent(redis_server.client(), config, pushed.extend)
    event = publish_event(redis_server.client(), names, "a" * 40)
    with caplog.at_level(logging.WARNING, logger="redis_benchmarks_spec.agent"):
        assert agent.run(max_events=1) == 1
    assert [r.test_name for r in pushed] == ["ok"] and pushed[0].ok
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert f"skipped {d / 'broken.yml'}: dbconfig.check.keyspacelen: expected an integer " \
           ">= 0, got -1" in logged
    assert f"skipped {d / 'garbled.yml'}: unparseable YAML" in logged
    statuses = {s.test_name: s for s in read_statuses(redis_server.client(), names, event.id)}
    assert statuses["broken"].state == "failed"
    assert "broken.yml: dbconfig.check.keyspacelen" in statuses["broken"].reason
    assert statuses["garbled"].state == "failed"
    assert statuses["ok"].state == "completed"


def test_the_corpus_shape_stays_runnable_in_a_tolerant_folder(tmp_path: Path) -> None:
    """A tested-commands entry the client never issues (38 suites of the team's corpus) is a
    warning elsewhere, an error under strict (our own folder), and lint says the same."""
    text = GOOD.format(name="liar", keyspacelen=0).replace("[set]", "[set, setx]")
    write_suite(tmp_path, "liar", text)
    assert [s.name for s in validate_catalog(tmp_path).suites] == ["liar"]
    assert rbs("suites", "lint", str(tmp_path)).returncode == 0
    strict = validate_catalog(tmp_path, strict=True)
    assert strict.suites == [] and "'setx' is never issued" in strict.rejected[0].reason
    assert rbs("suites", "lint", "--strict", str(tmp_path)).returncode == 1


def test_rejected_files_match_selections_by_name(tmp_path: Path) -> None:
    d = folder(tmp_path)
    write_suite(d, "garbled", "name: [unclosed\n")
    catalog = validate_catalog(d)
    picked = catalog.rejected_matching(SuiteFilter(tests_regexp="garb|neg"))
    assert sorted(r.path.name for r in picked) == ["garbled.yml", "negative.yml"]
    assert load_catalog(d).by_name("negative") is not None  # loads; the validator stops it
