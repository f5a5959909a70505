"""Nothing the job knows as a secret leaves in a push, a commit or a comment.

Before anything is pushed or posted, the staged files (names and bytes),
the commit messages and the text of the answer are searched for every
secret the process holds: the GitHub token (also as the header git sends),
the other Actions credentials, the model's API key and the credentials in
the model server's URL. One found stops the job with a sentence naming
where it was and which secret, never the value.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from urllib.parse import urlsplit

from clover_code.errors import CloverError

__all__ = ["SecretFound", "find_secret", "job_secrets"]


class SecretFound(CloverError):
    """A secret is in what would be pushed or posted (exit 1)."""


def job_secrets(
    token: str,
    held: Mapping[str, str],
    *,
    api_key: str | None,
    base_url: str | None,
) -> dict[str, str]:
    """Each secret of the job by what to call it in a sentence: ``{label: value}``."""
    found: dict[str, str] = {}
    if token:
        found["the GitHub token"] = token
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        found["the GitHub token (as git's header)"] = basic
    for name, value in held.items():
        # The Actions URLs name endpoints; the tokens that go with them are the secrets.
        if value and value != token and not value.startswith(("http://", "https://")):
            found.setdefault(f"the value of {name}", value)
    if api_key:
        found["the model's API key"] = api_key
    if base_url:
        parts = urlsplit(base_url)
        if parts.password:
            found["the password in the model server's URL"] = parts.password
        elif parts.username:
            found["the user in the model server's URL"] = parts.username
    # Too short to tell from ordinary text: "1" or "true" would be found everywhere.
    return {label: value for label, value in found.items() if len(value) >= 6}


def find_secret(data: str | bytes, secrets: Mapping[str, str]) -> str | None:
    """The label of the first secret in ``data``, or None."""
    for label, value in secrets.items():
        if isinstance(data, bytes) and value.encode() in data:
            return label
        if isinstance(data, str) and value in data:
            return label
    return None
