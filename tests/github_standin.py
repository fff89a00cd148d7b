"""A local HTTP server speaking the subset of GitHub's REST API the comment code uses:
list, create and update issue comments (``/repos/{o}/{r}/issues/{n}/comments``,
``/repos/{o}/{r}/issues/comments/{id}``), with token authentication. It records every
request so tests assert on what was sent (GitHub itself cannot be reached here)."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from redis_benchmarks_spec.common.comment_size import fits
from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.lab.github_local import Request, json_handler, too_long

_LIST = re.compile(r"^/repos/([^/]+)/([^/]+)/issues/(\d+)/comments$")
_ONE = re.compile(r"^/repos/([^/]+)/([^/]+)/issues/comments/(\d+)$")


@dataclass
class Recorded:
    method: str
    path: str
    body: dict[str, Any] | None
    authorization: str


@dataclass
class GitHubStandIn:
    """``with GitHubStandIn(token) as gh:`` serves on ``gh.url``."""

    token: str
    requests: list[Recorded] = field(default_factory=list)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), json_handler(self.handle))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> GitHubStandIn:  # noqa: PYI034
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def calls(self, method: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method]

    def _comment(self, owner: str, repo: str, issue: int, body: str) -> dict[str, Any]:
        cid = 1000 + len(self.comments)
        comment = {"id": cid, "body": body, "user": {"login": "rbs-bot"},
                   "url": f"{self.url}/repos/{owner}/{repo}/issues/comments/{cid}",
                   "html_url": f"https://github.example/{owner}/{repo}/pull/{issue}"
                               f"#issuecomment-{cid}",
                   "issue_url": f"{self.url}/repos/{owner}/{repo}/issues/{issue}",
                   "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
                   "_issue": (owner, repo, issue)}
        self.comments[cid] = comment
        return comment

    def handle(self, request: Request) -> tuple[int, Any]:
        method, path, body, auth = request
        with self._lock:
            self.requests.append(Recorded(method, path, body, auth))
            if self.token not in auth:
                return 401, {"message": "Bad credentials"}
            path = path.split("?", 1)[0]
            text = body.get("body") if isinstance(body, dict) else None
            if isinstance(text, str) and not fits(text):
                return 422, too_long(text)  # as GitHub answers
            if (m := _LIST.match(path)) and method == "GET":
                key = (m[1], m[2], int(m[3]))
                return 200, [_public(c) for c in self.comments.values() if c["_issue"] == key]
            if (m := _LIST.match(path)) and method == "POST" and body:
                return 201, _public(self._comment(m[1], m[2], int(m[3]), body["body"]))
            if (m := _ONE.match(path)) and method == "PATCH" and body:
                comment = self.comments.get(int(m[3]))
                if comment is None:
                    return 404, {"message": "Not Found"}
                comment["body"] = body["body"]
                return 200, _public(comment)
            return 404, {"message": "Not Found"}

def _public(comment: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in comment.items() if not k.startswith("_")}
