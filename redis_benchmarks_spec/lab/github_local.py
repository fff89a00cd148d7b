"""A local stand-in of the part of GitHub's REST API the comment code uses, recording every
comment body it is sent: list, create and edit issue comments, with token authentication.

It runs as a process of the lab (``python -m redis_benchmarks_spec.lab.github_local``).
Every create and every edit is written as the next numbered file of its pull request:
``<record-dir>/<org>/<repo>/<number>/<n>.md`` (1 = the created body, 2.. = its edits), and
``<n>.json`` beside it says which comment, what was done and when. GitHub itself cannot be
reached from the lab, and the replay reads what a pull request would have shown from here.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.common.comment_size import GITHUB_MAX_BODY_CHARS, body_chars, fits

_LIST = re.compile(r"^/repos/([A-Za-z0-9._-]+)/([A-Za-z0-9._-]+)/issues/(\d+)/comments$")
_ONE = re.compile(r"^/repos/([A-Za-z0-9._-]+)/([A-Za-z0-9._-]+)/issues/comments/(\d+)$")
_ISSUES = re.compile(r"^/repos/([A-Za-z0-9._-]+)/([A-Za-z0-9._-]+)/issues$")
MAX_BODY = 1024 * 1024  # bounds reads; a body over GitHub's limit is refused as GitHub does


class CommentStore:
    """Comments by id, and the numbered record of every body each pull request was sent."""

    def __init__(self, record_dir: Path, base_url: str) -> None:
        self.record_dir = record_dir
        self.base_url = base_url
        self.comments: dict[int, dict[str, Any]] = {}
        self.lock = threading.Lock()

    def listing(self, issue: tuple[str, str, int]) -> list[dict[str, Any]]:
        return [_public(c) for c in self.comments.values() if c["_issue"] == issue]

    def create(self, issue: tuple[str, str, int], body: str) -> dict[str, Any]:
        cid = 1000 + len(self.comments)
        org, repo, number = issue
        comment = {"id": cid, "body": body, "user": {"login": "rbs-lab"},
                   "url": f"{self.base_url}/repos/{org}/{repo}/issues/comments/{cid}",
                   "html_url": f"{self.base_url}/{org}/{repo}/pull/{number}#issuecomment-{cid}",
                   "issue_url": f"{self.base_url}/repos/{org}/{repo}/issues/{number}",
                   "created_at": _now(), "updated_at": _now(), "_issue": issue}
        self.comments[cid] = comment
        self._record(issue, cid, "created", body)
        return _public(comment)

    def open_issue(self, repo: tuple[str, str], title: str, body: str) -> dict[str, Any]:
        """An issue (the watch's alerts): ``<record-dir>/<org>/<repo>/issues/<n>.md``."""
        folder = self.record_dir / repo[0] / repo[1] / "issues"
        folder.mkdir(parents=True, exist_ok=True)
        number = len(list(folder.glob("*.md"))) + 1
        (folder / f"{number}.md").write_text(body)
        (folder / f"{number}.json").write_text(json.dumps({"title": title, "at": time.time()}))
        return {"number": number, "title": title, "body": body, "state": "open",
                "url": f"{self.base_url}/repos/{repo[0]}/{repo[1]}/issues/{number}",
                "html_url": f"{self.base_url}/{repo[0]}/{repo[1]}/issues/{number}"}

    def edit(self, cid: int, body: str) -> dict[str, Any] | None:
        comment = self.comments.get(cid)
        if comment is None:
            return None
        comment["body"], comment["updated_at"] = body, _now()
        self._record(comment["_issue"], cid, "edited", body)
        return _public(comment)

    def _record(self, issue: tuple[str, str, int], cid: int, action: str, body: str) -> None:
        folder = self.record_dir / issue[0] / issue[1] / str(issue[2])
        folder.mkdir(parents=True, exist_ok=True)
        n = len(list(folder.glob("*.md"))) + 1
        (folder / f"{n}.md").write_text(body)
        (folder / f"{n}.json").write_text(json.dumps(
            {"comment_id": cid, "action": action, "at": time.time()}))


def too_long(text: str) -> dict[str, Any]:
    """GitHub's answer to a body over its limit (the lab replay then shows no comment, as a
    pull request on GitHub would)."""
    return {"message": "Validation Failed",
            "errors": [{"resource": "IssueComment", "code": "custom", "field": "body",
                        "message": f"body is too long (maximum is {GITHUB_MAX_BODY_CHARS} "
                                   f"characters; got {body_chars(text)})"}]}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _public(comment: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in comment.items() if not k.startswith("_")}


def answer(store: CommentStore, token: str, request: tuple[str, str, Any, str]) -> tuple[int, Any]:
    """(status, JSON answer) for one request: (method, path, parsed body, Authorization)."""
    method, path, body, auth = request
    if not token or auth.split()[-1:] != [token]:
        return 401, {"message": "Bad credentials"}
    path = path.split("?", 1)[0]
    text = body.get("body") if isinstance(body, dict) else None
    if isinstance(text, str) and not fits(text):
        return 422, too_long(text)
    with store.lock:
        if (m := _LIST.match(path)) and method == "GET":
            return 200, store.listing((m[1], m[2], int(m[3])))
        if (m := _LIST.match(path)) and method == "POST" and isinstance(text, str):
            return 201, store.create((m[1], m[2], int(m[3])), text)
        if (m := _ISSUES.match(path)) and method == "POST" and isinstance(text, str):
            return 201, store.open_issue((m[1], m[2]), str(body.get("title", ""))[:300], text)
        if (m := _ONE.match(path)) and method == "PATCH" and isinstance(text, str):
            edited = store.edit(int(m[3]), text)
            return (404, {"message": "Not Found"}) if edited is None else (200, edited)
    return 404, {"message": "Not Found"}


Request = tuple[str, str, Any, str]  # (method, path, parsed JSON body, Authorization)


def json_handler(answer_one: Callable[[Request], tuple[int, Any]]
                 ) -> type[BaseHTTPRequestHandler]:
    """An HTTP handler class that parses a JSON body (at most ``MAX_BODY`` bytes; not JSON:
    None), asks ``answer_one`` and writes its (status, JSON answer). The test suite's
    GitHub stand-in serves through it too."""
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            status, result = answer_one((self.command, self.path, body,
                                         self.headers.get("Authorization", "")))
            data = json.dumps(result).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _serve

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def handler_for(store: CommentStore, token: str) -> type[BaseHTTPRequestHandler]:
    return json_handler(lambda request: answer(store, token, request))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="github_local", description=__doc__)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--record-dir", type=Path, required=True)
    p.add_argument("--token-file", type=Path, required=True)
    args = p.parse_args(argv)
    token = args.token_file.read_text().strip()
    base = f"http://127.0.0.1:{args.port}"
    store = CommentStore(args.record_dir, base)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler_for(store, token))
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
