"""Platforms side by side and host noise as context (issue 24, items 2 and 4).

Real components: the embedded datasink (redis-stack-server with RedisTimeSeries), real
`rbs run` sessions on two platform names, the real intrinsic-latency loop and redis-cli,
a real `rbs agent` against a real broker, the HTML page in headless Chromium."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest
import redis

from redis_benchmarks_spec.analysis.host_noise import HostSide, noise_differences, noise_flags
from redis_benchmarks_spec.datasink import platforms as store
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.grafana import dashboard
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.results.platform import (
    IntrinsicLatency,
    Nic,
    PlatformDescription,
    PlatformRecord,
    PlatformRecordError,
)
from redis_benchmarks_spec.telemetry import platform_probe
from tests.browser import blank, plots_of, render
from tests.cli import RBS, rbs, rbs_in_process
from tests.conftest import RedisServer
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    TEST_NAME,
    client_fixture,
    datasink_fixture,
    make_result,
)

SUITE = "redis-benchmark-1Kkeys-generic-exists"
OPS = "ALL_STATS.Totals.Ops/sec"
T0 = 1_700_000_000_000


def _noise(lost_pct: float = 1.0) -> IntrinsicLatency:
    return IntrinsicLatency(seconds=2.0, cpu=1, threshold_us=5.0, iterations=8_000_000,
                            interruptions=900, per_second=450.0, lost_pct=lost_pct,
                            p50_us=25.0, p90_us=60.0, p99_us=150.0, max_us=900.0,
                            redis_cli_max_us=1400.0, redis_cli_avg_us=0.05)


def _record(platform: str, at_ms: int, cpu: str = "Intel(R) Xeon(R) Platinum 8360Y",
            governor: str | None = "performance", lost_pct: float | None = 1.0,
            turbo: str | None = "off") -> PlatformRecord:
    description = PlatformDescription(
        cpu_model=cpu, sockets=2, cores=72, threads=144, numa_nodes=2,
        memory_bytes=512 * 1024**3, kernel="6.1.0-18-amd64", os="Debian GNU/Linux 12",
        arch="x86_64", virtualized=False, governor=governor, turbo=turbo,
        nics=(Nic("ens1f0", 40_000, "i40e", 9000),))
    return PlatformRecord(platform=platform, host=f"{platform}-host1", recorded_ms=at_ms,
                          recorded_by="agent", description=description,
                          noise=None if lost_pct is None else _noise(lost_pct))


# --- the record: measured for real, validated when read back ------------------------------


def test_host_noise_is_measured_by_real_processes_that_are_gone_after() -> None:
    before = set(psutil.Process().children(recursive=True))  # other fixtures' servers
    noise = platform_probe.measure_noise(1.0)
    assert noise.cpu == min(os.sched_getaffinity(0))
    assert noise.iterations > 100_000 and noise.seconds == 1.0
    assert 0 <= noise.lost_pct <= 100
    if noise.interruptions:
        assert noise.p50_us is not None and noise.max_us is not None
        assert noise.threshold_us <= noise.p50_us <= noise.max_us
    # the real redis-cli ran (scripts/setup.sh installs redis-tools)
    assert noise.redis_cli_max_us is not None and noise.redis_cli_avg_us is not None, \
        noise.redis_cli_note
    assert set(psutil.Process().children(recursive=True)) <= before
    described = platform_probe.describe()
    assert described.threads == os.cpu_count() and described.kernel
    # this VM has no cpufreq: not available, never invented
    if not Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").exists():
        assert described.governor is None


@pytest.mark.parametrize("bad, field", [
    ({"platform": "a b"}, "platform"),
    ({"host": "../etc"}, "host"),
    ({"recorded_ms": "yesterday"}, "recorded_ms"),
    ({"recorded_by": "someone"}, "recorded_by"),
    ({"schema": 2}, "schema"),
    ({"extra": 1}, "extra"),
    ({"description": {"cpu_model": "x\x1b[31m"}}, "description.cpu_model"),
    ({"description": {"os": "Debian \u202egnp"}}, "description.os"),
    ({"description": {"kernel": "6.1\x9b2J"}}, "description.kernel"),
    ({"description": {"cores": -1}}, "description.cores"),
    ({"description": {"turbo": "maybe"}}, "description.turbo"),
    ({"description": {"governor": "<img src=x> @team"}}, "description.governor"),
    ({"description": {"nics": [{"name": "eth0", "speed_mbps": True}]}},
     "description.nics[0].speed_mbps"),
    ({"noise": {**_noise().__dict__, "lost_pct": 250.0}}, "noise.lost_pct"),
    ({"noise": {**_noise().__dict__, "max_us": float("nan")}}, "noise.max_us"),
])
def test_a_record_from_another_host_is_checked_field_by_field(bad: dict[str, object],
                                                               field: str) -> None:
    good = json.loads(json.dumps(_record("icelake-2s", T0).to_dict()))
    assert PlatformRecord.from_dict(good) == _record("icelake-2s", T0)
    with pytest.raises(PlatformRecordError, match=re.escape(field)):
        PlatformRecord.from_dict({**good, **bad})


def test_stored_records_keep_history_and_a_bad_one_is_a_problem_not_a_crash(
        client: redis.Redis) -> None:
    assert store.write(client, _record("icelake-2s", T0))
    described = replace(_record("icelake-2s", T0 + 1000, lost_pct=None))
    assert not store.write(client, described)  # same facts, no noise: nothing new
    assert store.write(client, replace(described, description=replace(
        described.description, kernel="6.1.0-20-amd64")))
    assert store.write(client, _record("icelake-2s", T0 + 5000, lost_pct=4.0))
    found = store.history(client, "icelake-2s")
    assert [r.recorded_ms for r in found.records] == [T0, T0 + 1000, T0 + 5000]
    assert store.noise_at(client, "icelake-2s", T0 + 2000).records[0].recorded_ms == T0
    assert store.noise_at(client, "icelake-2s", T0 - 1).records[0].recorded_ms == T0
    evil = {**_record("evil", T0).to_dict(), "host": "x;rm"}
    client.set(store.record_key("evil"), json.dumps(evil))
    bad = store.latest(client, "evil")
    assert bad.records == [] and "host" in bad.problems[0] and "evil" in bad.problems[0]
    client.set(store.record_key("deep"), "[" * 10_000)
    assert store.latest(client, "deep").problems


# --- the changed-noise rule ----------------------------------------------------------------


@pytest.mark.parametrize("before, after, flagged", [
    (_record("p", T0), _record("p", T0 + 1), False),
    (_record("p", T0, lost_pct=1.0), _record("p", T0 + 1, lost_pct=1.9), False),  # VM spread
    (_record("p", T0, lost_pct=0.01), _record("p", T0 + 1, lost_pct=0.1), False),  # < 0.5 pp
    (_record("p", T0, lost_pct=1.0), _record("p", T0 + 1, lost_pct=4.0), True),
    (_record("p", T0, governor="performance"), _record("p", T0 + 1, governor="powersave"),
     True),
    (_record("p", T0, turbo="off"), _record("p", T0 + 1, turbo="on"), True),
    (_record("p", T0, governor=None, turbo=None), _record("p", T0 + 1, turbo="on"), False),
])
def test_noise_changed_rule(before: PlatformRecord, after: PlatformRecord,
                            flagged: bool) -> None:
    assert bool(noise_differences(before, after)) is flagged
    flags = noise_flags([HostSide("baseline", "p", before, before),
                         HostSide("comparison", "p", after, after)])
    assert bool(flags) is flagged
    if flagged:
        assert "host noise changed on p" in flags[0]


# --- platforms side by side from the datasink ----------------------------------------------


def _push(client: redis.Redis, platform: str, values: list[float], version: str,
          start: int, branch: str = "") -> None:
    docs = []
    for i, value in enumerate(values):
        doc = make_result(start + i, platform=platform, version=version, branch=branch,
                          hash="")
        doc = dataclasses.replace(doc, metrics={OPS: value})
        docs.append(doc)
    report = push_results(client, docs)
    assert len(report.pushed) == len(values), report


def _compare_json(datasink: EmbeddedDatasink, tmp_path: Path, *argv: str) -> dict[str, object]:
    out = tmp_path / "compare.json"
    assert rbs_in_process(["compare", "--datasink", datasink.url, *argv, "--format", "json",
                           "--output", str(out)]) == 0
    return json.loads(out.read_text())


def test_one_build_on_two_platforms_gets_the_unpaired_interval(
        client: redis.Redis, datasink: EmbeddedDatasink, tmp_path: Path) -> None:
    _push(client, "cascadelake-2s", [80_000, 81_500, 79_200, 80_800, 79_900, 80_300],
          "7.2.4", 0)
    _push(client, "icelake-2s", [100_100, 99_000, 101_200, 100_500, 99_700, 100_900],
          "7.2.4", 10)
    store.write(client, _record("cascadelake-2s", T0, cpu="Intel(R) Xeon(R) Gold 6230"))
    store.write(client, _record("icelake-2s", T0))
    report = _compare_json(datasink, tmp_path, "--baseline-platform", "cascadelake-2s",
                           "--comparison-platform", "icelake-2s", "--baseline-version",
                           "7.2.4")
    (row,) = report["rows"]
    assert row["verdict"] == "IMPROVEMENT" and not row["paired"]
    assert row["n_baseline"] == row["n_comparison"] == 6
    assert 20 < row["ci_low_pct"] < row["change_pct"] < row["ci_high_pct"] < 30
    context = report["context"]
    assert context["across_platforms"] and context["noise_flags"] == []
    assert [h["platform"] for h in context["hosts"]] == ["cascadelake-2s", "icelake-2s"]
    assert context["hosts"][0]["description"]["description"]["cpu_model"] == \
        "Intel(R) Xeon(R) Gold 6230"
    # the same build on one platform is not a platform comparison: no caveat
    same = _compare_json(datasink, tmp_path, "--platform", "icelake-2s",
                         "--baseline-version", "7.2.4", "--comparison-version", "7.2.4")
    assert not same["context"]["across_platforms"]


def test_a_host_whose_noise_changed_between_builds_is_flagged(
        client: redis.Redis, datasink: EmbeddedDatasink, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    base = [100_000 + 300 * i for i in range(5)]
    _push(client, "icelake-2s", base, "7.2.4", 0)  # start times T0 .. T0 + 4 min
    _push(client, "icelake-2s", base, "7.2.5", 100)  # T0 + 100 min ..
    argv = ["--platform", "icelake-2s", "--baseline-version", "7.2.4",
            "--comparison-version", "7.2.5"]
    store.write(client, _record("icelake-2s", T0 - 1000))
    store.write(client, _record("icelake-2s", T0 + 50 * 60_000, lost_pct=1.3))
    quiet = tmp_path / "quiet.html"
    assert _compare_json(datasink, tmp_path, *argv, "--html", str(quiet))["context"][
        "noise_flags"] == []
    assert 'id="platforms"' in quiet.read_text() and "noise-flag" not in quiet.read_text()
    store.write(client, _record("icelake-2s", T0 + 60 * 60_000, governor="powersave",
                                lost_pct=6.0))
    flags = _compare_json(datasink, tmp_path, *argv)["context"]["noise_flags"]
    assert len(flags) == 1 and "governor performance -> powersave" in flags[0] \
        and "1.00 % -> 6.00 %" in flags[0]
    capsys.readouterr()
    page = tmp_path / "flagged.html"
    assert rbs_in_process(["compare", "--datasink", datasink.url, *argv, "--format", "markdown",
                           "--html", str(page)]) == 0
    assert re.search(r'class="noise-flag">.*governor performance -&gt; powersave',
                     page.read_text())
    markdown = capsys.readouterr().out
    assert "flag: host noise changed on icelake-2s" in markdown and "**Platforms**" in markdown


def test_grafana_side_by_side_panels_return_both_platforms(client: redis.Redis) -> None:
    _push(client, "cascadelake-2s", [80_000, 81_000], "7.2.4", 0)
    _push(client, "icelake-2s", [100_000, 99_000], "7.2.4", 10)
    values = {"version": "7.2.4", "test": TEST_NAME, "platform": "cascadelake-2s",
              "platform_b": "icelake-2s", "topology": "oss-standalone", "env": "ci",
              "org": "redis", "repo": "redis", "branch": "unstable",
              "build_variant": "gcc:12.2.0-amd64-debian-bookworm-default"}
    panels = [p for p in dashboard()["panels"]
              if p["type"] != "row" and "$platform_b" in p["title"] and "$version" in p["title"]]
    assert panels
    for panel in panels:
        target = panel["targets"][0]
        text = target["filter"]
        for name in sorted(values, key=len, reverse=True):
            text = text.replace(f"${name}", values[name])
        if "Ops/sec" not in panel["title"]:
            continue  # latency panels read the same labels; the pushed docs hold ops only
        reply = client.execute_command("TS.MRANGE", "-", "+", "WITHLABELS", "FILTER",
                                       *text.split())
        # RESP2: [key, labels, points] per series; RESP3: {key: [labels, ..., points]}
        labels = [v[0] for v in reply.values()] if isinstance(reply, dict) else \
            [e[1] for e in reply]
        pairs = [lab.items() if isinstance(lab, dict) else lab for lab in labels]
        seen = {{k.decode(): v.decode() for k, v in p}["platform"] for p in pairs}
        assert seen == {"cascadelake-2s", "icelake-2s"} and target["legend"] == "platform"


def test_grafana_draws_both_platforms_noise_over_time(client: redis.Redis) -> None:
    for platform in ("cascadelake-2s", "icelake-2s"):
        store.write(client, _record(platform, T0, lost_pct=1.0))
        store.write(client, _record(platform, T0 + 60_000, lost_pct=2.5))
    store.write(client, _record("icelake-2s", T0 + 90_000, lost_pct=None, cpu="new"))
    panels = [p for p in dashboard()["panels"] if p["title"].startswith("Host noise")]
    assert len(panels) == 2
    for panel in panels:
        text = panel["targets"][0]["filter"].replace("$platform_b", "icelake-2s") \
            .replace("$platform", "cascadelake-2s")
        reply = client.execute_command("TS.MRANGE", "-", "+", "FILTER", *text.split())
        series = {(k.decode() if isinstance(k, bytes) else k): v[-1] for k, v in
                  reply.items()} if isinstance(reply, dict) else \
            {(e[0].decode() if isinstance(e[0], bytes) else e[0]): e[2] for e in reply}
        assert len(series) == 2 and all(len(points) == 2 for points in series.values())
    lost = client.execute_command("TS.RANGE", store.noise_series_key("icelake-2s", "lost_pct"),
                                  "-", "+")
    assert [float(v) for _, v in lost] == [1.0, 2.5]


# --- real runs on two platform names, the HTML page, a real agent ---------------------------


def _run_on(datasink: EmbeddedDatasink, out: Path, platform: str) -> None:
    run = rbs("run", "--test", SUITE, "--test-time", "1", "--repetitions", "4",
              "--results-dir", str(out), "--datasink", datasink.url, "--triggering-env", "ci",
              "--platform", platform, "--version-tag", "7.0.15")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


def test_real_runs_on_two_platforms_compared_with_their_hosts_in_html(
        client: redis.Redis, datasink: EmbeddedDatasink, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """~25 s (55 s beside other benchmarks): two real sessions of 4 runs each (4 + 4 is the
    smallest sample with a bounded Mann-Whitney interval), each `rbs run` storing its
    host's description."""
    for platform in ("plat-a", "plat-b"):
        _run_on(datasink, tmp_path / platform, platform)
        assert store.latest(client, platform).records[0].recorded_by == "rbs run"
    assert rbs_in_process(["platform", "record", "--platform", "plat-b", "--noise-seconds", "1",
                           "--datasink", datasink.url, "--format", "json"]) == 0
    page = tmp_path / "html" / "platforms.html"
    capsys.readouterr()
    assert rbs_in_process(["compare", "--datasink", datasink.url, "--baseline-platform", "plat-a",
                           "--comparison-platform", "plat-b", "--baseline-version", "7.0.15",
                           "--html", str(page)]) == 0
    table = capsys.readouterr().out
    assert "not a paired A/B" in table and "intrinsic latency" in table
    assert "not available" in table  # plat-a has no noise measurement yet
    rendered = render(page, page.with_suffix(".png"))
    assert rendered.console == [] and not blank(rendered.screenshot)
    assert plots_of(rendered.dom).external == []
    assert any(kind == "samples" for kind, _, _ in plots_of(rendered.dom).found)
    dom = rendered.dom
    assert 'id="platforms"' in dom and "not a paired A/B" in dom
    cpu = platform_probe.describe().cpu_model or "not available"
    assert dom.count(cpu) >= 2 and "interruptions/s" in dom
    row = re.search(r'<table id="verdicts">.*?</table>', dom, re.DOTALL)
    assert row and re.search(r"\[[-+]\d+\.\d+%, [-+]\d+\.\d+%\]", row.group(0)), \
        "a bounded interval"
    # the same runs as two result folders: the engine's unpaired comparison, named as such
    folders = _compare_json(datasink, tmp_path, "--baseline-dir", str(tmp_path / "plat-a"),
                            "--comparison-dir", str(tmp_path / "plat-b"))
    assert folders["context"]["across_platforms"] and not folders["rows"][0]["paired"]
    assert folders["context"]["baseline"]["platform"] == "plat-a"


def test_an_agent_records_its_platform_and_noise_at_startup(
        client: redis.Redis, datasink: EmbeddedDatasink, redis_server: RedisServer,
        tmp_path: Path) -> None:
    env = {**os.environ, "RBS_NOISE_SECONDS": "1", "RBS_ARTIFACT_KEY": "k" * 64}
    last_cpu = max(os.sched_getaffinity(0))  # measured where its first server would run
    log = tmp_path / "agent.log"
    proc = subprocess.Popen(
        [RBS, "agent", "--broker", redis_server.url, "--stream-prefix", "plat",
         "--platform", "agent-plat", "--datasink", datasink.url, "--block-ms", "200",
         "--cpus", str(last_cpu),
         "--work-dir", str(tmp_path / "w"), "--results-dir", str(tmp_path / "r")],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 60
        while not store.latest(client, "agent-plat").records and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()[-2000:]
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    (record,) = store.latest(client, "agent-plat").records
    assert record.recorded_by == "agent" and record.noise is not None
    assert record.noise.seconds == 1.0 and record.noise.iterations > 0
    assert record.noise.cpu == last_cpu
    assert record.host == platform_probe.host_name()


def test_bad_noise_flags_are_one_line(capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch,
                                      datasink: EmbeddedDatasink) -> None:
    monkeypatch.setenv("RBS_NOISE_SECONDS", "1")
    for argv, what in ((["--noise-seconds", "-1"], "--noise-seconds -1"),
                       (["--noise-cpu", "4096"], "--noise-cpu 4096"),
                       (["--platform", "a b"], "--platform 'a b'")):
        full = ["platform", "record", "--platform", "p", "--datasink", datasink.url, *argv]
        assert rbs_in_process(full) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and what in err[0] and "Traceback" not in err[0], err
    monkeypatch.setenv("RBS_NOISE_SECONDS", "soon")
    assert rbs_in_process(["platform", "record", "--platform", "p",
                           "--datasink", datasink.url]) == 2
    assert "$RBS_NOISE_SECONDS 'soon'" in capsys.readouterr().err


def test_platform_show_reads_back_the_history_with_changes_marked(
        client: redis.Redis, datasink: EmbeddedDatasink, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    store.write(client, _record("icelake-2s", T0))
    store.write(client, _record("icelake-2s", T0 + 1000, lost_pct=1.2))
    store.write(client, _record("icelake-2s", T0 + 2000, turbo="on", lost_pct=1.1))
    capsys.readouterr()
    assert rbs_in_process(["platform", "show", "icelake-2s", "--datasink", datasink.url,
                           "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["record"]["recorded_ms"] == T0 + 2000
    assert [h["changed_from_previous"] for h in shown["noise_history"]] == \
        [[], [], ["turbo off -> on"]]
    assert rbs_in_process(["platform", "show", "icelake-2s", "--datasink", datasink.url]) == 0
    table = capsys.readouterr().out
    assert "turbo off -> on" in table and "Xeon(R) Platinum 8360Y" in table
    assert rbs_in_process(["platform", "show", "nowhere", "--datasink", datasink.url]) == 2
    assert "no valid record of nowhere" in capsys.readouterr().err


def test_the_pull_request_comparison_flags_a_host_whose_noise_changed(
        client: redis.Redis) -> None:
    from redis_benchmarks_spec.analysis.report import to_markdown
    from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent, event_id_for
    from redis_benchmarks_spec.notify.pr_compare import PrCompareOptions, compare_platform
    head = "c" * 40
    docs = []
    for run in range(5):  # the base branch at T0.., the head commit 100 minutes later
        doc = make_result(run, branch="unstable", hash="a" * 40, platform="icelake-2s")
        doc = dataclasses.replace(doc, metrics={OPS: 100_000.0 + 300 * run})
        docs.append(doc)
        doc = make_result(run + 100, branch="feature", hash=head, platform="icelake-2s")
        doc = dataclasses.replace(doc, metrics={OPS: 100_000.0 + 300 * run})
        docs.append(doc)
    assert not push_results(client, docs).failed
    event = BuildEvent(
        id=event_id_for("r1", docs[0].context.build_variant), request_id="r1", org="redis",
        repo="redis", branch="feature", sha=head, commit_time_ms=T0,
        build_variant=docs[0].context.build_variant, artifact=ArtifactRef("redis", "k",
                                                                          "0" * 64, 1),
        redis_version="7.2.4", pr=9, platforms=["icelake-2s"], built_at_ms=T0)
    store.write(client, _record("icelake-2s", T0 - 1000))

    def flags() -> list[str]:
        report = compare_platform(client, event, "icelake-2s", None, PrCompareOptions()).report
        assert report.context is not None
        return report.context.noise_flags

    assert flags() == []
    store.write(client, _record("icelake-2s", T0 + 50 * 60_000, turbo="on"))
    assert flags() and "turbo off -> on" in flags()[0]
    report = compare_platform(client, event, "icelake-2s", None, PrCompareOptions()).report
    assert "flag: host noise changed on icelake-2s" in to_markdown(report)


def test_a_platform_pair_across_the_builds_of_a_branch(
        client: redis.Redis, datasink: EmbeddedDatasink, tmp_path: Path) -> None:
    # a step on one platform's branch history must not cut one side only
    steps = [1.0 + i / 1000 for i in range(10)] + [0.75 + i / 1000 for i in range(10)]
    _push(client, "cascadelake-2s", [80_000 * f for f in steps], "", 0, "unstable")
    _push(client, "icelake-2s", [100_000 * f for f in steps], "", 100, "unstable")
    argv = ["--baseline-branch", "unstable"]
    one = _compare_json(datasink, tmp_path, "--platform", "icelake-2s", *argv,
                        "--comparison-branch", "unstable")
    assert one["rows"][0]["n_baseline"] < 20  # one platform: cut at its change point
    pair = _compare_json(datasink, tmp_path, "--baseline-platform", "cascadelake-2s",
                         "--comparison-platform", "icelake-2s", *argv)
    (row,) = pair["rows"]
    assert row["n_baseline"] == row["n_comparison"] == 20
    assert 20 < row["ci_low_pct"] < row["change_pct"] < row["ci_high_pct"] < 30
