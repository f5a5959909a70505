"""What a program that runs a headless task in its own process adds to it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clover_code.agent.open import Approver
from clover_code.config.settings import ApprovalMode, HookEvent
from clover_code.tools.base import Tool

if TYPE_CHECKING:
    from clover_code.agent.open import HookFunction

__all__ = ["Embedding"]


@dataclass(frozen=True, kw_only=True)
class Embedding:
    """What a program that runs the task in its own process adds (``clover_code.sdk``)."""

    approver: Approver | None = None
    """Who answers approval requests; None: nobody can be asked, so asking refuses."""
    approval: ApprovalMode | None = None
    """The approval mode; None: the settings', else sandbox-auto."""
    tools: Sequence[Tool[Any]] = ()
    """Its own tools (Python functions)."""
    hooks: Mapping[HookEvent, Sequence[HookFunction]] = field(default_factory=dict)
    """Its own hooks (Python functions)."""
