"""The folders an MCP client may have the agent work in.

The client is another agent, so it does not choose where the agent works:
the user does, with ``--root DIR`` (repeatable; default the directory the
server was started in). A call's directory, and the workspace it belongs to
(its git top level), must lie inside one of them. Started in ``/`` or the
home directory with no ``--root``, the server refuses every call: such a
default would hand the client the whole machine or every project.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from clover_code.agent.open import workspace_refusal
from clover_code.config.load import load_settings
from clover_code.errors import CloverError

__all__ = ["Roots"]


@dataclass(frozen=True, slots=True)
class Roots:
    """The allowed folders (real paths), or why every call is refused."""

    folders: tuple[Path, ...]
    refusal: str | None = None

    @classmethod
    def given(cls, folders: list[Path]) -> Roots:
        """The folders of ``--root`` flags (as the user gave them, resolved)."""
        return cls(tuple(Path(os.path.realpath(f.expanduser())) for f in folders))

    @classmethod
    def started_in(cls, cwd: Path) -> Roots:
        """The default: the start directory, unless it can never be a workspace."""
        real = Path(os.path.realpath(cwd))
        try:
            own = load_settings({}).own_dirs()
        except CloverError:
            own = ()  # each call's settings load says what is wrong with them
        if workspace_refusal(real, own) is None:
            return cls((real,))
        return cls(
            (),
            f"this server was started in {real}, which is never a workspace, and given no "
            "--root; restart it with --root DIR naming the folders calls may work in.",
        )

    def refuse(self, *paths: Path) -> str | None:
        """Why a call may not work in ``paths`` (its cwd and workspace root), or None."""
        if self.refusal is not None:
            return self.refusal
        for path in paths:
            real = Path(os.path.realpath(path))
            if not any(real.is_relative_to(folder) for folder in self.folders):
                listed = ", ".join(str(f) for f in self.folders)
                return (
                    f"{path} is outside the folders this server may work in ({listed}); "
                    "give a cwd inside one, or restart the server with --root for it."
                )
        return None
