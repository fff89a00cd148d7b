"""``rbs site --port N [--datasink URL]``: the lab's read-only web site over the datasink
(the embedded one by default, as ``rbs compare`` and ``rbs history`` read it), served by
waitress on 127.0.0.1 unless ``--host`` says otherwise. Pages: the tracked branches per
platform, a test's history per metric, the comparison of two commits, each run."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from redis_benchmarks_spec.cli import datasink as datasink_cli
from redis_benchmarks_spec.cli.broker_args import ENV_BROKER_PASSWORD, broker_client
from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.store import DatasinkConfig, connect
from redis_benchmarks_spec.events import names as names_mod


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("site", help="serve the lab's read-only web site over the datasink",
                       description=__doc__)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                   "127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8090, help="(default 8090)")
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes the pages of every platform are drawn in, a platform "
                        "each (default: one per CPU, at most 16; 0: in the site's process)")
    p.add_argument("--broker", default=None, metavar="URL",
                   help="Redis URL of the broker, where the pull requests' comments are kept "
                        f"(password: ${ENV_BROKER_PASSWORD}); without it, no comment pages")
    p.add_argument("--triage-token-file", type=Path, default=None, metavar="FILE",
                   help="file holding the token a maintainer gives to triage an alert from "
                        "the branch page (without it the site writes nothing)")
    p.add_argument("--artifacts-dir", type=Path, action="append", default=[], metavar="DIR",
                   help="a folder the agents write their runs' artifacts under, on this "
                        "machine: a run's page shows its flame graphs from there (repeatable; "
                        "`rbs lab up` gives the lab's folder)")
    names_mod.add_arguments(p)
    datasink_cli.add_remote_args(p)
    datasink_cli.add_embedded_args(p)
    p.set_defaults(func=cmd_site)


def _config(args: argparse.Namespace) -> DatasinkConfig:
    config = datasink_cli.remote_config(args)
    if config is None:
        state = EmbeddedDatasink(args.data_dir).status()
        if not state.running:
            raise UsageError("--datasink", "the embedded datasink is not running",
                             "start it with `rbs datasink up` or give --datasink URL")
        config = DatasinkConfig(url=state.url or "")
    datasink_cli.check_reachable(config)
    return config


def _token(path: Path | None) -> bytes | None:
    if path is None:
        return None
    path = path.expanduser().resolve()
    if not path.is_file():
        raise UsageError(f"--triage-token-file {path}", "no such file")
    token = path.read_bytes().strip()
    if len(token) < 16:
        raise UsageError(f"--triage-token-file {path}", "holds fewer than 16 bytes")
    return token


def cmd_site(args: argparse.Namespace) -> int:
    """Serve the site until interrupted."""
    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port}", "must be between 1 and 65535")
    if not 1 <= args.threads <= 64:
        raise UsageError(f"--threads {args.threads}", "must be between 1 and 64")
    if args.workers is not None and not 0 <= args.workers <= 64:
        raise UsageError(f"--workers {args.workers}", "must be between 0 and 64")
    try:
        from redis_benchmarks_spec.web.app import SiteConfig, create_app, page_workers
        from redis_benchmarks_spec.web.page_workers import default_workers
        from redis_benchmarks_spec.web.serve import serve
    except ImportError as exc:
        raise UsageError("rbs site", f"needs Flask, waitress and matplotlib ({exc})",
                         "pip install 'redis-benchmarks-spec[api,report]'") from None
    config = _config(args)
    broker = broker_client(args) if args.broker else None
    workers = default_workers() if args.workers is None else args.workers
    for folder in args.artifacts_dir:
        if not folder.is_dir():
            raise UsageError(f"--artifacts-dir {folder}", "no such folder")
    app = create_app(SiteConfig(lambda: connect(config), config.display_url,
                                (lambda: broker) if broker is not None else None,
                                names_mod.from_args(args), _token(args.triage_token_file),
                                workers, tuple(f.resolve() for f in args.artifacts_dir)))
    # SIGTERM ends serving as Ctrl-C does, so the page workers are stopped below (were the
    # site killed outright, they end when their task pipe closes: web/page_workers.py)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    make_console().print(f"site: http://{args.host}:{args.port}/ (datasink "
                         f"{config.display_url}; {workers} page workers)",
                         highlight=False, markup=False)
    sys.stdout.flush()
    try:
        serve(app, args.host, args.port, args.threads)
    finally:
        pool = page_workers(app)
        if pool is not None:
            pool.close()
    return 0
