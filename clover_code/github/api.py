"""The GitHub REST calls the runner makes, over httpx with the job's token."""

from __future__ import annotations

from typing import Any

import httpx

from clover_code import __version__
from clover_code.errors import CloverError
from clover_code.redact import redact_tree

__all__ = ["DEFAULT_API_URL", "WRITE_PERMISSIONS", "GitHubApi", "GitHubApiError"]

DEFAULT_API_URL = "https://api.github.com"

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
"""Permission levels that may ask for changes."""

_PER_PAGE = 100
_MAX_PAGES = 30
"""GitHub lists at most 3,000 files of a pull request; comments are read as far."""


class GitHubApiError(CloverError):
    """A GitHub API call failed (exit 1)."""


class GitHubApi:
    """A client for one repository: ``owner/name`` at ``api_url``."""

    def __init__(self, api_url: str, repository: str, token: str, *, timeout: float = 30.0):
        self.repository = repository
        self._client = httpx.Client(
            base_url=api_url.rstrip("/"),
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": f"clover-code/{__version__}",
            },
            timeout=timeout,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        url = f"/repos/{self.repository}{path}"
        try:
            # Every comment and pull request text passes through redact: no secret is posted.
            response = self._client.request(method, url, json=redact_tree(body))
        except httpx.HTTPError as exc:
            raise GitHubApiError(f"GitHub API {method} {url} failed ({exc}).") from None
        if response.status_code >= 400:
            try:
                message = response.json().get("message", "")
            except ValueError:
                message = response.text[:200]
            raise GitHubApiError(
                f"GitHub API {method} {url} answered {response.status_code}: {message}"
            )
        return response.json() if response.content else None

    def permission(self, user: str) -> str:
        """``user``'s permission on the repository: admin, maintain, write, triage, read or none."""
        data = self._call("GET", f"/collaborators/{user}/permission")
        # role_name tells maintain and triage apart; permission folds them into write and read.
        role = data.get("role_name") or data.get("permission") or "none"
        return str(role)

    def create_comment(self, number: int, body: str) -> int:
        """Comment on issue or pull request ``number``; returns the comment's id."""
        data = self._call("POST", f"/issues/{number}/comments", {"body": body})
        return int(data["id"])

    def update_comment(self, comment_id: int, body: str) -> None:
        """Replace the text of comment ``comment_id``."""
        self._call("PATCH", f"/issues/comments/{comment_id}", {"body": body})

    def default_branch(self) -> str | None:
        """The repository's default branch (None when the API does not say)."""
        data = self._call("GET", "")
        branch = data.get("default_branch") if isinstance(data, dict) else None
        return branch if isinstance(branch, str) and branch else None

    def pull(self, number: int) -> dict[str, Any]:
        """Pull request ``number``."""
        data: dict[str, Any] = self._call("GET", f"/pulls/{number}")
        return data

    def create_pull(self, *, title: str, head: str, base: str, body: str) -> dict[str, Any]:
        """Open a pull request of ``head`` into ``base``; returns it."""
        data: dict[str, Any] = self._call(
            "POST", "/pulls", {"title": title, "head": head, "base": base, "body": body}
        )
        return data

    def _pages(self, path: str) -> list[dict[str, Any]]:
        """Every item of a listing, a page of ``_PER_PAGE`` at a time."""
        items: list[dict[str, Any]] = []
        for page in range(1, _MAX_PAGES + 1):
            data = self._call("GET", f"{path}?per_page={_PER_PAGE}&page={page}")
            if not isinstance(data, list):
                break
            items += [item for item in data if isinstance(item, dict)]
            if len(data) < _PER_PAGE:
                break
        return items

    def pull_files(self, number: int) -> list[dict[str, Any]]:
        """The files pull request ``number`` changes, each with its ``patch`` (the hunks)."""
        return self._pages(f"/pulls/{number}/files")

    def review_comments(self, number: int) -> list[dict[str, Any]]:
        """The inline comments of pull request ``number``'s reviews."""
        return self._pages(f"/pulls/{number}/comments")

    def reviews(self, number: int) -> list[dict[str, Any]]:
        """The reviews of pull request ``number``."""
        return self._pages(f"/pulls/{number}/reviews")

    def create_review(
        self, number: int, *, commit_id: str, body: str, comments: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """Post one review (a comment, neither approval nor change request) with inline
        ``comments`` on the lines of ``commit_id``'s diff."""
        data: dict[str, Any] = self._call(
            "POST",
            f"/pulls/{number}/reviews",
            {"commit_id": commit_id, "event": "COMMENT", "body": body, "comments": comments},
        )
        return data
