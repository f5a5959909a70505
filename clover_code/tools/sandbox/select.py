"""Choose where shell commands run. Never a silent fall back to the host."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clover_code.config import SandboxKind
from clover_code.tools.sandbox.base import Sandbox


@dataclass(slots=True)
class SandboxChoice:
    """The sandbox to use (None: no shell tool) and what to tell the user."""

    sandbox: Sandbox | None
    notice: str | None = None
    warning: bool = False


def choose_sandbox(kind: SandboxKind, root: Path) -> SandboxChoice:
    """Open the sandbox ``kind`` names for the workspace at ``root``."""
    if kind == "none":
        from clover_code.tools.sandbox.host import HostSandbox

        return SandboxChoice(
            HostSandbox(root),
            "shell commands run directly on this machine (--sandbox none): "
            "nothing isolates them from your files, network or credentials.",
            warning=True,
        )
    return SandboxChoice(
        None,
        f"the shell tool is off: no '{kind}' sandbox is available in this version. "
        "Pass --sandbox none to let the agent run commands directly on this machine.",
        warning=True,
    )
