"""Posts and edits the pull-request comment at the pipeline's two moments.

* :meth:`PrNotifier.accepted`: the webhook receiver enqueued a build request for a pull
  request: store the PR's base (the baseline) and post the "build started" comment.
* :meth:`PrNotifier.platform_done`: an agent finished a build event on its platform: the
  interleaved A/B the agent hands over when it ran one, else the head commit compared against
  the baseline in the datasink, is stored as the platform's section, and the one comment is
  re-rendered from every section stored so far. An event the agent
  dead-lettered gets a section that says so, with the reason, instead of a comparison.
* :meth:`PrNotifier.build_ended`: a builder failed or dead-lettered a variant: no agent will
  ever run it, so its section says "build failed" or "dead-lettered" with the reason, and no
  platform is left "still running" for it.

Both are best effort: a GitHub or broker error is logged with the pull request it was for
and never fails the webhook or the agent's work.
"""

from __future__ import annotations

import logging
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType

import redis
import requests
from github import GithubException

from redis_benchmarks_spec.api.commands import Reply
from redis_benchmarks_spec.builder import change as change_mod
from redis_benchmarks_spec.events.messages import DEAD_LETTERED, BuildEvent, BuildRequest
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, read_statuses
from redis_benchmarks_spec.notify.github_comments import (
    GitHubConfig,
    PullRequestRef,
    Upserted,
    upsert_comment,
)
from redis_benchmarks_spec.notify.pr_body import RUNNING, queued_body, results_body
from redis_benchmarks_spec.notify.pr_compare import PrCompareOptions, compare_platform
from redis_benchmarks_spec.pullrequest import selection_record
from redis_benchmarks_spec.pullrequest import state as pr_state
from redis_benchmarks_spec.pullrequest.ab_record import ABRecord
from redis_benchmarks_spec.pullrequest.state import PrInfo, Section

log = logging.getLogger(__name__)

NOTIFY_ERRORS = (GithubException, requests.RequestException, redis.RedisError,
                 pr_state.PrInfoError)
LOCK_TIMEOUT_S = 120
ALL_PLATFORMS = "all platforms"  # the section of a build that failed for every platform


@dataclass(frozen=True)
class Links:
    """Where readers find more: a Grafana dashboard URL and a base URL for HTML reports."""

    grafana_url: str = ""
    report_base_url: str = ""


@dataclass
class PrNotifier:
    """The comment's writer; ``datasink`` is needed only by :meth:`platform_done`."""

    broker: redis.Redis
    names: StreamNames
    github: GitHubConfig
    datasink: redis.Redis | None = None
    options: PrCompareOptions = field(default_factory=PrCompareOptions)
    links: Links = field(default_factory=Links)
    reports_dir: Path | None = None  # where each platform's HTML report is written

    def accepted(self, request: BuildRequest, info: PrInfo) -> Upserted | None:
        """Store the PR's base for the agents and post the "build started" comment."""
        try:
            pr_state.save_info(self.broker, self.names, request.id, info)
            with self._lock(info):
                if pr_state.load_sections(self.broker, self.names, info):
                    return None  # results of an earlier trigger of this commit are shown
                return self._upsert(info, queued_body(info, request.platforms))
        except NOTIFY_ERRORS as exc:
            log.error("PR comment on %s/%s#%s not posted: %s", info.org, info.repo,
                      info.number, exc)
            return None

    def platform_done(self, event: BuildEvent, platform: str,
                      ab: ABRecord | None = None) -> Upserted | None:
        """Store this platform's section (the agent's A/B ``ab`` when it ran one, else a
        comparison against the datasink) and edit (or create) the comment."""
        if event.pr is None:
            return None
        try:
            info = self._info(event)
            section = self._section(event, platform, info, ab)
            pr_state.save_section(self.broker, self.names, info, section)
            with self._lock(info):
                sections = pr_state.load_sections(self.broker, self.names, info)
                body = results_body(info, sections, self._pending(event, sections))
                return self._upsert(info, body)
        except NOTIFY_ERRORS as exc:
            log.error("PR comment on %s/%s#%s (event %s, %s) not updated: %s", event.org,
                      event.repo, event.pr, event.id, platform, exc)
            return None

    def selected(self, event: BuildEvent, platform: str, line: str) -> Upserted | None:
        """The platform chose its suites: its section says so (and when it should be done)
        until its results replace it."""
        if event.pr is None:
            return None
        try:
            info = self._info(event)
            pr_state.save_section(self.broker, self.names, info, Section(
                platform=platform, build_variant=event.build_variant, state=RUNNING,
                notes=[line], started_ms=int(time.time() * 1000)))
            with self._lock(info):
                sections = pr_state.load_sections(self.broker, self.names, info)
                return self._upsert(info, results_body(info, sections,
                                                       self._pending(event, sections)))
        except NOTIFY_ERRORS as exc:
            log.error("PR comment on %s/%s#%s (event %s, %s) not updated: %s", event.org,
                      event.repo, event.pr, event.id, platform, exc)
            return None

    def build_ended(self, request: BuildRequest, variant: str, state: str,
                    reason: str) -> Upserted | None:
        """A variant that will never reach an agent: one section per platform it was for."""
        if request.pr is None:
            return None
        try:
            info = pr_state.load_info(self.broker, self.names, request.id)
            if info is None or info.head_sha != request.sha:
                log.info("request %s: no stored pull request to comment on", request.id)
                return None
            shown = "build failed" if state == "failed" else state
            for platform in request.platforms or [ALL_PLATFORMS]:
                pr_state.save_section(self.broker, self.names, info, Section(
                    platform=platform, build_variant=variant, state=shown, reason=reason))
            with self._lock(info):
                sections = pr_state.load_sections(self.broker, self.names, info)
                done = {s.platform for s in sections if s.build_variant == variant}
                pending = [p for p in request.platforms if p not in done]
                return self._upsert(info, results_body(info, sections, pending))
        except NOTIFY_ERRORS as exc:
            log.error("PR comment on %s/%s#%s (request %s, %s) not updated: %s", request.org,
                      request.repo, request.pr, request.id, variant, exc)
            return None

    def command_reply(self, reply: Reply) -> Upserted | None:
        """The lab's answer to a ``/rbs`` command, in its own comment on the pull request
        (one per pull request, edited: the newest answer; api/commands.py)."""
        pr = reply.pr
        marker = f"<!-- rbs-command-reply {pr.ref} -->"
        body = f"{marker}\n**The lab's answer to `/rbs`**\n\n{reply.text}\n"
        try:
            return upsert_comment(self.github, PullRequestRef(pr.org, pr.repo, pr.number),
                                  marker, body)
        except (GithubException, requests.RequestException) as exc:
            log.error("answer to /rbs on %s not posted: %s", pr.ref, exc)
            return None

    def _info(self, event: BuildEvent) -> PrInfo:
        stored = pr_state.load_info(self.broker, self.names, event.request_id)
        if stored is not None and stored.head_sha == event.sha:
            return stored
        assert event.pr is not None
        return PrInfo(org=event.org, repo=event.repo, number=event.pr, head_sha=event.sha,
                      head_ref=event.branch or "", base_ref=self.options.default_base_branch)

    def _section(self, event: BuildEvent, platform: str, info: PrInfo,
                 ab: ABRecord | None) -> Section:
        failed = [s for s in read_statuses(self.broker, self.names, event.id)
                  if s.platform == platform and s.test_name == EVENT_DONE
                  and s.state in ("failed", DEAD_LETTERED)]
        section = Section(platform=platform, build_variant=event.build_variant,
                          state=failed[0].state if failed else "completed",
                          reason=failed[0].reason if failed else "",
                          links=self._links(event, platform, info))
        if failed:
            return section
        section.changed_scores = self._changed_scores(event, platform)
        if ab is not None and ab.note:
            section.notes.append(ab.note)
        if ab is not None and ab.report is not None:
            return self._ab_section(section, event, info, ab)
        if self.datasink is None:
            section.reason = "no datasink to compare from"
            section.state = "failed"
            return section
        comparison = compare_platform(self.datasink, event, platform, info, self.options)
        section.report = comparison.report.to_dict()
        section.flags = {t: f for t, f in comparison.flags.items() if f}
        self._html(section, event, lambda pr_report, sink: pr_report.write_pr_report(
            sink, event, platform, info, comparison, self.reports_dir))
        return section

    def _ab_section(self, section: Section, event: BuildEvent, info: PrInfo,
                    ab: ABRecord) -> Section:
        """The agent's interleaved A/B, handed over by the agent: its verdicts are the
        section's (no datasink comparison is made for this platform)."""
        section.report = ab.report
        section.machine_s = ab.machine_s
        section.sequential = {t: asdict(p) for t, p in ab.progress.items()}
        section.flags = {t: f for t, f in ab.flags.items() if f}
        section.movers = ab.movers
        section.changed_files = self._changed_files(info)
        self._html(section, event, lambda pr_report, sink: pr_report.write_ab_report(
            sink, event, section.platform, info, ab, self.reports_dir))
        return section

    def _changed_scores(self, event: BuildEvent, platform: str) -> dict[str, float]:
        """Per suite, how much of the changed code it runs (the agent's selection record;
        none when it selected nothing by profile): the first line names the top ones."""
        found = selection_record.load(self.broker, self.names, event.id, platform)
        return dict(found.scores) if found is not None else {}

    def _changed_files(self, info: PrInfo) -> list[str]:
        """The files base..head changes, as the builder stored them (none when unknown)."""
        if not info.base_sha:
            return []
        try:
            change = change_mod.load(self.broker, self.names.prefix, info.base_sha,
                                     info.head_sha)
        except ValueError:
            return []
        return change.files if change is not None else []

    def _html(self, section: Section, event: BuildEvent,
              write: Callable[[ModuleType, redis.Redis], Path]) -> None:
        """The section's HTML report (where ``--reports-dir`` points), else no link to it."""
        if self.reports_dir is None or self.datasink is None:
            section.links.pop("HTML report", None)
            return
        # matplotlib loads only where reports are written (rbs api never needs it)
        try:
            from redis_benchmarks_spec.notify import pr_report
            write(pr_report, self.datasink)
        except (OSError, ImportError) as exc:  # the comment goes out without the link
            log.error("HTML report of %s on %s not written: %s", event.id, section.platform,
                      exc)
            section.links.pop("HTML report", None)

    def _links(self, event: BuildEvent, platform: str, info: PrInfo) -> dict[str, str]:
        links: dict[str, str] = {}
        if self.links.grafana_url:
            query = urllib.parse.urlencode({"var-platform": platform,
                                            "var-branch": info.base_ref or "All",
                                            "var-build_variant": event.build_variant})
            sep = "&" if "?" in self.links.grafana_url else "?"
            links["Grafana"] = f"{self.links.grafana_url}{sep}{query}"
        if self.links.report_base_url:
            name = urllib.parse.quote(pr_state.report_name(event.id, platform))
            links["HTML report"] = f"{self.links.report_base_url.rstrip('/')}/{name}"
        return links

    def _pending(self, event: BuildEvent, sections: list[Section]) -> list[str]:
        done = {s.platform for s in sections if s.build_variant == event.build_variant
                and s.state != RUNNING}
        return [p for p in event.platforms if p not in done]

    def _lock(self, info: PrInfo) -> redis.lock.Lock:
        return self.broker.lock(pr_state.lock_key(self.names, info), timeout=LOCK_TIMEOUT_S,
                                blocking_timeout=LOCK_TIMEOUT_S)

    def _upsert(self, info: PrInfo, body: str) -> Upserted:
        done = upsert_comment(self.github, PullRequestRef(info.org, info.repo, info.number),
                              info.marker, body)
        log.info("PR comment %s on %s/%s#%s: %s", done.comment_id, info.org, info.repo,
                 info.number, "created" if done.created else "edited")
        try:  # the lab's site shows it (rbs site); the comment is out whatever happens here
            pr_state.save_body(self.broker, self.names, info, body, int(time.time() * 1000))
        except redis.RedisError as exc:
            log.warning("PR comment of %s not kept for the site: %s", info.comment_id, exc)
        return done
