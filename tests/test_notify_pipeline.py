"""A labelled pull-request delivery through `rbs api` -> `rbs builder` -> two `rbs agent`s
(platforms p1 and p2) as processes, a real datasink, and a local stand-in of GitHub's REST
API: exactly one comment is created, then edited; it names the commits and holds the
verdict table of both platforms."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path

from redis_benchmarks_spec.api.webhook import signature_for
from redis_benchmarks_spec.common.process import free_port, wait_for
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.writer import push_results
from tests.browser import blank, plots_of, render
from tests.cli import RBS, write_suite
from tests.datasink_fixtures import METRICS, datasink_fixture, make_result  # noqa: F401
from tests.github_standin import GitHubStandIn
from tests.pipeline_fixtures import SUITE, git
from tests.test_agent_pipeline import VARIANT, copying_redis_repo

SAMPLE = Path("/work/shared/samples/github/event_webhook_labelled_pr.json")
TOKEN = "ghs_pipeline-token"
SECRET = b"pipeline-secret"


def _payload(head: str, base: str) -> bytes:
    """The recorded labelled-PR delivery, pointed at the local repository's commits."""
    payload = json.loads(SAMPLE.read_text())
    pr = payload["pull_request"]
    pr["head"]["sha"], pr["base"]["sha"] = head, base
    pr["base"]["repo"].update(name="redis", full_name="redis/redis")
    pr["base"]["repo"]["owner"]["login"] = "redis"
    return json.dumps(payload).encode()


def _baseline(sink: EmbeddedDatasink, test: str) -> None:
    """History of the base branch on both platforms (what the PR is compared against)."""
    docs = []
    for platform in ("p1", "p2"):
        for run in range(4):
            doc = make_result(run, test_name=test, branch="unstable", hash="e" * 40,
                              platform=platform, build_variant=VARIANT)
            doc = dataclasses.replace(doc, metrics={METRICS[0]: 50_000.0 + 1000 * run},
                                      run_id=f"{doc.run_id}-{platform}")
            docs.append(doc)
    assert not push_results(sink.client(), docs).failed


def _deliver(port: int, body: bytes) -> int:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/webhook", data=body, method="POST",
        headers={"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": uuid.uuid4().hex,
                 "X-Hub-Signature-256": signature_for(SECRET, body),
                 "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return int(resp.status)


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def test_labelled_pr_gets_one_comment_edited_per_platform(redis_server, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                           datasink: EmbeddedDatasink) -> None:
    prefix = f"n{uuid.uuid4().hex[:6]}"
    test = f"pr-set-{prefix}"
    repo = copying_redis_repo(tmp_path / "redis")
    head, base = git(repo, "log", "--format=%H", "-2").split()
    variants, suites = tmp_path / "variants", tmp_path / "suites"
    variants.mkdir()
    suites.mkdir()
    (variants / "default.yml").write_text("id: '" + VARIANT + "'\nos: debian-bookworm\n"
                                          "arch: amd64\ncompiler: gcc\ncpp_compiler: g++\n")
    write_suite(suites, "s", SUITE.format(name=test, n=2000))
    _baseline(datasink, test)
    api_port = free_port()
    with GitHubStandIn(TOKEN) as gh:
        env = {**os.environ, "RBS_GITHUB_TOKEN": TOKEN, "RBS_GITHUB_API_URL": gh.url,
               "RBS_WEBHOOK_SECRET": SECRET.decode()}
        common = ["--broker", redis_server.url, "--stream-prefix", prefix]
        specs = [("api", ["api", *common, "--port", str(api_port), "--git-remote", str(repo),
                          "--repos", "redis/redis", "--platforms", "p1,p2",
                          "--build-variants", VARIANT]),
                 ("builder", ["builder", *common, "--block-ms", "300", "--consumer", "b1",
                              "--build-variants-dir", str(variants),
                              "--work-dir", str(tmp_path / "b")])]
        specs += [(p, ["agent", *common, "--block-ms", "300", "--platform", p, "--consumer", p,
                       "--suites-dir", str(suites), "--datasink", datasink.url,
                       "--work-dir", str(tmp_path / p), "--results-dir", str(tmp_path / f"r-{p}"),
                       "--grafana-url", "https://grafana.example/d/rbs",
                       "--reports-dir", str(tmp_path / "reports"),
                       "--report-base-url", "https://ci.example/r"]) for p in ("p1", "p2")]
        procs = [subprocess.Popen([RBS, *argv], env=env, stderr=subprocess.STDOUT,
                                  stdout=(tmp_path / f"{name}.log").open("wb"))
                 for name, argv in specs]
        try:
            assert wait_for(lambda: _healthy(api_port), timeout=120)  # a loaded 2-core host
            assert _deliver(api_port, _payload(head, base)) == 201

            def both_platforms_in() -> bool:
                bodies = [c["body"] for c in gh.comments.values()]
                return any("| `p1` |" in b and "| `p2` |" in b and "Still running" not in b
                           for b in bodies)
            finished = wait_for(both_platforms_in, timeout=240, interval=1.0)
            logs = {n: (tmp_path / f"{n}.log").read_text()[-1500:] for n, _ in specs}
            assert finished, (logs, [r.method for r in gh.requests])
            time.sleep(1)  # a late duplicate create would show up here
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
    assert len(gh.calls("POST")) == 1, [r.method for r in gh.requests]
    assert len(gh.calls("PATCH")) >= 1
    assert "benchmarks queued" in gh.calls("POST")[0].body["body"]  # type: ignore[index]
    (body,) = [c["body"] for c in gh.comments.values()]
    assert head[:10] in body and base[:10] in body
    assert ("| Platform | Build variant | Regressions | Improvements | Suspect | Unknown | "
            "Busy | No change |") in body
    assert f"`{test}`" in body and "branch unstable (last 10 points)" in body
    # each platform's HTML report is linked, and renders with its plots in Chromium
    pages = sorted((tmp_path / "reports").iterdir())
    assert len(pages) == 2 and all(f"(https://ci.example/r/{p.name})" in body for p in pages)
    rendered = render(pages[0], tmp_path / "page.png")
    assert rendered.console == [] and not blank(rendered.screenshot)
    found = {kind for kind, _, paths in plots_of(rendered.dom).found if paths > 5}
    assert {"samples", "history"} <= found
