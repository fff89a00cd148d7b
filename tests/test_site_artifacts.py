"""A run's page shows its flame graph from the agents' folder (`rbs site --artifacts-dir`,
which `rbs lab up` gives), and serves nothing else a document names: no file outside the
folder, none through a link out of it, no file that is not an SVG; the SVG under a
sandboxing Content-Security-Policy. A real flame graph (inferno) in a real datasink, read
through a real `rbs site` process."""

from __future__ import annotations

import dataclasses
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.telemetry.profilers import folded
from tests.cli import rbs
from tests.datasink_fixtures import make_result, start_datasink
from tests.site_fixtures import get, start_site, stop

FOLDED = "redis-server;main;aeMain;processCommand;getCommand 90\nredis-server;main;aeMain 10\n"


def _fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


@pytest.fixture(scope="module", name="lab")
def lab_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """(lab folder, datasink URL, run id) of a run whose document names its flame graph
    and four paths the site must not serve."""
    folder = tmp_path_factory.mktemp("artifacts")
    lab, elsewhere = folder / "lab", folder / "elsewhere"
    (lab / "results-a").mkdir(parents=True)
    elsewhere.mkdir()
    (lab / "results-a" / "perf.folded").write_text(FOLDED)
    svg = lab / "results-a" / "flamegraph.svg"
    folded.flamegraph(lab / "results-a" / "perf.folded", svg, "get (perf record)")
    secret = elsewhere / "secret.svg"
    secret.write_text("<svg xmlns='http://www.w3.org/2000/svg'>secret</svg>")
    (lab / "link.svg").symlink_to(secret)
    (lab / "results-a" / "notes.txt").write_text("not a picture")
    sink: EmbeddedDatasink = start_datasink(folder / "datasink")
    doc = dataclasses.replace(make_result(1, hash="f" * 40), paths={
        "flamegraph_svg": str(svg), "outside_svg": str(secret), "link_svg": str(lab / "link.svg"),
        "notes": str(lab / "results-a" / "notes.txt"), "up_svg": f"{lab}/../elsewhere/secret.svg"})
    try:
        with sink.client() as client:
            assert not push_results(client, [doc]).failed
        yield lab, sink.url, doc.run_id
    finally:
        sink.down()


def test_a_runs_page_shows_its_flame_graph_from_the_artifacts_folder(
        lab: tuple[Path, str, str], tmp_path: Path) -> None:
    folder, url, run_id = lab
    proc, base = start_site(url, tmp_path / "site.log", "--workers", "0",
                            "--artifacts-dir", str(folder))
    try:
        status, page = get(base, f"/run/{quote(run_id, safe='')}")
        assert status == 200, page
        picture = f"/artifact/flamegraph_svg/{quote(run_id)}"
        assert f'<img src="{picture}"' in page, page
        for refused in ("outside_svg", "link_svg", "notes", "up_svg"):
            assert f"/artifact/{refused}/" not in page
        status, headers, body = _fetch(base + picture)
        assert status == 200
        assert body == (folder / "results-a" / "flamegraph.svg").read_bytes()
        assert b"getCommand" in body and body.lstrip().startswith((b"<?xml", b"<svg"))
        assert headers["Content-Type"] == "image/svg+xml"
        assert headers["Content-Security-Policy"].startswith("sandbox allow-scripts;")
        assert headers["X-Content-Type-Options"] == "nosniff"
        for refused in ("outside_svg", "link_svg", "notes", "up_svg", "missing_svg", "..",
                        "a%2F..%2Fb"):
            status, _, body = _fetch(base + f"/artifact/{refused}/{quote(run_id)}")
            assert status == 404, (refused, status)
            assert b"secret" not in body
        status, _, _ = _fetch(base + f"/artifact/flamegraph_svg/{quote('no-such:run')}")
        assert status == 404
    finally:
        stop(proc)


def test_without_an_artifacts_folder_the_site_serves_no_file(
        lab: tuple[Path, str, str], tmp_path: Path) -> None:
    _, url, run_id = lab
    proc, base = start_site(url, tmp_path / "site.log", "--workers", "0")
    try:
        status, page = get(base, f"/run/{quote(run_id, safe='')}")
        assert status == 200 and "<img" not in page
        assert "flamegraph_svg" in page  # still named, as a path on the agent
        status, _, _ = _fetch(base + f"/artifact/flamegraph_svg/{quote(run_id)}")
        assert status == 404
    finally:
        stop(proc)


def test_a_missing_artifacts_folder_is_one_line(lab: tuple[Path, str, str],
                                                tmp_path: Path) -> None:
    _, url, _ = lab
    done = rbs("site", "--port", "1", "--datasink", url, "--artifacts-dir",
               str(tmp_path / "nope"), timeout=60)
    assert done.returncode == 2, done.stderr
    assert "--artifacts-dir" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr

