"""What an Actions event asks for: who, where, and the text that may mention the trigger."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from clover_code.errors import UsageError

__all__ = ["PULL_REQUEST_EVENTS", "SUPPORTED_EVENTS", "GitHubRequest", "read_event"]

PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
"""Events that ask for a review of the pull request (a fork's under pull_request_target)."""
SUPPORTED_EVENTS = ("issue_comment", "pull_request_review_comment", "issues", *PULL_REQUEST_EVENTS)
"""Event names ``clover-code github`` acts on."""

_REVIEWED = ("opened", "synchronize", "ready_for_review")
"""Pull request actions that ask for a review: new, pushed to, out of draft."""
# Only new text asks for work: an edited or deleted comment is not a new request.
_ACTIONS = {
    "issue_comment": ("created",),
    "pull_request_review_comment": ("created",),
    "issues": ("opened",),
    **{name: _REVIEWED for name in PULL_REQUEST_EVENTS},
}


@dataclass(frozen=True, slots=True)
class GitHubRequest:
    """One event's request, reduced to what the runner needs."""

    event: str
    action: str
    kind: Literal["issue", "pull_request"]
    number: int
    title: str
    body: str
    """The text that may mention the trigger: the comment, or the new issue's body."""
    issue_body: str
    """The issue's or pull request's own description (context for the task)."""
    author: str
    default_branch: str | None
    review_path: str | None = None
    """For a review comment: the file it was left on."""
    review_line: int | None = None

    def mentions(self, trigger: str) -> bool:
        """Whether the request's text mentions ``trigger`` (case-insensitive)."""
        return trigger.casefold() in self.body.casefold()

    def asks_review(self, trigger: str) -> bool:
        """Whether this is a pull request event, or a comment on a pull request that says
        ``{trigger} review`` (case-insensitive)."""
        if self.event in PULL_REQUEST_EVENTS:
            return True
        asked = re.compile(rf"(?<![\w-]){re.escape(trigger)}\s+review\b", re.IGNORECASE)
        return self.kind == "pull_request" and asked.search(self.body) is not None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _login(user: Any) -> str:
    return _text(user.get("login")) if isinstance(user, dict) else ""


def read_event(path: Path, name: str | None) -> GitHubRequest | None:
    """The request in the event payload at ``path``; None for an event not acted on.

    ``name`` is ``GITHUB_EVENT_NAME``; when unset it is inferred from the payload.
    Raises ``UsageError`` when the file is missing or not an event payload.
    """
    try:
        payload = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"event file {path} does not exist; run clover-code github inside a GitHub "
            "Actions job (GITHUB_EVENT_PATH)."
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"event file {path} cannot be read as JSON ({exc}).") from None
    if not isinstance(payload, dict):
        raise UsageError(f"event file {path} does not hold a GitHub event payload.")
    name = name or _infer_name(payload)
    if name not in _ACTIONS or _text(payload.get("action")) not in _ACTIONS[name]:
        return None
    repo = payload.get("repository") or {}
    default_branch = _text(repo.get("default_branch")) or None
    if name in PULL_REQUEST_EVENTS:
        pull = payload.get("pull_request") or {}
        return GitHubRequest(
            event=name,
            action=payload["action"],
            kind="pull_request",
            number=int(pull["number"]),
            title=_text(pull.get("title")),
            body="",
            issue_body=_text(pull.get("body")),
            # Who opened or pushed: the one the permission rules ask about.
            author=_login(payload.get("sender")) or _login(pull.get("user")),
            default_branch=default_branch,
        )
    if name == "pull_request_review_comment":
        pull, comment = payload.get("pull_request") or {}, payload.get("comment") or {}
        line = comment.get("line") or comment.get("original_line")
        return GitHubRequest(
            event=name,
            action=payload["action"],
            kind="pull_request",
            number=int(pull["number"]),
            title=_text(pull.get("title")),
            body=_text(comment.get("body")),
            issue_body=_text(pull.get("body")),
            author=_login(comment.get("user")),
            default_branch=default_branch,
            review_path=_text(comment.get("path")) or None,
            review_line=line if isinstance(line, int) else None,
        )
    issue = payload.get("issue") or {}
    if name == "issue_comment":
        comment = payload.get("comment") or {}
        body, author = _text(comment.get("body")), _login(comment.get("user"))
    else:
        body, author = _text(issue.get("body")), _login(issue.get("user"))
    return GitHubRequest(
        event=name,
        action=payload["action"],
        # An issue comment on a pull request carries the pull request as a link on the issue.
        kind="pull_request" if issue.get("pull_request") else "issue",
        number=int(issue["number"]),
        title=_text(issue.get("title")),
        body=body if name == "issue_comment" else f"{_text(issue.get('title'))}\n\n{body}",
        issue_body=_text(issue.get("body")),
        author=author,
        default_branch=default_branch,
    )


def _infer_name(payload: dict[str, Any]) -> str:
    if "pull_request" in payload and "comment" not in payload:
        return "pull_request"
    if "comment" in payload and "pull_request" in payload:
        return "pull_request_review_comment"
    if "comment" in payload and "issue" in payload:
        return "issue_comment"
    if "issue" in payload:
        return "issues"
    return ""
