"""Options of the pull-request comment, shared by ``rbs api`` and ``rbs agent``.

The token is read from ``$RBS_GITHUB_TOKEN`` or a file (``--github-token-file`` or
``$RBS_GITHUB_TOKEN_FILE``), never from the command line, where ``ps`` and shell history
would show it. Without a token no comment is posted.
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
from pathlib import Path
from typing import Any

import redis

from redis_benchmarks_spec.events.messages import BuildRequest
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.notify import github_config as gh
from redis_benchmarks_spec.pullrequest.state import PrInfoError, from_payload

log = logging.getLogger(__name__)


def add_github_args(p: argparse.ArgumentParser, agent: bool = False) -> None:
    g = p.add_argument_group("pull-request comment (token: $RBS_GITHUB_TOKEN or a file)")
    g.add_argument("--github-api-url", default=os.environ.get(gh.ENV_API_URL),
                   help=f"GitHub REST API base URL (default ${gh.ENV_API_URL} or "
                        f"{gh.DEFAULT_API_URL})")
    g.add_argument("--github-token-file", type=Path, default=None,
                   help=f"file holding the token (default ${gh.ENV_TOKEN_FILE}, else "
                        f"${gh.ENV_TOKEN})")
    if agent:
        g.add_argument("--grafana-url", default="", help="dashboard URL linked from comments")
        g.add_argument("--reports-dir", type=Path, default=None,
                       help="write each platform's HTML report here")
        g.add_argument("--report-base-url", default="",
                       help="URL where --reports-dir is served, linked from comments")
        g.add_argument("--baseline-points", type=int, default=10,
                       help="points of the base branch used as baseline (default 10)")


def notifier_from_args(args: argparse.Namespace, broker: redis.Redis, names: StreamNames,
                       datasink: redis.Redis | None = None) -> Any:
    """A ``PrNotifier`` when a token is configured, else None (raises GitHubConfigError)."""
    config = gh.load_config(args.github_api_url, args.github_token_file)
    if config is None:
        log.info("no GitHub token configured: pull-request comments are off")
        return None
    try:
        from redis_benchmarks_spec.notify.notifier import Links, PrNotifier
    except ImportError as exc:
        raise gh.GitHubConfigError(f"pull-request comments need PyGithub ({exc}); pip install "
                                   "'redis-benchmarks-spec[github]'") from None
    from redis_benchmarks_spec.notify.pr_compare import PrCompareOptions
    links = Links(getattr(args, "grafana_url", ""), getattr(args, "report_base_url", ""))
    options = PrCompareOptions(baseline_points=getattr(args, "baseline_points", 10))
    return PrNotifier(broker, names, config, datasink, options, links,
                      getattr(args, "reports_dir", None))


def webhook_hook(notifier: Any) -> Any:
    """The webhook's ``on_enqueued``: the "build started" comment, off the request thread
    (GitHub waits at most 10 s for the webhook's answer)."""
    def on_enqueued(request: BuildRequest, event: str, payload: dict[str, Any]) -> None:
        if event != "pull_request" or request.pr is None:
            return
        try:
            info = from_payload(payload)
        except PrInfoError as exc:
            log.error("request %s: no PR comment: %s", request.id, exc)
            return
        threading.Thread(target=notifier.accepted, args=(request, info), daemon=True,
                         name=f"pr-comment-{request.id}").start()
    return on_enqueued


def reply_hook(notifier: Any) -> Any:
    """The webhook's ``on_reply``: the answer to a ``/rbs`` command posted on the pull
    request, off the request thread."""
    def on_reply(reply: Any) -> None:
        threading.Thread(target=notifier.command_reply, args=(reply,), daemon=True,
                         name=f"rbs-reply-{reply.pr.ref}").start()
    return on_reply
