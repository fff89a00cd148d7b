"""Serving the site with waitress, the server ``rbs api`` uses (:mod:`api.webhook`)."""

from __future__ import annotations

from flask import Flask

CONNECTION_LIMIT = 200
CHANNEL_TIMEOUT_S = 30


def serve(app: Flask, host: str, port: int, threads: int = 4) -> None:
    """Serve ``app`` until interrupted; an idle connection is dropped after
    :data:`CHANNEL_TIMEOUT_S` and none holds a thread while its request arrives."""
    import waitress

    waitress.serve(app, host=host, port=port, threads=threads, ident="rbs-site",
                   connection_limit=CONNECTION_LIMIT, channel_timeout=CHANNEL_TIMEOUT_S,
                   max_request_body_size=64 * 1024, asyncore_use_poll=True)
