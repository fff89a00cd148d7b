"""Suites of the performance team's corpus, run for real: `rbs run` with real memtier_benchmark.

The corpus (redis-benchmarks-specification 0.3.47) is fetched at test time. The sample is the
first suite by name, for each of six data types, that this host's Redis can run: every command
the suite sends exists here (asked of a real server with COMMAND INFO), every configuration
parameter it sets exists here, its topology is oss-standalone, its only tool is memtier, and its
preload is small (no external dataset, no Lua loops, at most PRELOAD_MAX requests). Each runs
for TEST_TIME seconds through the real CLI and must come back ok with a positive Ops/sec.
memtier_benchmark is found where scripts/setup.sh built it: PATH is not changed here.
"""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml

from redis_benchmarks_spec.common.tools import find_tool
from tests.cli import rbs
from tests.conftest import RedisServer
from tests.corpus import corpus_suites

pytestmark = pytest.mark.slow

GROUPS = ("string", "hash", "list", "set", "sorted-set", "stream")
PRELOAD_MAX = 50_000  # requests: a preload of a few seconds here
TEST_TIME = 2


@dataclass(frozen=True)
class Candidate:
    path: Path
    raw: dict[str, Any]

    @property
    def group(self) -> str:
        return (self.raw.get("tested-groups") or [""])[0]

    @property
    def db(self) -> dict[str, Any]:
        return self.raw.get("dbconfig") or {}


def _options(arguments: str) -> list[tuple[str, str]]:
    """memtier's (option, value) pairs, for the few options the selection looks at."""
    words = shlex.split(arguments)
    pairs = []
    for i, word in enumerate(words):
        if "=" in word and word.startswith("--"):
            name, value = word.split("=", 1)
            pairs.append((name, value))
        elif word.startswith("-") and i + 1 < len(words):
            pairs.append((word, words[i + 1]))
    return pairs


def _commands(arguments: str) -> list[str]:
    """The command names the tool sends: each --command's first word."""
    return [shlex.split(v)[0].lower() for k, v in _options(arguments) if k == "--command"]


def _preload_requests(arguments: str) -> int:
    """How many requests a memtier preload sends in all (-n per client, or the key range)."""
    opts = dict(_options(arguments))
    clients = int(opts.get("-c", opts.get("--clients", "50")))
    threads = int(opts.get("-t", opts.get("--threads", "4")))
    requests = opts.get("-n", opts.get("--requests", "10000"))
    if requests == "allkeys":
        low = int(opts.get("--key-minimum", "0"))
        return int(opts.get("--key-maximum", "10000000")) - low + 1
    return int(requests) * clients * threads


def _tool_arguments(raw: dict[str, Any]) -> tuple[str, str] | None:
    """(client arguments, preload arguments) when memtier is the only tool, else None."""
    client = raw.get("clientconfig") or {}
    preload = (raw.get("dbconfig") or {}).get("preload_tool") or {}
    if client.get("tool") != "memtier_benchmark" or raw.get("clientconfigs"):
        return None
    if preload and preload.get("tool") != "memtier_benchmark":
        return None
    return str(client.get("arguments", "")), str(preload.get("arguments", ""))


def _runnable(cand: Candidate, known: set[str], conn: redis.Redis) -> bool:
    """Whether this Redis (asked, not assumed) can run the suite quickly on one host."""
    raw, db = cand.raw, cand.db
    args = _tool_arguments(raw)
    if (args is None or raw.get("redis-topologies") != ["oss-standalone"]
            or db.get("dataset") or db.get("init_lua") or raw.get("required-runner-capabilities")
            or len(db.get("init_commands") or []) > 10):
        return False
    client_args, preload_args = args
    if preload_args and _preload_requests(preload_args) > PRELOAD_MAX:
        return False
    names = {c.lower() for c in raw.get("tested-commands") or []}
    names |= set(_commands(client_args)) | set(_commands(preload_args))
    names |= {shlex.split(str(c))[0].lower() for c in db.get("init_commands") or []}
    if not names <= known:
        return False
    params = db.get("configuration-parameters") or {}
    return all(conn.config_get(str(p)) for p in params)


def sample(corpus: Path, server: RedisServer) -> list[Candidate]:
    """The first runnable suite by name for each of GROUPS (deterministic for one corpus)."""
    conn = server.client()
    known = {str(name, "ascii").lower() for name in conn.command_list()}
    chosen: dict[str, Candidate] = {}
    cands = [Candidate(p, yaml.load(p.read_text(), Loader=yaml.CSafeLoader))
             for p in sorted(corpus.glob("memtier_benchmark-*.yml"))]
    # suites with a preload first: the preload and keyspace check run with memtier too
    for cand in sorted(cands, key=lambda c: (not c.db.get("preload_tool"), c.path.name)):
        if cand.group in GROUPS and cand.group not in chosen and _runnable(cand, known, conn):
            chosen[cand.group] = cand
    return [chosen[g] for g in GROUPS if g in chosen]


def test_a_sample_of_the_teams_corpus_runs_with_real_memtier(tmp_path: Path) -> None:
    binary = find_tool("memtier_benchmark")
    assert binary, "memtier_benchmark missing: scripts/setup.sh builds it"
    corpus = corpus_suites()
    probe = RedisServer(tmp_path)
    try:
        chosen = sample(corpus, probe)
    finally:
        probe.stop()
    assert [c.group for c in chosen] == list(GROUPS), [c.path.name for c in chosen]
    suites = tmp_path / "suites"
    suites.mkdir()
    shutil.copy(corpus / "defaults.yml", suites / "defaults.yml")
    for cand in chosen:
        shutil.copy(cand.path, suites / cand.path.name)
    names = [c.raw["name"] for c in chosen]
    done = rbs("run", "--suites-dir", str(suites), "--test", ",".join(names),
               "--test-time", str(TEST_TIME), "--no-datasink",
               "--results-dir", str(tmp_path / "out"), "--format", "json", timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["test_name"]: r for r in json.loads(done.stdout)}
    assert sorted(rows) == sorted(names), done.stderr[-3000:]
    for name, row in rows.items():
        assert row["status"] == "ok", (name, row["reason"], done.stderr[-3000:])
        assert row["ops_per_sec"] > 0, (name, row)
    documents = sorted((tmp_path / "out").rglob("result.json"))
    assert len(documents) == len(names)
    for doc in documents:
        _check_document(json.loads(doc.read_text()), binary)


def _check_document(doc: dict[str, Any], binary: str) -> None:
    """The stored result: measured by the memtier found, with the suite's commands served."""
    name = doc["test_name"]
    assert doc["status"] == "ok" and doc["argv"][0][0] == binary, name
    assert doc["tool_version"].startswith("memtier_benchmark "), (name, doc["tool_version"])
    assert doc["metrics"]['ALL_STATS.Totals.Ops/sec'] > 0, (name, doc["metrics"])
    assert doc["result"]["error_replies"] == 0, name
    served = {c: doc["commandstats_delta"].get(c, {}).get("calls", 0)
              for c in doc["tested_commands"]}
    assert any(calls > 0 for calls in served.values()), (name, served)
