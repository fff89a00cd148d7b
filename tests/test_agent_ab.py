"""A platform with an A/B budget answers a pull-request event with interleaved base/PR pairs
until decided: a real broker (redis-server streams), real redis-server runs of both builds,
a real datasink and the local GitHub stand-in. Without the base build, or without a budget,
the agent runs the event as before (and the comment says why there is no A/B)."""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.agent.agent import Agent, AgentConfig
from redis_benchmarks_spec.agent.platform_config import (
    PlatformConfigError,
    UntilDecidedBudget,
    load,
)
from redis_benchmarks_spec.agent.push import DatasinkPusher
from redis_benchmarks_spec.analysis.compare import ComparisonReport
from redis_benchmarks_spec.analysis.sequential_compare import SEQUENTIAL_RECORD
from redis_benchmarks_spec.analysis.session_files import HOST_NOISE_FILE, PRIORS_FILE
from redis_benchmarks_spec.builder import artifacts, signing
from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.messages import BuildEvent, event_id_for, new_id
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, read_statuses
from redis_benchmarks_spec.inputs.session_folder import is_session, load_session
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.notify import notifier as notifier_mod
from redis_benchmarks_spec.notify.github_comments import GitHubConfig
from redis_benchmarks_spec.notify.notifier import PrNotifier
from redis_benchmarks_spec.notify.pr_body import results_body
from redis_benchmarks_spec.pullrequest import ab_record
from redis_benchmarks_spec.pullrequest import state as pr_state
from redis_benchmarks_spec.pullrequest.state import PrInfo, Section
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner.config import SessionConfig
from tests.cli import rbs, write_suite
from tests.datasink_fixtures import client_fixture, datasink_fixture  # noqa: F401
from tests.github_standin import GitHubStandIn
from tests.pipeline_fixtures import SUITE, system_artifact

VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"
TOKEN = "ghs_agent-ab-token"
HEAD, BASE = "1" * 40, "2" * 40
# few pairs: a first round of 2, then rounds of 2, at most 4 (8 runs of a 2,000-SET test)
BUDGET = UntilDecidedBudget(max_repetitions=4, first_round=2, round_repetitions=2,
                            time_budget_s=120)
STOPS = ("decided", "max repetitions reached")


class Pushed:
    """The agent's push: into the real datasink, remembering what went there."""

    def __init__(self, sink: redis.Redis) -> None:
        self.real = DatasinkPusher(sink)
        self.results: list[RunResult] = []

    def __call__(self, results: list[RunResult]) -> None:
        self.real(results)
        self.results += results

    def of(self, sha: str) -> list[RunResult]:
        return [r for r in self.results if r.context.git.hash == sha]


def _store(client: redis.Redis, names: StreamNames, sha: str) -> artifacts.ArtifactRef:
    """The installed redis binaries stored as the build of ``sha``, where a builder puts it."""
    key = artifacts.artifact_key(names.prefix, sha, VARIANT, {})
    # a builder records the commit it verified its source to be (builder provenance)
    return artifacts.store(client, key, dataclasses.replace(system_artifact(), source_sha=sha),
                           artifacts.Signer(signing.load_key(), sha, VARIANT))


def _pr_event(client: redis.Redis, names: StreamNames, with_base: bool) -> BuildEvent:
    request_id = new_id()
    if with_base:
        _store(client, names, BASE)
    event = BuildEvent(
        id=event_id_for(request_id, VARIANT), request_id=request_id, org="redis",
        repo="redis", branch="feature", sha=HEAD, commit_time_ms=1_700_000_000_000,
        build_variant=VARIANT, artifact=_store(client, names, HEAD), redis_version="7.0.15",
        pr=7, env={})
    # what the webhook receiver stores when it accepts the pull request
    pr_state.save_info(client, names, request_id, PrInfo(
        org="redis", repo="redis", number=7, head_sha=HEAD, head_ref="feature",
        base_ref="unstable", base_sha=BASE))
    publish(client, names.builds, event)
    return event


def _run_agent(redis_server, tmp_path: Path, sink: redis.Redis,  # type: ignore[no-untyped-def]
               budget: UntilDecidedBudget | None, with_base: bool = True,
               handed: list[ab_record.ABRecord | None] | None = None,
               ) -> tuple[BuildEvent, Pushed, str, StreamNames]:
    """``handed`` collects what the agent hands its event-done hook; the notifier then also
    writes the HTML report (under ``tmp_path/reports``)."""
    names = StreamNames.with_prefix(f"ab{uuid.uuid4().hex[:6]}")
    suites = tmp_path / "suites"
    write_suite(suites, "s", SUITE.format(name="ab-set", n=2000))
    broker = redis_server.client()
    pushed = Pushed(sink)
    config = AgentConfig(names=names, platform="p1", consumer="p1-a", suites_dir=suites,
                         work_dir=tmp_path / "work", results_dir=tmp_path / "results",
                         block_ms=200, until_decided=budget,
                         run=SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "results",
                                           test_time=1))
    event = _pr_event(broker, names, with_base)
    with GitHubStandIn(TOKEN) as gh:
        notifier = PrNotifier(broker, names, GitHubConfig(api_url=gh.url, token=TOKEN),
                              datasink=sink,
                              reports_dir=tmp_path / "reports" if handed is not None else None)

        def event_done(done: BuildEvent, platform: str, ab: ab_record.ABRecord | None) -> None:
            if handed is not None:
                handed.append(ab)
            notifier.platform_done(done, platform, ab)

        agent = Agent(broker, config, pushed, on_event_done=event_done)
        assert agent.run(max_events=1) == 1
    (body,) = [c["body"] for c in gh.comments.values()]
    done = {(s.platform, s.state) for s in read_statuses(broker, names, event.id)
            if s.test_name == EVENT_DONE}
    assert done == {("p1", "completed")}
    assert broker.xpending(names.builds, names.platform_group("p1"))["pending"] == 0
    return event, pushed, body, names


def test_pr_event_runs_interleaved_pairs_until_decided(redis_server, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                       client: redis.Redis,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def no_datasink_comparison(*args: Any) -> None:
        raise AssertionError("the A/B's comment computed a datasink comparison")

    monkeypatch.setattr(notifier_mod, "compare_platform", no_datasink_comparison)
    handed: list[ab_record.ABRecord | None] = []
    event, pushed, body, names = _run_agent(redis_server, tmp_path, client, BUDGET,
                                            handed=handed)
    record = ab_record.load(redis_server.client(), names, event.id, "p1")
    assert record is not None and record.report is not None and record.base_sha == BASE
    # the comment came from the record the agent handed over, not from a datasink comparison
    assert handed == [record]
    (page,) = (tmp_path / "reports").glob("*.html")
    html = page.read_text()
    assert "interleaved A/B" in html and "ab-set" in html and BASE[:10] in html
    progress = record.progress["ab-set"]
    # pairs other processes disturbed were run and stored, and counted apart
    complete = progress.pairs + progress.disturbed
    assert 2 <= complete <= BUDGET.max_repetitions
    if progress.looks:
        assert progress.looks[-1] == progress.pairs
    assert progress.stopped.startswith(STOPS), progress.stopped
    # every run of both sides was stored, each under its own commit, in base/PR pairs
    base_runs, head_runs = pushed.of(BASE), pushed.of(HEAD)
    assert len(base_runs) == len(head_runs) == complete
    assert {r.context.ab_side for r in base_runs} == {"baseline"}
    assert all(r.ok and r.context.is_history for r in pushed.results)
    assert {r.context.git.pr for r in head_runs} == {7}
    points = [k for k in client.execute_command("TS.QUERYINDEX", f"hash={BASE}", "by=hash")
              if b"/ab-set/" in k]  # a by.hash series is named by its key, not its labels
    assert points, "the base commit's runs are not in the datasink"
    # the comment shows the sequential verdict per test, the pairs and why it stopped
    assert "Interleaved A/B until decided" in body and BASE[:10] in body
    row = [line for line in body.splitlines()  # | test | verdict | pairs | looks | why |
           if line.startswith("| `ab-set` |") and line.count("|") == 6]
    assert len(row) == 1 and f"| {progress.pairs} | " in row[0] and progress.stopped in row[0]
    assert "No interleaved A/B" not in body
    _the_session_folder_holds_what_it_was_judged_with(tmp_path / "results", record)


def _the_session_folder_holds_what_it_was_judged_with(results: Path,
                                                      record: ab_record.ABRecord) -> None:
    """The session's owner wrote beside the agent's runs what it writes for ``rbs run``: the
    noise it judged with and the record of its looks (issue 32), so a report of the folder
    reads the session as the agent ran it."""
    (folder,) = [p for p in results.iterdir() if is_session(p)]
    assert {PRIORS_FILE, HOST_NOISE_FILE, SEQUENTIAL_RECORD} <= {p.name for p in folder.iterdir()}
    found = load_session(folder)
    assert found.record is not None and record.progress["ab-set"].pairs == \
        found.record.pairs["ab-set"]
    assert found.record.stopped["ab-set"] == record.progress["ab-set"].stopped
    judged = ComparisonReport.from_dict(record.report or {})
    assert found.host_noise[judged.options.metric].note == judged.options.floor_note


def test_without_the_base_build_the_comment_says_so_and_one_run_is_made(  # type: ignore[no-untyped-def]
        redis_server, tmp_path: Path, client: redis.Redis) -> None:
    _, pushed, body, _ = _run_agent(redis_server, tmp_path, client, BUDGET, with_base=False)
    assert [r.context.git.hash for r in pushed.results] == [HEAD]  # as without a budget
    assert pushed.results[0].context.ab_side == ""
    assert f"No interleaved A/B on this platform: no build of the base commit `{BASE[:10]}`" \
        in body
    assert "Interleaved A/B until decided" not in body


def test_without_a_budget_a_pr_event_runs_as_before(redis_server, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                    client: redis.Redis) -> None:
    event, pushed, body, names = _run_agent(redis_server, tmp_path, client, None)
    assert [r.context.git.hash for r in pushed.results] == [HEAD]
    assert ab_record.load(redis_server.client(), names, event.id, "p1") is None
    assert "No interleaved A/B" not in body and "Interleaved A/B" not in body


# --------------------------------------------------------------------------- the settings


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "platform.yml"
    path.write_text(text)
    return path


def test_platform_config_reads_a_budget_and_defaults(tmp_path: Path) -> None:
    config = load(_write(tmp_path, "until_decided:\n  max_repetitions: 40\n"
                                   "  time_budget: 30m\n  round_repetitions: 4\n"))
    assert config.until_decided == UntilDecidedBudget(max_repetitions=40, time_budget_s=1800.0,
                                                      round_repetitions=4)
    assert load(_write(tmp_path, "")).until_decided is None
    assert load(_write(tmp_path, "until_decided:\n  time_budget: 90\n")).until_decided == \
        UntilDecidedBudget(time_budget_s=90.0)
    assert load(_write(tmp_path, "until_decided:\n  base_runs: 2\n")).until_decided == \
        UntilDecidedBudget(base_runs=2)
    assert load(_write(tmp_path, "until_decided:\n  stored_base: false\n")).until_decided == \
        UntilDecidedBudget(stored_base=False)


def test_fresh_pairs_ask_the_datasink_for_no_stored_base(redis_server) -> None:  # type: ignore[no-untyped-def]
    """``stored_base: false``: an instruction-count A/B runs both sides, the base's push
    is not looked up (the replay that checks the stored base's verdicts runs this way)."""
    from redis_benchmarks_spec.agent import ab_event
    from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC
    from redis_benchmarks_spec.events.messages import ArtifactRef
    from redis_benchmarks_spec.results.document import GitInfo, RunContext
    from redis_benchmarks_spec.runner.session import SessionConfig

    session = SessionConfig(tools=ToolPaths(), results_dir=Path("/nonexistent"),
                            context=RunContext(platform="p1", git=GitInfo(hash="b" * 40)))
    base = ab_event.BaseBuild("a" * 40, ArtifactRef("redis", "k", "0" * 64, 1),
                              GitInfo(hash="a" * 40))

    def job(budget: UntilDecidedBudget) -> ab_event.PairedRun:
        return ab_event.PairedRun(session, Path("/nonexistent"), base, budget, lambda: False,
                                  datasink=redis_server.client())

    stored = ab_event.find_stored(job(UntilDecidedBudget(metric=INSTRUCTIONS_METRIC)), [])
    assert stored is not None and not stored.runs  # looked up: nothing pushed here yet
    assert ab_event.find_stored(job(UntilDecidedBudget(metric=INSTRUCTIONS_METRIC,
                                                       stored_base=False)), []) is None
    assert ab_event.eta_plan(UntilDecidedBudget(metric=INSTRUCTIONS_METRIC), True) != \
        ab_event.eta_plan(UntilDecidedBudget(metric=INSTRUCTIONS_METRIC), False)


@pytest.mark.parametrize(("text", "named"), [
    ("until_decided:\n  max_repetitions: 1\n", "until_decided.max_repetitions"),
    ("until_decided:\n  max_repetitions: true\n", "until_decided.max_repetitions"),
    ("until_decided:\n  time_budget: soon\n", "until_decided.time_budget"),
    ("until_decided:\n  time_budget: 48h\n", "until_decided.time_budget"),
    ("until_decided:\n  first_round: 50\n", "until_decided.first_round"),
    ("until_decided:\n  spending: linear\n", "until_decided.spending"),
    ("until_decided:\n  metric: 'a b'\n", "until_decided.metric"),
    ("until_decided:\n  alpha: .nan\n", "until_decided.alpha"),
    ("until_decided:\n  base_runs: 0\n", "until_decided.base_runs"),
    ("until_decided:\n  base_runs: 11\n", "until_decided.base_runs"),
    ("until_decided:\n  stored_base: 'no'\n", "until_decided.stored_base"),
    ("until_decided:\n  retries: 3\n", "until_decided: unknown key 'retries'"),
    ("until_decided: 40\n", "until_decided: expected a mapping"),
    ("platforms: [p1]\n", "unknown key 'platforms'"),
    ("until_decided: [\n", "not YAML"),
])
def test_platform_config_refuses_bad_values_naming_the_key(tmp_path: Path, text: str,
                                                          named: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(PlatformConfigError) as caught:
        load(path)
    assert str(caught.value).startswith(f"{path}: ") and named in str(caught.value)


def test_rbs_agent_says_which_setting_is_wrong_in_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "until_decided:\n  round_repetitions: 0\n")
    done = rbs("agent", "--platform", "p1", "--platform-config", str(path), timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    expected = (f"rbs agent: --platform-config {path}: until_decided.round_repetitions: 0 "
                "is not a whole number from 1 to 100")
    assert done.stderr.strip().splitlines() == [expected]


# --------------------------------------------------------------------------- the record


def test_a_garbled_record_is_a_note_never_a_verdict(redis_server) -> None:  # type: ignore[no-untyped-def]
    names, client = StreamNames.with_prefix(f"g{uuid.uuid4().hex[:6]}"), redis_server.client()
    client.set(ab_record.key(names, "e1", "p1"), b'{"report": {"rows": [{"nope": 1}]}}')
    record = ab_record.load(client, names, "e1", "p1")
    assert record is not None and record.report is None and "unreadable" in record.note
    client.set(ab_record.key(names, "e2", "p1"), b"[" * 10_000)
    assert "unreadable" in ab_record.load(client, names, "e2", "p1").note  # type: ignore[union-attr]


def test_a_stop_reason_cannot_break_out_of_the_table() -> None:
    info = PrInfo(org="redis", repo="redis", number=7, head_sha=HEAD)
    report: dict[str, Any] = {"rows": [], "summary": {}, "options": {}, "problems": []}
    section = Section("p1", VARIANT, "completed", report=report,
                      sequential={"t": {"pairs": 3, "looks": [2, 3],
                                        "stopped": "x | injected\n## heading"}})
    body = results_body(info, [section], [])
    (row,) = [line for line in body.splitlines() if line.startswith("| `t` |")]
    assert row.endswith("| x \\| injected ## heading |")


def test_records_of_a_resumed_event_are_merged() -> None:
    def rec(test: str, verdict: str) -> ab_record.ABRecord:
        row = {"test": test, "verdict": verdict}
        return ab_record.ABRecord(BASE, "", {"rows": [row], "summary": {verdict: 1}},
                              {test: ab_record.TestProgress(4, [2, 4], "max repetitions reached")})
    merged = ab_record.merge(rec("a", "NO CHANGE"), rec("b", "REGRESSION"))
    assert [r["test"] for r in merged.report["rows"]] == ["a", "b"]  # type: ignore[index]
    assert merged.report["summary"] == {"NO CHANGE": 1, "REGRESSION": 1}  # type: ignore[index]
    assert set(merged.progress) == {"a", "b"}



def test_a_stop_in_the_middle_of_the_ab_leaves_the_event_pending_then_it_resumes(  # type: ignore[no-untyped-def]
        redis_server, tmp_path: Path, client: redis.Redis) -> None:
    names = StreamNames.with_prefix(f"ab{uuid.uuid4().hex[:6]}")
    suites = tmp_path / "suites"
    write_suite(suites, "s", SUITE.format(name="ab-set", n=2000))
    broker, pushed = redis_server.client(), Pushed(client)
    config = AgentConfig(names=names, platform="p1", consumer="p1-a", suites_dir=suites,
                         work_dir=tmp_path / "work", results_dir=tmp_path / "results",
                         block_ms=200, until_decided=BUDGET,
                         run=SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "results",
                                           test_time=1))
    event = _pr_event(broker, names, with_base=True)
    first = Agent(broker, config, pushed)

    def stop_after_the_first_run() -> None:  # SIGTERM while the A/B is under way
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any((tmp_path / "results").rglob("result.json")):
            time.sleep(0.05)
        first.stop()

    watcher = threading.Thread(target=stop_after_the_first_run, daemon=True)
    watcher.start()
    assert first.run() == 0
    watcher.join(timeout=10)
    assert pushed.results == [] and ab_record.load(broker, names, event.id, "p1") is None
    assert broker.xpending(names.builds, names.platform_group("p1"))["pending"] == 1
    # the same consumer restarted: the A/B runs again from its first pair, and completes
    assert Agent(broker, config, pushed).run(max_events=1) == 1
    record = ab_record.load(broker, names, event.id, "p1")
    assert record is not None and record.report is not None
    done = record.progress["ab-set"]
    assert len(pushed.of(BASE)) == len(pushed.of(HEAD)) == done.pairs + done.disturbed
    assert broker.xpending(names.builds, names.platform_group("p1"))["pending"] == 0
