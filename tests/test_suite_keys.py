"""The spec keys the performance team's corpus uses: each read, typed and validated.

Runtime behaviour of each key (init_lua, dataset, rdb_checks, ...) is tested against real
servers in tests/test_runner_dataset.py; these tests pin the model and the loader.
"""

from __future__ import annotations

from pathlib import Path

from redis_benchmarks_spec.suites.catalog import load_catalog
from redis_benchmarks_spec.suites.problems import ERROR, UNKNOWN_KEY, WARNING
from redis_benchmarks_spec.suites.toolconfig import Scalability
from redis_benchmarks_spec.suites.validate import lint_catalog
from tests.cli import rbs, write_suite

CORPUS_LIKE = """
version: 0.4
required-runner-capabilities:
- local-disk
name: {name}
description: every key the 0.3.47 corpus uses
dbconfig:
  configuration-parameters:
    save: '""'
  check:
    keyspacelen: 3
  init_lua: |
    for i = 1, 3 do redis.call('SET', 'k:' .. i, 'v') end
    return 1
  dataset: {dataset}
  dataset_name: three-keys
  dataset_description: three string keys
  rdb_checks:
    operation: load
    keyspacelen: 3
    value_size: 1
    sample_keys: [k:1, k:3]
  wait_for_bgsave: true
  preload_before_replica: true
  skip_throughput_floor: true
  low-throughput-benchmark: 'yes'
  preload_tool:
    tool: redis-benchmark
    arguments: -n 10 SET a b
    timeout: 3600
  resources:
    requests:
      memory: 1g
tested-commands: [debug]
tested-groups: [server]
redis-topologies: [oss-standalone]
clientconfig:
  tool: redis-benchmark
  arguments: -n 1 -c 1 DEBUG RELOAD NOSAVE NOFLUSH
  scalability:
    mode: '1:1'
    max_processes: 21
exporter:
  redistimeseries:
    metrics:
    - $."ALL STATS".Totals.Latency
priority: 50
"""


def test_every_corpus_key_is_read_into_the_model(tmp_path: Path) -> None:
    write_suite(tmp_path, "all", CORPUS_LIKE.format(name="all", dataset="data/dump.rdb"))
    (tmp_path / "defaults.yml").write_text(
        "exporter:\n  redistimeseries:\n    metrics:\n    - $.\"ALL STATS\".Totals.\"Ops/sec\"\n")
    catalog = load_catalog(tmp_path)
    assert catalog.problems == []
    suite = catalog.suites[0]
    db = suite.dbconfig
    assert db.init_lua == ["for i = 1, 3 do redis.call('SET', 'k:' .. i, 'v') end\nreturn 1\n"]
    # a relative dataset path is anchored at the suite's folder
    assert db.dataset == str((tmp_path / "data" / "dump.rdb").resolve())
    assert (db.dataset_name, db.dataset_description) == ("three-keys", "three string keys")
    assert db.rdb_checks is not None
    assert (db.rdb_checks.operation, db.rdb_checks.keyspacelen, db.rdb_checks.value_size,
            db.rdb_checks.sample_keys, db.rdb_checks.command) == ("load", 3, 1,
                                                                  ("k:1", "k:3"), "debug")
    assert db.wait_for_bgsave and db.preload_before_replica
    assert db.skip_throughput_floor and db.low_throughput_benchmark
    assert db.preload_tool is not None and db.preload_tool.timeout_s == 3600.0
    assert suite.clientconfigs[0].scalability == Scalability("1:1", 21)
    assert suite.clientconfigs[0].scalability.ratio == (1, 1)
    assert suite.required_capabilities == ["local-disk"]
    assert suite.missing_capabilities({"local-disk"}) == []
    assert suite.missing_capabilities(set()) == ["local-disk"]
    # skip_throughput_floor: a persistence client's ack rate is not exported from defaults
    assert suite.exporter.metrics == ['$."ALL STATS".Totals.Latency']


def test_flags_read_yes_and_no_and_default_false(tmp_path: Path) -> None:
    text = CORPUS_LIKE.format(name="flags", dataset="/x.rdb")
    write_suite(tmp_path, "flags", text.replace("low-throughput-benchmark: 'yes'",
                                                "low-throughput-benchmark: 'no'")
                .replace("wait_for_bgsave: true", "wait_for_bgsave: 'false'")
                .replace("  skip_throughput_floor: true\n", ""))
    suite = load_catalog(tmp_path).suites[0]
    assert not suite.dbconfig.low_throughput_benchmark  # bool("no") would say True
    assert not suite.dbconfig.wait_for_bgsave
    assert not suite.dbconfig.skip_throughput_floor
    assert not suite.dbconfig.throughput_floor_waived


def test_bad_values_are_errors_naming_the_key(tmp_path: Path) -> None:
    base = CORPUS_LIKE.format(name="{name}", dataset="/x.rdb")
    cases = {
        "lua": ("  init_lua: |\n    for i", "  init_lua: [3]\n  x_lua: |\n    for i",
                "dbconfig.init_lua[0]: expected a non-empty Lua script"),
        "scheme": ("dataset: /x.rdb", "dataset: ftp://host/x.rdb",
                   "dbconfig.dataset: unsupported URL scheme 'ftp'"),
        "s3": ("dataset: /x.rdb", "dataset: s3://bucket-only",
               "dbconfig.dataset: incomplete URL"),
        "op": ("operation: load", "operation: copy", "dbconfig.rdb_checks.operation"),
        "size": ("value_size: 1", "value_size: 0", "dbconfig.rdb_checks.value_size: expected"),
        "samples": ("sample_keys: [k:1, k:3]", "sample_keys: []",
                    "dbconfig.rdb_checks.sample_keys"),
    }
    for name, (old, new, _) in cases.items():
        text = base.replace("{name}", name)
        assert old in text, name
        write_suite(tmp_path, name, text.replace(old, new))
    softer = {
        "bgsave": ("wait_for_bgsave: true", "wait_for_bgsave: maybe",
                   "dbconfig.wait_for_bgsave: expected a boolean"),
        "timeout": ("timeout: 3600", "timeout: -1", "dbconfig.preload_tool.timeout: expected"),
        "scal": ("max_processes: 21", "max_processes: 0",
                 "clientconfig.scalability.max_processes: expected an integer >= 1"),
        "mode": ("mode: '1:1'", "mode: 'many'", "clientconfig.scalability.mode"),
        "caps": ("- local-disk", "- 'local disk'", "required-runner-capabilities: expected"),
        "dname": ("dataset_name: three-keys", "dataset_name: 'a b'", "dbconfig.dataset_name"),
    }
    for name, (old, new, _) in softer.items():
        write_suite(tmp_path, name, base.replace("{name}", name).replace(old, new))
    catalog = load_catalog(tmp_path)
    text = "\n".join(str(p) for p in catalog.errors)
    for name, (_, _, message) in {**cases, **softer}.items():
        assert f"{name}.yml: {message}" in text, name
    # a malformed init_lua, dataset or rdb_checks would measure something else: not loaded
    assert sorted(s.name for s in catalog.suites) == sorted(softer)
    caps = next(s for s in catalog.suites if s.name == "caps")
    assert caps.missing_capabilities({"local-disk"}) == ["<unreadable>"]  # fails closed


def test_unknown_keys_warn_and_strict_lint_fails(tmp_path: Path) -> None:
    text = CORPUS_LIKE.format(name="typo", dataset="/x.rdb").replace("version: 0.4", "ersion: 0.4")
    write_suite(tmp_path, "typo", text.replace("  wait_for_bgsave: true", "  wait_for_bgsav: true"))
    catalog = load_catalog(tmp_path)
    assert [s.name for s in catalog.suites] == ["typo"]  # loads and runs
    unknown = [p for p in catalog.problems if p.kind == UNKNOWN_KEY]
    assert {(p.key, p.severity) for p in unknown} == {("ersion", WARNING),
                                                      ("dbconfig.wait_for_bgsav", WARNING)}
    assert "did you mean 'version'?" in str(unknown[0])
    assert catalog.errors == []
    strict = lint_catalog(tmp_path, strict=True)
    assert {p.key for p in strict if p.severity == ERROR} == {"ersion", "dbconfig.wait_for_bgsav"}
    tolerant = rbs("suites", "lint", str(tmp_path))
    assert tolerant.returncode == 0, tolerant.stderr
    assert "ersion: unknown key" in tolerant.stderr
    assert rbs("suites", "lint", "--strict", str(tmp_path)).returncode == 1


def test_our_collection_is_linted_strict_by_default() -> None:
    done = rbs("suites", "lint")
    assert done.returncode == 0, done.stderr
    assert "(strict)" in done.stderr


def test_unparseable_file_reported_once_and_others_load(tmp_path: Path) -> None:
    write_suite(tmp_path, "ok", CORPUS_LIKE.format(name="ok", dataset="/x.rdb"))
    write_suite(tmp_path, "bad", "version: 0.4\nname: bad\n  dbconfig: [\n")
    catalog = load_catalog(tmp_path)
    assert [s.name for s in catalog.suites] == ["ok"]
    bad = [p for p in catalog.problems if p.path.name == "bad.yml"]
    assert len(bad) == 1 and "unparseable YAML" in str(bad[0]) and "\n" not in str(bad[0])


def test_name_differs_from_file_name(tmp_path: Path) -> None:
    write_suite(tmp_path, "file-name", CORPUS_LIKE.format(name="suite-name", dataset="/x.rdb"))
    catalog = load_catalog(tmp_path)
    assert catalog.by_name("suite-name") is not None
    assert catalog.by_name("file-name") is None
    [warning] = catalog.problems
    assert warning.severity == WARNING and warning.key == "name"
    assert "'suite-name' differs from the file name 'file-name.yml'" in str(warning)
    done = rbs("run", "--suites-dir", str(tmp_path), "--test", "suite-name", "--dry-run",
               "--no-datasink")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "suite-name" in done.stdout


def test_run_reports_only_the_selected_suites_problems(tmp_path: Path) -> None:
    write_suite(tmp_path, "chosen", CORPUS_LIKE.format(name="chosen", dataset="/x.rdb")
                .replace("  wait_for_bgsave: true", "  wait_for_bgsav: true"))
    write_suite(tmp_path, "other", CORPUS_LIKE.format(name="other", dataset="/x.rdb")
                .replace("priority: 50", "priority: 50\nsurprise: 1"))
    write_suite(tmp_path, "broken", "name: [unclosed\n")
    done = rbs("run", "--suites-dir", str(tmp_path), "--test", "chosen", "--dry-run",
               "--no-datasink")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "wait_for_bgsav: unknown key" in out
    assert "surprise" not in out
    # a file that does not load has no known name (it may be the one asked for): named
    assert "broken.yml: unparseable YAML" in out
    assert "1 problem(s) in 1 other file(s) not shown" in out


def test_name_collision_with_another_suites_folder(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    write_suite(ours, "same", CORPUS_LIKE.format(name="same", dataset="/x.rdb"))
    write_suite(ours, "clash", CORPUS_LIKE.format(name="clash", dataset="/x.rdb"))
    write_suite(theirs, "same", CORPUS_LIKE.format(name="same", dataset="/x.rdb")
                .replace("description: every", "description: other prose, same test:"))
    write_suite(theirs, "clash", CORPUS_LIKE.format(name="clash", dataset="/x.rdb")
                .replace("-n 1 -c 1 DEBUG", "-n 1 -c 2 DEBUG"))
    problems = lint_catalog(ours, [theirs])
    clashes = [p for p in problems if p.kind == "name-collision"]
    assert [p.path.name for p in clashes] == ["clash.yml"]
    assert clashes[0].severity == WARNING and str(theirs) in clashes[0].message
    done = rbs("suites", "lint", str(ours), "--other-suites-dir", str(theirs))
    assert "'clash' is also the name of a different suite" in done.stderr
