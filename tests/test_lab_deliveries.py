"""The replay's input and deliveries: a PR file line is two 40-hex shas and a name (a bad line
is named with its file and number), the labelled delivery is one the webhook's own decision
turns into a request for the head that names the base, and the push of the base is one for
the tracked branch."""

from __future__ import annotations

from pathlib import Path

import pytest

from redis_benchmarks_spec.api.github import TriggerPolicy, decide
from redis_benchmarks_spec.lab.deliveries import DeliveryError, pr_deliveries, read_prs

BASE, HEAD = "1" * 40, "2" * 40


def test_pr_file_lines_and_their_errors(tmp_path: Path) -> None:
    good = tmp_path / "prs.txt"
    good.write_text(f"# base head name\n{BASE} {HEAD} pr11552\n\n{HEAD} {BASE} control\n")
    prs = read_prs(good)
    assert [(p.base, p.head, p.name, p.number) for p in prs] == [
        (BASE, HEAD, "pr11552", 11552), (HEAD, BASE, "control", 90_004)]
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{BASE} {HEAD} ok\n{BASE[:12]} {HEAD} short\n")
    with pytest.raises(DeliveryError, match=r"bad.txt:2: expected '<base-sha> <head-sha> <name>'"):
        read_prs(bad)
    bad.write_text(f"{BASE} {HEAD} ../../x\n")
    with pytest.raises(DeliveryError, match="bad.txt:1"):
        read_prs(bad)


def test_deliveries_are_what_the_webhook_turns_into_requests(tmp_path: Path) -> None:
    path = tmp_path / "prs.txt"
    path.write_text(f"{BASE} {HEAD} pr11552\n")
    push, label = pr_deliveries(read_prs(path), "action:run-benchmark")
    policy = TriggerPolicy(repos=("redis/redis",), git_remote="file:///srv/redis.git")
    pushed = decide(push.event, push.payload, policy).request
    labelled = decide(label.event, label.payload, policy).request
    assert pushed is not None and pushed.sha == BASE and pushed.branch == "unstable"
    assert pushed.pr is None and pushed.base_sha is None
    assert labelled is not None and labelled.sha == HEAD and labelled.pr == 11552
    assert labelled.base_sha == BASE and labelled.source.location == "file:///srv/redis.git"


def test_a_delivery_is_sent_again_while_the_receiver_restarts() -> None:
    """A webhook receiver the keeper is restarting answers nothing, then 503: the replay
    sends the same delivery (same id, same signed body) again until it is answered, as a
    maintainer redelivers from GitHub's page; a 4xx is an answer, not retried."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from redis_benchmarks_spec.lab.deliveries import Delivery, post
    seen: list[tuple[str, bytes]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.headers["X-GitHub-Delivery"], body))
            code = 503 if len(seen) < 3 else 201
            answer = json.dumps({"status": "enqueued" if code == 201 else "down"}).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/webhook"
        answer = post(url, b"s", Delivery("push", {"ref": "refs/heads/unstable"}, "x"),
                      redeliver_s=30)
    finally:
        server.shutdown()
        server.server_close()
    assert answer["http_status"] == 201 and len(seen) == 3
    assert len({d for d, _ in seen}) == 1 and len({b for _, b in seen}) == 1
    with pytest.raises(OSError):  # nobody listens there any more
        post(url, b"s", Delivery("push", {}, "x"), redeliver_s=1.5)
