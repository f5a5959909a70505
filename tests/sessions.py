"""Opening a session the way most tests do: on a backend they hold, recording its events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clover_code import protocol as p
from clover_code.agent.open import SessionOptions
from clover_code.agent.open import open_session as factory_open
from clover_code.agent.permissions.approval import RefuseApprover
from clover_code.agent.session import Session
from clover_code.config.settings import Settings
from clover_code.engine.base import Backend


async def open_session(
    settings: Settings, backend: Backend, cwd: Path, events: list[p.Event], **options: Any
) -> Session:
    """A session on ``backend`` in ``cwd`` that appends every event it emits to ``events``.

    ``options`` are the other ``SessionOptions``; unless they say otherwise the mode
    is auto-edit and every question is refused (``RefuseApprover``).
    """
    options.setdefault("approver", RefuseApprover())
    options.setdefault("approval_mode", "auto-edit")
    chosen = SessionOptions(emit=events.append, backend=backend, **options)
    return await factory_open(settings, cwd, chosen)
