"""Project trust: which project-file settings may loosen safety, and who said so.

A repository's ``.clover/config.toml`` and ``.mcp.json`` are written by
whoever can write the repository, the agent included (its file tools ask
first, but a sandboxed shell command can still write them). So a setting
from those files that loosens safety (``config/loosening.py`` says which)
applies only once the user has trusted that exact file content: a record in a store kept in
the user data dir, outside every workspace, keyed by the resolved workspace
root, the file and the sha256 of its bytes. Any change to the file, by the
agent or anyone, makes it untrusted again. Settings that tighten safety
always apply.

The user trusts a project by answering the app's question, with
``--trust-project`` (headless, acp; records the trust), or with
``trust_project_settings = true`` in the user config or
``CLOVER_TRUST_PROJECT_SETTINGS=1`` (trusts every project without a record).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from clover_code.errors import ConfigError

__all__ = [
    "MCP_FILE",
    "PROJECT_CONFIG",
    "PROTECTED_PATHS",
    "TRUST_SWITCH",
    "ProjectFile",
    "TrustReport",
    "TrustStore",
    "digest",
    "is_protected",
]

PROJECT_CONFIG = ".clover/config.toml"
"""The project's settings file, relative to the workspace root."""
MCP_FILE = ".mcp.json"
"""The project's MCP server list, relative to the workspace root."""

PROTECTED_PATHS: tuple[str, ...] = (
    PurePosixPath(PROJECT_CONFIG).parent.as_posix(),  # config, commands/, skills/
    MCP_FILE,
    ".agents/skills",
)
"""Project files and directories that configure clover-code itself (a directory
covers everything under it): settings (hooks included), custom commands and
skills. The agent's file tools never write them without the user's approval,
in any mode; headless refuses."""

TRUST_SWITCH = "trust_project_settings"
"""The setting that trusts every project; never read from a project file."""


def is_protected(relative: str) -> bool:
    """Whether a workspace-relative path is (or is under) a protected config path.

    Compared case-insensitively: on macOS and Windows ``.CLOVER`` is ``.clover``.
    """
    parts = PurePosixPath(relative.replace("\\", "/")).parts
    if not parts:
        return False
    folded = tuple(p.casefold() for p in parts)
    for protected in PROTECTED_PATHS:
        want = tuple(p.casefold() for p in PurePosixPath(protected).parts)
        if folded[: len(want)] == want:
            return True
    return False


def digest(data: bytes) -> str:
    """The sha256 of a file's bytes, as trust records keep it."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class ProjectFile:
    """One project config file as the loader found it."""

    rel: str
    """Path relative to the workspace root, e.g. ``.clover/config.toml``."""
    path: Path
    digest: str
    """The fingerprint trust records keep: the sha256 of the bytes that were read
    (and parsed), and of the workspace scripts its commands name."""
    loosening: tuple[str, ...]
    """What it would loosen, e.g. ``approval = "full-auto"``; empty if nothing."""
    trusted: bool
    """Whether its loosening settings apply."""
    content: str = ""
    """sha256 of the file's own bytes ("": the same as ``digest``)."""
    scripts: tuple[tuple[str, str], ...] = ()
    """The workspace files its commands name (relative path, sha256), as read."""

    def same_content(self, content_digest: str) -> bool:
        """Whether the file's own bytes hash to ``content_digest``."""
        return (self.content or self.digest) == content_digest


@dataclass(frozen=True, slots=True)
class TrustReport:
    """What the loader decided about a workspace's project files."""

    root: Path
    files: tuple[ProjectFile, ...] = ()
    trust_all: bool = False
    """The user trusts every project (``trust_project_settings``)."""

    def project_trusted(self) -> bool:
        """Whether the user trusts this project's content: every project, or this one's
        files that needed trust, each as it is now (at least one; nothing untrusted)."""
        if self.trust_all:
            return True
        needing = [f for f in self.files if f.loosening]
        return bool(needing) and all(f.trusted for f in needing)

    def untrusted(self) -> list[ProjectFile]:
        """Files whose loosening settings were ignored."""
        return [f for f in self.files if f.loosening and not f.trusted]

    def trusts(self, rel: str, content_digest: str) -> bool:
        """Whether the file ``rel`` with exactly this content was trusted."""
        return any(
            f.rel == rel and f.same_content(content_digest) and f.trusted for f in self.files
        )

    def mentions(self, rel: str, content_digest: str) -> bool:
        """Whether ``notice`` already speaks of this file with this content."""
        return any(f.rel == rel and f.same_content(content_digest) for f in self.untrusted())

    def trusted_scripts(self) -> dict[str, str]:
        """The workspace scripts trusted files name, as trusted (relative path -> sha256)."""
        return {rel: sha for f in self.files if f.trusted for rel, sha in f.scripts}

    def notice(self) -> str | None:
        """The one sentence about ignored settings, or None when nothing was ignored."""
        ignored = self.untrusted()
        if not ignored:
            return None
        parts = "; ".join(
            f"{f.path}: {', '.join(f.loosening)}"
            + (
                f", with the scripts it names: {', '.join(r for r, _ in f.scripts)}"
                * bool(f.scripts)
            )
            for f in ignored
        )
        return (
            f"Project settings that would loosen safety were ignored because this content "
            f"is not trusted yet ({parts}). Review the file(s), then trust them: answer "
            f"'Trust' when the app asks, or run once with --trust-project."
        )


class TrustStore:
    """The user's trust records: a JSON file outside every workspace.

    ``{"version": 1, "projects": {"<resolved root>": {"<rel path>": "<sha256>"}}}``;
    trusting new content of a file replaces the old record.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def _inside(self, root: Path) -> bool:
        store = Path(os.path.realpath(self.path))
        return store.is_relative_to(os.path.realpath(root))

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # missing or damaged: nothing is trusted
        projects = data.get("projects") if isinstance(data, dict) else None
        if not isinstance(projects, dict):
            return {}
        return {
            str(k): {str(f): str(h) for f, h in v.items()}
            for k, v in projects.items()
            if isinstance(v, dict)
        }

    def is_trusted(self, root: Path, rel: str, content_digest: str) -> bool:
        """Whether the user trusted file ``rel`` of workspace ``root`` with this content.

        A store inside the workspace is never believed: the agent could write it.
        """
        if self._inside(root):
            return False
        return self._read().get(os.path.realpath(root), {}).get(rel) == content_digest

    def trust(self, root: Path, files: Iterable[ProjectFile]) -> None:
        """Record that the user trusts these files' contents in workspace ``root``."""
        if self._inside(root):
            raise ConfigError(
                f"the trust store {self.path} lies inside the workspace {root}, where the "
                "agent could write it; set XDG_DATA_HOME to a directory outside it."
            )
        projects = self._read()
        entry = projects.setdefault(os.path.realpath(root), {})
        for f in files:
            entry[f.rel] = f.digest
        text = json.dumps({"version": 1, "projects": projects}, indent=1, sort_keys=True)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".trust-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
            os.replace(tmp, self.path)
        except OSError as exc:
            raise ConfigError(
                f"the trust record {self.path} cannot be written ({exc.strerror})."
            ) from None
