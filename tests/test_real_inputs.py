"""Real inputs accepted: any branch name git accepts (UTF-8 included) flows through the
webhook, the trigger, stream entries, datasink keys and the PR comment; what git rejects is
still refused. Suites that protect their server with requirepass or ACL users run with the
credentials they declare (real redis-server, real clients)."""

from __future__ import annotations

import json
import subprocess
import time
import unicodedata
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.analysis.report import md_code
from redis_benchmarks_spec.common.process import ProcessRegistry
from redis_benchmarks_spec.datasink import keys, reader
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.events.messages import BuildRequest
from redis_benchmarks_spec.events.validation import ref_problem
from redis_benchmarks_spec.intake.trigger import (
    RedisSourceStore,
    RequestOptions,
    Selection,
    trigger,
)
from redis_benchmarks_spec.notify.pr_body import queued_body
from redis_benchmarks_spec.pullrequest import state as pr_state
from redis_benchmarks_spec.runner.launcher import ProcessLauncher, ServerSpec, ServerStartError
from redis_benchmarks_spec.suites.validate import validate_catalog
from tests.cli import rbs, write_suite
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    METRICS,
    TEST_NAME,
    client_fixture,
    datasink_fixture,
    make_result,
)
from tests.test_api_webhook import NAMES, PR_BODY, PUSH_BODY, _app, _call, _requests
from tests.test_intake_trigger import NAMES as TRIGGER_NAMES
from tests.test_intake_trigger import _git, _queued

UNICODE_BRANCH = "fé/ünïcödé-分支-🚀"
# names git accepts that the old ASCII-only rule refused, and names git refuses
GIT_NAMES = [
    UNICODE_BRANCH, "unstable", "feature/x", "#123-fix", "(wip)", "a,b", "a=b", "a]b", "a`b",
    "x@", "@x", "\u202eevil", "a!b", "a'b", "a\"b", "a<b>", "a{b}", "a|b", "a;b", "a$b",
    "HEAD", "-x", "a b", "a@{b", "a..b", "a/.b", "a.lock", "a/", "/a", "a//b", "a.", "a\\b",
    "a:b", "a~b", "a^b", "a?b", "a*b", "a[b", ".a", "a/b.lock/c", "a\x7fb", "a\tb", "x" * 255,
    "x" * 256,
]


def git_accepts(name: str) -> bool:
    done = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True,
                          timeout=30, check=False)
    return done.returncode == 0


def test_branch_rules_are_gits_own() -> None:
    for name in GIT_NAMES:
        if len(name.encode()) > 255:
            continue  # git has no length limit; ours is one component of 255 bytes
        if any(unicodedata.category(c) == "Cf" for c in name):
            # git takes it; we refuse a name that shows as another (issue 42, Trojan Source)
            assert git_accepts(name) and ref_problem(name) is not None, name
            continue
        assert (ref_problem(name) is None) == git_accepts(name), name
    assert ref_problem("x" * 255) is None and ref_problem("x" * 256) is not None
    assert ref_problem("a/" * 400 + "b") is None  # 801 bytes in all: within 1024
    assert ref_problem("ab/" * 400 + "c") == "is longer than 1024 bytes"
    assert ref_problem("\ud800") == "is not valid UTF-8"  # a lone surrogate JSON can carry
    assert ref_problem("@") is not None  # git reads a lone @ as HEAD


def _pr_body(head_ref: str) -> bytes:
    body = json.loads(PR_BODY)
    body["pull_request"]["head"]["ref"] = head_ref
    return json.dumps(body).encode()


def test_webhook_accepts_any_branch_git_accepts(redis_server) -> None:  # type: ignore[no-untyped-def]
    app = _app(redis_server)
    status, answer = _call(app, _pr_body(UNICODE_BRANCH), delivery="u-1")
    assert status.startswith("201"), answer
    [request] = _requests(redis_server)
    assert request.branch == UNICODE_BRANCH
    # the raw stream field is the UTF-8 text, decoded back unchanged
    [(_, fields)] = redis_server.client().xrange(NAMES.build_requests)
    assert BuildRequest.decode(fields).branch == UNICODE_BRANCH
    info = pr_state.from_payload(json.loads(_pr_body(UNICODE_BRANCH)))
    assert info.head_ref == UNICODE_BRANCH
    for bad in ("a..b", "-x", "a b", "a~1", "x" * 300):
        status, _ = _call(app, _pr_body(bad), delivery=f"bad-{bad[:8]}")
        assert status.startswith("400"), bad
    assert len(_requests(redis_server)) == 1


def test_push_to_a_tracked_unicode_branch_enqueues(redis_server) -> None:  # type: ignore[no-untyped-def]
    body = json.loads(PUSH_BODY)
    body["ref"] = f"refs/heads/{UNICODE_BRANCH}"
    status, answer = _call(_app(redis_server, branches=(UNICODE_BRANCH,)),
                           json.dumps(body).encode(), event="push")
    assert status.startswith("201"), answer
    assert [r.branch for r in _requests(redis_server)] == [UNICODE_BRANCH]


def test_trigger_of_a_unicode_branch(redis_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    repo = tmp_path / "redis"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", UNICODE_BRANCH)
    (repo / "file.txt").write_text("x\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    _git(repo, "remote", "add", "origin", "https://github.com/redis/redis.git")
    client = redis_server.client()
    [done] = trigger(client, TRIGGER_NAMES, str(repo), Selection(branch=UNICODE_BRANCH),
                     RequestOptions(), RedisSourceStore())
    assert done.request.branch == UNICODE_BRANCH
    assert [r.branch for r in _queued(client)] == [UNICODE_BRANCH]


def test_datasink_keys_and_labels_of_a_unicode_branch(client: redis.Redis) -> None:
    branch = "fé/ü,x(y)=z-🚀"  # also characters RedisTimeSeries labels cannot hold
    push_results(client, [make_result(run, branch=branch) for run in range(3)])
    scope = keys.Scope("ci", "redis", "redis")
    assert branch in reader.list_branches(client, scope)
    selector = reader.SeriesSelector(metric=METRICS[0], side=keys.Side("branch", branch),
                                     test_name=TEST_NAME)
    assert len(reader.points(client, selector)) == 3
    [key] = [k.decode() for k in client.keys("ci.benchmarks.redis/by.branch/*")
             if METRICS[0] in k.decode()]
    assert f"/{branch}/" in key


def test_pr_comment_shows_any_branch_literally() -> None:
    info = pr_state.PrInfo(org="redis", repo="redis", number=7, head_sha="a" * 40,
                           head_ref="@everyone/a`b<img>", base_ref="unstable")
    body = queued_body(info, ["icelake"])
    assert "(``@everyone/a`b<img>``)" in body
    # a name that shows as another never gets this far: the stored record refuses it
    with pytest.raises(pr_state.PrInfoError, match="head_ref"):
        pr_state.PrInfo(org="redis", repo="redis", number=7, head_sha="a" * 40,
                        head_ref="a\u202eb", base_ref="unstable")
    assert md_code("`x") == "`` `x ``" and md_code("分支") == "`分支`"


# ------------------------------------------------------------------ suites with credentials

REQUIREPASS = """\
version: 0.4
name: auth-requirepass
redis-topologies: [{topology}]
dbconfig:
  configuration-parameters:
    requirepass: s3cret-pw
  init_commands:
    - SET a 1
  check:
    keyspacelen: 1
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -c 2 -n 2000 -t set
"""
ACL_USER = """\
version: 0.4
name: auth-acl
dbconfig:
  init_commands:
    - ACL SETUSER bench on >bench-pw ~* &* +@all
    - ACL SETUSER default off
  preload_tool:
    tool: redis-benchmark
    arguments: -c 2 -n 500 -r 50 -t set
tested-commands: [get]
clientconfig:
  tool: redis-benchmark
  arguments: -c 2 -n 2000 -t get
"""


def run_suites(tmp_path: Path, files: dict[str, str]) -> tuple[subprocess.CompletedProcess[str],
                                                               list[dict]]:
    suites = tmp_path / "suites"
    suites.mkdir()
    for name, text in files.items():
        write_suite(suites, name, text)
    done = rbs("run", "--suites-dir", str(suites), "--results-dir",
               str(tmp_path / "results"), "--no-datasink")
    docs = [json.loads(p.read_text()) for p in (tmp_path / "results").rglob("result.json")]
    return done, docs


def test_suites_with_requirepass_and_acl_users_run_with_their_credentials(
        tmp_path: Path) -> None:
    started = time.monotonic()
    done, docs = run_suites(tmp_path, {
        "auth-requirepass": REQUIREPASS.format(topology="oss-standalone"),
        "auth-acl": ACL_USER,
    })
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted((d["test_name"], d["status"]) for d in docs) == [
        ("auth-acl", "ok"), ("auth-requirepass", "ok")]
    by_name = {d["test_name"]: d for d in docs}
    # the tools authenticate as a throwaway user with bench's permissions (run_user.py)
    tool_auth = by_name["auth-acl"]["argv"][0][5:9]
    assert tool_auth[0] == "--user" and tool_auth[1].startswith("rbs-run-"), tool_auth
    assert tool_auth[2:] == ["-a", "***"]
    assert "-a" in by_name["auth-requirepass"]["argv"][0]
    for doc in docs:
        assert doc["client_credential"].startswith("throwaway ACL user rbs-run-"), doc
    assert elapsed < 60, elapsed  # the unauthenticated runner waited 15 s per start, then failed
    for path in (tmp_path / "results").rglob("*.json"):
        text = path.read_text()
        assert "s3cret-pw" not in text and "bench-pw" not in text, path


def test_replicas_of_a_password_protected_primary_are_linked(tmp_path: Path) -> None:
    done, docs = run_suites(tmp_path, {
        "auth-requirepass": REQUIREPASS.format(topology="oss-standalone-01-replicas")})
    assert done.returncode == 0, done.stdout + done.stderr
    [doc] = docs
    assert doc["status"] == "ok", doc["reason"]
    assert [n["role"] for n in doc["deployment"]["nodes"]] == ["primary", "replica"]


def test_a_server_refusing_the_runner_fails_at_once_saying_so(tmp_path: Path) -> None:
    registry = ProcessRegistry()
    launcher = ProcessLauncher(registry)
    spec = ServerSpec("redis-server", ["--requirepass", "undeclared"], [], tmp_path / "node")
    started = time.monotonic()
    with pytest.raises(ServerStartError, match="refused the runner's connection") as caught:
        launcher.start(spec)
    assert time.monotonic() - started < 10  # not the 15 s PING timeout (5.04 s once in CI)
    assert "did not answer PING" not in str(caught.value)
    assert "it was given no credentials" in str(caught.value)


def test_a_suite_that_leaves_no_way_in_is_rejected(tmp_path: Path) -> None:
    text = ACL_USER.replace("    - ACL SETUSER bench on >bench-pw ~* &* +@all\n", "")
    write_suite(tmp_path, "auth-acl", text)
    [rejected] = validate_catalog(tmp_path).rejected
    assert rejected.reason.startswith("dbconfig.init_commands: no way to connect")
