"""The lab's site: a read-only Flask application over the datasink, served by waitress
(:mod:`.serve`). Routes are thin: each reads through a page module (:mod:`.branch_page`,
:mod:`.history_page`, :mod:`.compare_page`) and renders a template of :mod:`.templates`.

Nothing here writes to the datasink. Every URL parameter is checked where it enters (names
match ``[A-Za-z0-9._:-]``, shas are hex, counts are bounded) and every value shown is
escaped by the templates.
"""

from __future__ import annotations

import gc
import hmac
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis
from flask import Flask, Response, abort, redirect, request
from jinja2 import DictLoader

from redis_benchmarks_spec.analysis.compare import DEFAULT_METRIC, CompareOptions
from redis_benchmarks_spec.analysis.engine import judge_samples
from redis_benchmarks_spec.analysis.history import HistoryError, HistoryQuery, when_utc
from redis_benchmarks_spec.analysis.lab_table_report import table_html
from redis_benchmarks_spec.datasink import alert_triage, keys, reader, run_reader, watch_store
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.inputs.reports import read_lab_table
from redis_benchmarks_spec.pullrequest import state as pr_state
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.profile import INSTRUMENTED_NOTE, under_profiler
from redis_benchmarks_spec.web import (
    artifacts,
    branch_page,
    charts,
    compare_page,
    history_page,
    pulls_page,
)
from redis_benchmarks_spec.web.page_workers import PageWorkers
from redis_benchmarks_spec.web.rows import pct, plain4
from redis_benchmarks_spec.web.templates import PAGES

_NAME = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
_BRANCH = re.compile(r"^[A-Za-z0-9._/-]{1,200}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
MAX_HISTORY_POINTS = 500
GC_THRESHOLD = 100_000  # allocations between collections of the youngest generation


@dataclass(frozen=True)
class SiteConfig:
    """Where the site reads: a client factory for the datasink, and the URL shown; the
    broker (where the pull requests' comments are kept) when one is given."""

    datasink: Callable[[], redis.Redis]
    display_url: str = ""
    broker: Callable[[], redis.Redis] | None = None
    names: StreamNames = field(default_factory=StreamNames)
    # maintainers who hold it may triage alerts from the branch page (the one write)
    triage_token: bytes | None = field(default=None, repr=False)
    # processes the pages of every platform are drawn in, a platform each (0: none, the
    # pages are drawn in the site's process; web/page_workers.py)
    workers: int = 0
    # folders whose SVG artifacts (flame graphs) a run's page may show (web/artifacts.py)
    artifact_roots: tuple[Path, ...] = ()


def _name(value: str | None, what: str, pattern: re.Pattern[str] = _NAME) -> str | None:
    if value in (None, ""):
        return None
    if not pattern.match(value):
        abort(400, f"{what}: {value[:80]!r} is not a name this site accepts")
    return value


@dataclass(frozen=True)
class _Site:
    """What every route uses: the app, the datasink client, the config, the renderer."""

    app: Flask
    client: redis.Redis
    config: SiteConfig
    workers: PageWorkers | None = None

    def render(self, page: str, title: str, **values: Any) -> str:
        return self.app.jinja_env.get_template(page).render(title=title, **values)


def create_app(config: SiteConfig) -> Flask:
    """The site's WSGI application."""
    app = Flask(__name__)
    app.jinja_loader = DictLoader(PAGES)
    app.jinja_env.autoescape = True
    app.jinja_env.globals.update(when=when_utc, pct=pct, plain=plain4)
    _warm()
    # forked after the warming, so the workers inherit it (web/page_workers.py)
    workers = PageWorkers(config.datasink, config.workers) if config.workers else None
    app.extensions[WORKERS_EXTENSION] = workers
    site = _Site(app, config.datasink(), config, workers)
    for routes in (_index_routes, _branch_routes, _other_routes):
        routes(site)
    _pull_routes(app, config, site.render)
    return app


WORKERS_EXTENSION = "rbs_page_workers"


def page_workers(app: Flask) -> PageWorkers | None:
    """The site's page workers (:attr:`SiteConfig.workers`), for whoever serves it to close
    when serving ends."""
    return app.extensions.get(WORKERS_EXTENSION)


def _warm() -> None:
    """What a first page would otherwise pay, paid once at start: scipy's import (a small
    comparison judged) and matplotlib's first figure;
    then every object made so far is left out of the garbage collector's scans (a page
    allocates tens of thousands of objects: each collection walked the whole heap of
    imported modules, ~20 % of a comparison of 2,204 tests)."""
    options = CompareOptions(noise_floor_pct=1.0, alpha=0.05, metric=DEFAULT_METRIC)
    judge_samples({"a": ([1.0, 1.1, 1.2], [1.0, 1.1, 1.3]), "b": ([1.0] * 5, [1.1] * 5)},
                  options)
    charts.warm()
    gc.freeze()
    # a page makes tens of thousands of objects that live until it is sent (a comparison's
    # replies, 22,000 points): at the default 700 a generation-0 collection ran every few
    # hundred of them and moved them on to full collections, each walking all of them again
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])


def _index_routes(site: _Site) -> None:
    """Errors and ``/``."""
    app, client, config, render = site.app, site.client, site.config, site.render

    @app.errorhandler(400)
    @app.errorhandler(403)
    @app.errorhandler(404)
    def _error(exc: Any) -> tuple[str, int]:
        return render("error", f"{exc.code} {exc.name}", message=exc.description), exc.code

    @app.get("/")
    def index() -> str:
        scopes = []
        for scope in reader.scopes(client):
            alerts = []
            branches = reader.list_branches(client, scope)
            for branch in branches:
                where = watch_store.Branch(scope.github_org, scope.github_repo, branch)
                alerts += [{**x, "branch": branch} for x in watch_store.log_lines(client, where)
                           if x["kind"] == "alert"]
            scopes.append({"scope": scope, "base": f"/{scope.path}", "branches": branches,
                           "platforms": reader.list_platforms(client, scope),
                           "tests": reader.list_tests(client, scope), "alerts": alerts})
        return render("index", "The lab", scopes=scopes, url=config.display_url)


def _branch_routes(site: _Site) -> None:
    """A branch (and its triage) and a test's history on it."""
    app, client, config, render = site.app, site.client, site.config, site.render
    workers = site.workers

    @app.get("/<env>/<org>/<repo>/branch/<path:branch>")
    def branch(env: str, org: str, repo: str, branch: str) -> str:
        scope = _scope(env, org, repo)
        _name(branch, "branch", _BRANCH)
        platform = _name(request.args.get("platform"), "platform")
        view = branch_page.branch_view(client, scope, branch, platform)
        return render("branch", f"{branch} on {platform or 'every platform'} ({scope.path})",
                      v=view, can_triage=config.triage_token is not None,
                      base=f"/{scope.path}/branch/{branch}", states=alert_triage.STATES)

    @app.post("/<env>/<org>/<repo>/branch/<path:branch>/triage")
    def triage(env: str, org: str, repo: str, branch: str) -> Any:
        scope = _scope(env, org, repo)
        _name(branch, "branch", _BRANCH)
        form = request.form
        token = form.get("token", "").encode()
        if config.triage_token is None or not hmac.compare_digest(token, config.triage_token):
            abort(403, "triage needs the site's token")
        try:
            said = alert_triage.Triage(form.get("state", ""), form.get("by", ""),
                                       int(time.time() * 1000), "site",
                                       form.get("fixed_by", "").strip())
            alert_triage.set_triage(client, watch_store.Branch(org, repo, branch),
                                    form.get("sha", ""), said)
        except ValueError as exc:
            abort(400, str(exc))
        return redirect(f"/{scope.path}/branch/{branch}#alert-{form.get('sha', '')}", 303)

    @app.get("/<env>/<org>/<repo>/test/<test>")
    def history(env: str, org: str, repo: str, test: str) -> str:
        scope = _scope(env, org, repo)
        _name(test, "test")
        metric = request.args.get("metric") or DEFAULT_METRIC
        if not re.match(r"^[A-Za-z0-9._:/%-]{1,200}$", metric):
            abort(400, "metric: not a metric name")
        branch = _name(request.args.get("branch"), "branch", _BRANCH) or "unstable"
        query = HistoryQuery(test=test, metric=metric, branch=branch,
                             platform=_name(request.args.get("platform"), "platform"),
                             last_n=MAX_HISTORY_POINTS)
        try:
            views = workers.history_views(client, scope, query) \
                if workers is not None and query.platform is None else \
                history_page.history_views(client, scope, query)
        except HistoryError as exc:
            abort(404, str(exc))
        return render("history", f"{test} on {branch}", views=views, metric=metric,
                      branch=branch, metrics=reader.list_metrics(client, scope))


def _other_routes(site: _Site) -> None:
    """The lab table, a comparison and a run."""
    app, client, render, workers = site.app, site.client, site.render, site.workers

    @app.get("/<env>/<org>/<repo>/lab-table/<path:branch>")
    def lab_table(env: str, org: str, repo: str, branch: str) -> str:
        _scope(env, org, repo)
        _name(branch, "branch", _BRANCH)
        shas = [request.args.get(k) or None for k in ("commit", "against")]
        if any(sha is not None and not _SHA.match(sha) for sha in shas):
            abort(400, "commit and against are 40-hex commits")
        table = read_lab_table(client, (org, repo, branch), shas[0], shas[1])
        if table is None:
            abort(404, f"the lab profiled no suite of {shas[0] or branch} with the "
                       "instructions profiler")
        return render("lab_table", f"Where Redis spends its instructions ({branch})",
                      html=table_html(table))

    @app.get("/compare")
    def compare() -> str:
        args = request.args
        try:
            req = compare_page.CompareRequest(
                a=args.get("a", ""), b=args.get("b", ""),
                metric=args.get("metric") or DEFAULT_METRIC,
                platform=args.get("platform") or None, group=args.get("group") or None,
                command=args.get("command") or None)
        except compare_page.CompareRequestError as exc:
            abort(400, str(exc))
        found = workers.compare(client, req) if workers is not None and req.platform is None \
            else compare_page.compare(client, req)
        groups, commands = _tested(client)
        return render("compare", f"{req.a[:10]} vs {req.b[:10]}", req=req, platforms=found,
                      groups=groups, commands=commands)

    @app.get("/run/<path:run_id>")
    def run(run_id: str) -> str:
        doc = _run_document(client, run_id)
        ctx = doc.context
        facts = [("test", doc.test_name), ("status", doc.status), ("commit", ctx.git.hash),
                 ("branch", ctx.git.branch), ("platform", ctx.platform),
                 ("topology", ctx.topology), ("build variant", ctx.build_variant),
                 ("started (UTC)", when_utc(doc.start_ms)), ("flags", ", ".join(doc.flags)),
                 ("notes", "; ".join(doc.notes))]
        # a timed figure of an instrumented run is shown as what it is, never as speed
        metrics = [(name, value, under_profiler(doc.flags, name))
                   for name, value in sorted(doc.metrics.items())]
        return render("run", f"run {run_id}", doc=doc, facts=facts, run_id=run_id,
                      metrics=metrics, instrumented_note=INSTRUMENTED_NOTE,
                      pictures=artifacts.pictures(doc.paths, site.config.artifact_roots))

    @app.get("/artifact/<key>/<path:run_id>")
    def artifact(key: str, run_id: str) -> Response:
        """A run's SVG artifact (its flame graph), when it is under an artifacts folder."""
        path = artifacts.servable(_run_document(client, run_id).paths, key,
                                  site.config.artifact_roots)
        if path is None:
            abort(404, f"run {run_id} has no {key[:100]!r} this site serves "
                       "(an SVG under its --artifacts-dir)")
        return Response(path.read_bytes(), headers=artifacts.HEADERS)



def _run_document(client: redis.Redis, run_id: str) -> RunResult:
    """The result document of ``run_id`` (a bounded id), else the request ends 400 or 404."""
    if len(run_id) > 300:
        abort(400, "run id too long")
    try:
        return run_reader.result_document(client, run_id)
    except run_reader.RunNotFoundError:
        abort(404, f"no run {run_id}")


def _pull_routes(app: Flask, config: SiteConfig, render: Callable[..., str]) -> None:
    """``/pulls`` and each pull request's comment (from the broker, when one is given)."""
    broker = config.broker() if config.broker is not None else None

    @app.get("/pulls")
    def pulls() -> str:
        found = pr_state.posted_comments(broker, config.names) if broker is not None else []
        return render("pulls", "Pull requests", comments=found, broker=broker is not None)

    @app.get("/pulls/<org>/<repo>/<int:number>/<sha>")
    def pull(org: str, repo: str, number: int, sha: str) -> str:
        for value, what in ((org, "org"), (repo, "repo"), (sha, "sha")):
            _name(value, what)
        if broker is None:
            abort(404, "this site was started without --broker: no comments to show")
        comment_id = f"{org}/{repo}#{number}@{sha}"
        found = pr_state.load_comment(broker, config.names, comment_id)
        if found is None:
            abort(404, f"no comment of {comment_id}")
        return render("pull", f"{org}/{repo}#{number} at {sha[:10]}", c=found,
                      html=pulls_page.comment_html(found.body))


def _scope(env: str, org: str, repo: str) -> keys.Scope:
    for value, what in ((env, "triggering env"), (org, "org"), (repo, "repo")):
        _name(value, what)
    return keys.Scope(env, org, repo)


def _tested(client: redis.Redis) -> tuple[list[str], list[str]]:
    """Every tested group and command known (the scopes' ``tested`` indexes)."""
    groups: set[str] = set()
    commands: set[str] = set()
    for scope in reader.scopes(client):
        for value in client.hvals(keys.index_keys(scope).tested):
            items = keys.parse_tested_items(value.decode() if isinstance(value, bytes)
                                            else str(value))
            groups.update(g for g in items.get(keys.LABEL_TESTED_GROUPS, "").split(";") if g)
            commands.update(c for c in items.get(keys.LABEL_TESTED_COMMANDS, "").split(";")
                            if c)
    return sorted(groups), sorted(commands)
