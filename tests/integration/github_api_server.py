"""A loopback HTTP server that plays the few GitHub REST endpoints ``clover-code github`` calls.

Every request is recorded (method, path, JSON body, authorization header) so
tests can assert the exact conversation. Permissions per user, the pull
requests it knows and their changed files (``pull_files``: GitHub's
``/pulls/N/files`` entries, a ``patch`` each) are set by the test; reviews
posted to a pull request are kept, and their inline comments are listed
back as ``/pulls/N/comments`` does, a page at a time.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeGitHub", "RecordedCall"]


@dataclass(slots=True)
class RecordedCall:
    """One request the server answered."""

    method: str
    path: str
    body: Any
    authorization: str


@dataclass
class FakeGitHub:
    """The GitHub REST API for one repository, on 127.0.0.1."""

    repository: str
    permissions: dict[str, str] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    calls: list[RecordedCall] = field(default_factory=list)
    comments: dict[int, str] = field(default_factory=dict)
    default_branch: str = "main"
    pull_files: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    reviews: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """Reviews posted to each pull request, as the API returns them."""
    review_comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """Inline comments of each pull request, as ``/pulls/N/comments`` lists them."""
    bot_login: str = "github-actions[bot]"
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """The API root, as GITHUB_API_URL."""
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        """Listen on a free loopback port in a background thread."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                call = RecordedCall(
                    self.command, self.path, body, self.headers.get("Authorization", "")
                )
                status, answer = fake.answer(call)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Stop listening."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def calls_to(self, method: str, pattern: str) -> list[RecordedCall]:
        """Recorded calls with ``method`` whose path matches the regex ``pattern``."""
        with self._lock:
            return [c for c in self.calls if c.method == method and re.fullmatch(pattern, c.path)]

    def answer(self, call: RecordedCall) -> tuple[int, Any]:
        """Record ``call`` and answer it as GitHub would."""
        prefix = f"/repos/{self.repository}"
        with self._lock:
            self.calls.append(call)
            if not call.path.startswith(prefix):
                return 404, {"message": "Not Found"}
            path = call.path[len(prefix) :]
            path, _, query = path.partition("?")
            page = self._page(query)
            if call.method == "GET" and path == "":
                return 200, {"full_name": self.repository, "default_branch": self.default_branch}
            if m := re.fullmatch(r"/collaborators/([^/]+)/permission", path):
                role = self.permissions.get(m[1], "read")
                legacy = "write" if role == "maintain" else role
                return 200, {"permission": legacy, "role_name": role, "user": {"login": m[1]}}
            if call.method == "POST" and (m := re.fullmatch(r"/issues/(\d+)/comments", path)):
                comment_id = 9000 + len(self.comments)
                self.comments[comment_id] = call.body["body"]
                return 201, {"id": comment_id, "body": call.body["body"]}
            if call.method == "PATCH" and (m := re.fullmatch(r"/issues/comments/(\d+)", path)):
                if int(m[1]) not in self.comments:
                    return 404, {"message": "Not Found"}
                self.comments[int(m[1])] = call.body["body"]
                return 200, {"id": int(m[1]), "body": call.body["body"]}
            if call.method == "GET" and (m := re.fullmatch(r"/pulls/(\d+)", path)):
                pull = self.pulls.get(int(m[1]))
                return (200, pull) if pull else (404, {"message": "Not Found"})
            if call.method == "GET" and (m := re.fullmatch(r"/pulls/(\d+)/files", path)):
                return 200, page(self.pull_files.get(int(m[1]), []))
            if call.method == "GET" and (m := re.fullmatch(r"/pulls/(\d+)/comments", path)):
                return 200, page(self.review_comments.get(int(m[1]), []))
            if call.method == "GET" and (m := re.fullmatch(r"/pulls/(\d+)/reviews", path)):
                return 200, page(self.reviews.get(int(m[1]), []))
            if call.method == "POST" and (m := re.fullmatch(r"/pulls/(\d+)/reviews", path)):
                return self._post_review(int(m[1]), call.body)
            if call.method == "POST" and path == "/pulls":
                number = 100 + len(self.pulls)
                pull = {
                    "number": number,
                    "html_url": f"https://github.com/{self.repository}/pull/{number}",
                    "head": {"ref": call.body["head"]},
                    "base": {"ref": call.body["base"]},
                }
                self.pulls[number] = pull
                return 201, pull
            return 404, {"message": "Not Found"}

    def _page(self, query: str) -> Any:
        """Cut a listing to the page ``query`` asks for (``per_page``, ``page``), as GitHub does."""
        params = dict(part.split("=", 1) for part in query.split("&") if "=" in part)
        size = min(int(params.get("per_page", "30")), 100)
        number = int(params.get("page", "1"))

        def page(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return items[(number - 1) * size : number * size]

        return page

    def _post_review(self, number: int, body: dict[str, Any]) -> tuple[int, Any]:
        """A review with its inline comments; 422 for a comment off the diff, as GitHub."""
        if number not in self.pulls:
            return 404, {"message": "Not Found"}
        user = {"login": self.bot_login, "type": "Bot"}
        for comment in body.get("comments") or []:
            if not self._on_diff(number, comment):
                return 422, {
                    "message": "Unprocessable Entity",
                    "errors": ["Line could not be resolved"],
                }
        review_id = 5000 + sum(len(r) for r in self.reviews.values())
        review = {"id": review_id, "user": user, "body": body.get("body", ""), "state": "COMMENTED"}
        review["commit_id"] = body.get("commit_id")
        self.reviews.setdefault(number, []).append(review)
        listed = self.review_comments.setdefault(number, [])
        for comment in body.get("comments") or []:
            listed.append(
                {
                    "id": 7000 + len(listed),
                    "pull_request_review_id": review_id,
                    "user": user,
                    "path": comment["path"],
                    "line": comment["line"],
                    "start_line": comment.get("start_line"),
                    "side": comment.get("side", "RIGHT"),
                    "body": comment["body"],
                }
            )
        return 200, review

    def _on_diff(self, number: int, comment: dict[str, Any]) -> bool:
        """Whether ``comment``'s lines are on the new side of one hunk of its file."""
        hunks = []
        for entry in self.pull_files.get(number, []):
            if entry["filename"] != comment.get("path"):
                continue
            for m in re.finditer(
                r"(?m)^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", entry.get("patch", "")
            ):
                start = int(m[1])
                count = int(m[2]) if m[2] is not None else 1
                hunks.append(range(start, start + count))
        first = comment.get("start_line") or comment["line"]
        return any(first in hunk and comment["line"] in hunk for hunk in hunks)
