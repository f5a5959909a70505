"""The options of ``run``, ``arun`` and ``Session``: read and checked once.

Every keyword that is not one of the SDK's own (``cwd``, ``can_use_tool``,
``tools``, ``hooks``, ``resume``, ``trust_project``) is a field of the
settings model (``clover_code.config.settings.Settings``: ``base_url``,
``model``, ``sandbox``, ``max_turns`` ...). They are read the way command-line
flags are, over the environment and the config files, and checked the same
way: an unknown name or a bad value is a ``ConfigError`` naming the option,
and an administrator's managed settings refuse what they forbid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from clover_code.agent.open import Approver, HookFunction, find_session
from clover_code.config.load import load_settings
from clover_code.config.settings import ApprovalMode, HookEvent, Settings
from clover_code.errors import UsageError
from clover_code.fs.workspace_root import find_root
from clover_code.sdk.approval import ApprovalCallback, CallbackApprover
from clover_code.sdk.tools import FunctionTool, tool
from clover_code.tools.base import Tool

__all__ = ["HookTable", "Options", "ToolList"]

HookItem = HookFunction | Callable[..., Any]
HookTable = Mapping[str, HookItem | Sequence[HookItem]]
"""Hooks by event name: a function, a ``Hook``, or a list of them."""
ToolList = Iterable[FunctionTool | Callable[..., Any]]
"""Custom tools: ``tool(...)`` results, or functions made into tools as they are."""
_EVENTS: tuple[HookEvent, ...] = get_args(HookEvent)


@dataclass(frozen=True, slots=True)
class Options:
    """What an SDK call asked for, checked: the settings and the program's own parts."""

    settings: Settings
    cwd: Path
    approver: Approver | None
    approval: ApprovalMode
    """The approval mode: the ``approval`` option or setting, else ``ask`` with a
    ``can_use_tool`` callback (it answers what asks) and ``sandbox-auto`` without."""
    tools: tuple[FunctionTool, ...]
    hooks: dict[HookEvent, list[HookFunction]]
    resume: Path | None

    @classmethod
    def read(
        cls,
        options: Mapping[str, Any],
        *,
        cwd: str | Path,
        can_use_tool: ApprovalCallback | None,
        tools: ToolList,
        hooks: HookTable | None,
        resume: str | None,
        trust_project: bool,
    ) -> Options:
        """Check everything, load the settings; ``UsageError`` or ``ConfigError`` say what
        is wrong."""
        folder = Path(cwd).expanduser().resolve()
        if not folder.is_dir():
            raise UsageError(f"cwd {folder} is not a directory; give the project's folder.")
        own_tools = _tools(tools)
        own_hooks = _hooks(hooks or {})
        if can_use_tool is not None and not callable(can_use_tool):
            raise UsageError("can_use_tool must be a function that answers Allow() or Deny(...).")
        root, _ = find_root(folder)
        settings = load_settings(
            dict(options), repo_root=root, trust_project=trust_project, given_as="option"
        )
        transcript = None
        if resume is not None:
            transcript = find_session(settings.resolved_sessions_dir(), resume or None, root)
        return cls(
            settings=settings,
            cwd=folder,
            approver=CallbackApprover(can_use_tool) if can_use_tool is not None else None,
            approval=settings.approval_or("ask" if can_use_tool is not None else "sandbox-auto"),
            tools=own_tools,
            hooks=own_hooks,
            resume=transcript,
        )


def _tools(given: ToolList) -> tuple[FunctionTool, ...]:
    found: list[FunctionTool] = []
    for item in given:
        if isinstance(item, FunctionTool):
            found.append(item)
        elif isinstance(item, Tool) or not callable(item):
            raise UsageError(
                f"tools holds a {type(item).__name__}; give functions, or what "
                "clover_code.sdk.tool made of them."
            )
        else:
            found.append(tool(item))
    names = [t.name for t in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"two tools are named {twice[0]}; give each its own name.")
    return tuple(found)


def _hooks(given: HookTable) -> dict[HookEvent, list[HookFunction]]:
    table: dict[HookEvent, list[HookFunction]] = {}
    for event, items in given.items():
        if event not in _EVENTS:
            raise UsageError(f"hooks names the event {event!r}; use one of {', '.join(_EVENTS)}.")
        many = [items] if isinstance(items, HookFunction) or callable(items) else list(items)
        hooks: list[HookFunction] = []
        for item in many:
            if isinstance(item, HookFunction):
                hooks.append(item)
            elif callable(item):
                hooks.append(HookFunction(item))
            else:
                raise UsageError(
                    f"hooks for {event} hold a {type(item).__name__}; give functions or Hook(...)."
                )
        table[_event(event)] = hooks
    return table


def _event(name: str) -> HookEvent:
    return next(event for event in _EVENTS if event == name)
