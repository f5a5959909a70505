"""Hooks: the user's programs, run at lifecycle points of a session.

Configured in the settings files (``[[hooks.PreToolUse]]`` tables, see
``HookConfig``); a project file's hooks run only once the user trusted that
file (``clover_code.config.loosening``: ``hooks`` is a loosening key).

The contract is Claude Code's, so its hook scripts work with at most a change
of tool names:

- the program gets one JSON object on stdin: ``hook_event_name``,
  ``session_id``, ``transcript_path``, ``cwd`` and, per event, ``prompt``,
  ``tool_name``, ``tool_input``, ``tool_response``, ``agent_id``,
  ``agent_type`` (``hook_calls`` builds those of the approval and child events),
  and for ``Notification`` ``message``, ``title`` and ``notification_type``
  (``permission_prompt``: an approval waits; ``idle_prompt``: the prompt waits
  after a turn), which its matcher is matched against (a front end sends
  ``protocol.Notify`` when it tells the user, and the session runs these hooks
  then);
- exit 0 lets things go on; the stdout of ``UserPromptSubmit`` and
  ``SessionStart`` is added to the model's context;
- exit 2 blocks: stderr is the reason (``PreToolUse``: the call is refused
  with it; ``UserPromptSubmit``: the prompt is refused and the user told;
  ``PostToolUse``: it is added to the result; ``Stop`` and ``SubagentStop``:
  the model (the child's) goes on with it as the next instruction;
  ``PermissionRequest``: the call is denied with it);
- any other exit is a warning to the user, and things go on;
- stdout may be a JSON object for finer control: ``decision`` (``block`` or
  ``approve``), ``reason``, ``additionalContext``, and for ``PreToolUse`` a
  replacement ``tool_input`` (Claude Code's ``hookSpecificOutput`` with
  ``permissionDecision``/``updatedInput`` is read too, and PermissionRequest's
  ``decision`` object: ``behavior`` ``allow`` or ``deny``, ``message``, and with
  an allow ``updatedInput``, the arguments the call is to run with).

What "approve" (or a PermissionRequest's allow) means here: the call runs
without asking the user, and only where the loosest approval mode allowed
(full-auto, or the administrator's ``max_approval``) would run it without
asking: deny rules, refusals of the approval mode (read-only), protected paths
and commands the check cannot vouch for still hold (``agent.permissions``). A
replaced ``tool_input`` (PreToolUse's, or a PermissionRequest allow's
``updatedInput``) is validated and judged like the model's own.

Hooks run on the host (they are the user's programs) in the workspace, with
their argv split from the configured command (``shlex``); the model's data
reaches them only through stdin. A hook that cannot start, crashes, hangs
past its timeout (its whole process group is killed) or prints bad JSON is
reported in one sentence and the session goes on.

An SDK program's hooks are Python functions (``hook_functions``), run after the
configured ones with the same data and judged the same way.

Before every run the command is checked (``host_programs``): a script or
program in the workspace runs only with the bytes the user trusted, and a
user-level command never resolves into the workspace. A refused hook is
reported as outcome ``refused`` with a warning naming the file; a refused
PreToolUse hook blocks the call (its check did not run), with that reason.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from clover_code import protocol as p
from clover_code.config.settings import HookConfig, HookEvent
from clover_code.protocol.json_text import loads_bounded

if TYPE_CHECKING:
    # What runs a hook is loaded by the first hook that runs (most sessions have none).
    from clover_code.agent.extensions.hook_functions import HookFunction
    from clover_code.agent.extensions.hook_process import HookRun
    from clover_code.agent.extensions.host_programs import HostPrograms

__all__ = [
    "HOOK_EVENTS",
    "AnyHook",
    "HookOutcome",
    "HookRunner",
    "notification_hooks",
    "prompt_hooks",
    "stop_hooks",
]

HOOK_EVENTS: tuple[HookEvent, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "Stop",
    "SessionEnd",
    "PermissionRequest",
    "SubagentStart",
    "SubagentStop",
    "Notification",
)
BLOCK_EXIT = 2
"""The exit status that blocks (Claude Code's)."""
MAX_CONTEXT_CHARS = 10_000
"""Most characters of one hook's output added to the model's context."""
_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PermissionRequest"})
_AGENT_EVENTS = frozenset({"SubagentStart", "SubagentStop"})
"""Events whose matcher is over agent names (the payload's ``agent_type``)."""
_NOTIFICATION_EVENTS = frozenset({"Notification"})
"""Events whose matcher is over the payload's ``notification_type``."""

AnyHook: TypeAlias = "HookConfig | HookFunction"
"""A configured hook program, or a function of the program that embeds the agent."""


@dataclass(slots=True)
class HookOutcome:
    """What the hooks of one event decided together."""

    blocked: bool = False
    reason: str = ""
    approved: bool = False
    tool_input: dict[str, Any] | None = None
    """A replacement for the tool call's arguments (PreToolUse; a PermissionRequest's
    allow)."""
    context: list[str] = field(default_factory=list)
    """Text to add to the model's context (UserPromptSubmit, SessionStart)."""


class HookRunner:
    """Runs the configured hooks of a session and reports each run as events."""

    def __init__(
        self,
        hooks: Mapping[HookEvent, Sequence[AnyHook]],
        *,
        root: Path,
        session_id: str,
        transcript_path: Path,
        emit: p.Emit,
        programs: HostPrograms,
        retrust: Callable[[str], Awaitable[bool]] | None = None,
    ) -> None:
        self.hooks = {event: list(configs) for event, configs in hooks.items() if configs}
        self.root = root
        self.programs = programs
        """The check every hook command passes before it runs."""
        self.retrust = retrust
        """Asks the user about a trusted script that changed (None: refuse)."""
        self.session_id = session_id
        self.transcript_path = transcript_path
        self.emit = emit

    @classmethod
    def create(
        cls,
        hooks: Mapping[HookEvent, Sequence[AnyHook]],
        root: Path,
        session_id: str,
        transcript_path: Path,
        emit: p.Emit,
        programs: HostPrograms,
        retrust: Callable[[str], Awaitable[bool]] | None = None,
    ) -> HookRunner | None:
        """A runner for a session, or None when no hook is configured."""
        if not any(hooks.values()):
            return None
        return cls(
            hooks,
            root=root,
            session_id=session_id,
            transcript_path=transcript_path,
            emit=emit,
            programs=programs,
            retrust=retrust,
        )

    async def session_start(self, resumed: bool) -> str:
        """Run the SessionStart hooks; the text they add to the system prompt ("" if none)."""
        if not self.has("SessionStart"):
            return ""
        outcome = await self.run("SessionStart", {"source": "resume" if resumed else "startup"})
        if not outcome.context:
            return ""
        return "\n\nContext from a SessionStart hook:\n" + "\n\n".join(outcome.context)

    def has(self, event: HookEvent) -> bool:
        """Whether any hook is configured for ``event``."""
        return bool(self.hooks.get(event))

    async def run(
        self, event: HookEvent, data: Mapping[str, Any] | None = None, *, tool: str | None = None
    ) -> HookOutcome:
        """Run the hooks of ``event`` (those whose matcher fits ``tool``, or the
        payload's ``agent_type`` for the child agent events, its ``notification_type``
        for Notification) in order.

        The first hook that blocks ends the run; a replaced ``tool_input`` is
        passed on to the hooks after it.
        """
        outcome = HookOutcome()
        payload: dict[str, Any] = {
            "hook_event_name": event,
            "session_id": self.session_id,
            "transcript_path": str(self.transcript_path),
            "cwd": str(self.root),
            **(data or {}),
        }
        subject = tool if event in _TOOL_EVENTS else None
        if event in _AGENT_EVENTS:
            subject = str(payload.get("agent_type", ""))
        if event in _NOTIFICATION_EVENTS:
            subject = str(payload.get("notification_type", ""))
        from clover_code.agent.extensions.hook_functions import HookFunction, call_hook_function
        from clover_code.agent.extensions.hook_process import HookRun, run_program

        for config in self.hooks.get(event, []):
            if config.matcher and subject is not None and not re.fullmatch(config.matcher, subject):
                continue
            if isinstance(config, HookFunction):
                called = await call_hook_function(config, payload)
                code = 0 if called.problem is None else None
                run = HookRun(code, called.output, "", called.problem)
            else:
                run = await run_program(
                    config, payload, root=self.root, programs=self.programs, retrust=self.retrust
                )
            self._judge(event, config, run, outcome, tool)
            if outcome.blocked:
                break
            if outcome.tool_input is not None:
                payload["tool_input"] = outcome.tool_input
        return outcome

    def _judge(
        self,
        event: HookEvent,
        config: AnyHook,
        run: HookRun,
        outcome: HookOutcome,
        tool: str | None,
    ) -> None:
        if run.refused and run.problem is not None:
            if event == "PreToolUse":  # its check did not run: the call does not either
                outcome.blocked, outcome.reason = True, f"A PreToolUse hook {run.problem}"
            elif event in ("UserPromptSubmit", "SessionStart"):
                outcome.context.append(f"A {event} hook {run.problem}")
            self._report(event, config, "refused", run.problem, tool)
            return
        if run.problem is not None:
            self._report(event, config, "failed", f"{run.problem}; going on.", tool)
            return
        if run.code == BLOCK_EXIT:
            reason = run.stderr.strip() or "a hook blocked this (exit status 2)."
            outcome.blocked, outcome.reason = True, reason
            self._report(event, config, "blocked", _one_line(reason), tool)
            return
        if run.code != 0:
            first = _one_line(run.stderr) or "no message"
            self._report(
                event,
                config,
                "failed",
                f"it exited with status {run.code} ({first}); going on.",
                tool,
            )
            return
        text = run.stdout.strip()
        if text.startswith("{"):
            self._json_output(event, config, text, outcome, tool)
            return
        if text and event in ("UserPromptSubmit", "SessionStart"):
            outcome.context.append(text[:MAX_CONTEXT_CHARS])
        self._report(event, config, "ok", "", tool)

    def _json_output(
        self,
        event: HookEvent,
        config: AnyHook,
        text: str,
        outcome: HookOutcome,
        tool: str | None,
    ) -> None:
        try:
            data = loads_bounded(text)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            self._report(
                event,
                config,
                "failed",
                "it printed output that is not a JSON object; ignored.",
                tool,
            )
            return
        specific = data.get("hookSpecificOutput")
        specific = specific if isinstance(specific, dict) else {}
        decision = data.get("decision")
        permission = specific.get("permissionDecision")
        # PermissionRequest answers with an object: {"behavior": "allow" | "deny", "message"}.
        answer = specific.get("decision")
        answer = answer if isinstance(answer, dict) else {}
        behavior = answer.get("behavior")
        reason = data.get("reason") or specific.get("permissionDecisionReason") or ""
        reason = str(reason or answer.get("message") or "")
        if decision == "block" or permission == "deny" or behavior == "deny":
            outcome.blocked = True
            outcome.reason = reason or "a hook blocked this."
            self._report(event, config, "blocked", _one_line(outcome.reason), tool)
            return
        allows = decision == "approve" or permission == "allow" or behavior == "allow"
        new_input = data.get("tool_input", specific.get("updatedInput", answer.get("updatedInput")))
        if event in ("PreToolUse", "PermissionRequest") and new_input is not None:
            if event == "PermissionRequest" and not allows:
                # Changed arguments come with an allow, which is judged on them.
                why = "its updatedInput came without an allow; ignored."
                self._report(event, config, "failed", why, tool)
                return
            if not isinstance(new_input, dict):
                # A PreToolUse approve still stands; a PermissionRequest allow was of the
                # changed call, which cannot be read.
                outcome.approved |= allows and event == "PreToolUse"
                why = "its tool_input is not a JSON object; ignored."
                self._report(event, config, "failed", why, tool)
                return
            outcome.tool_input = new_input
        if allows:
            outcome.approved = True
        extra = data.get("additionalContext", specific.get("additionalContext"))
        if isinstance(extra, str) and extra.strip():
            outcome.context.append(extra.strip()[:MAX_CONTEXT_CHARS])
        self._report(event, config, "ok", reason, tool)

    def _report(
        self, event: HookEvent, config: AnyHook, outcome: Any, message: str, tool: str | None
    ) -> None:
        self.emit(
            p.HookRan(
                event=event,
                command=config.command,
                outcome=outcome,
                message=message,
                tool_name=tool,
            )
        )
        if outcome != "ok":
            verb = outcome if outcome in ("blocked", "refused") else "failed"
            target = f" for {tool}" if tool else ""
            self.emit(
                p.Notice(
                    level="warning",
                    text=f"{event} hook '{config.command}'{target} {verb}: {message}",
                )
            )


async def prompt_hooks(hooks: HookRunner | None, text: str) -> tuple[str, str | None]:
    """Run the UserPromptSubmit hooks: the user message to record (the prompt and
    any context they added) and, when one refused the prompt, its reason."""
    if hooks is None or not hooks.has("UserPromptSubmit"):
        return text, None
    outcome = await hooks.run("UserPromptSubmit", {"prompt": text})
    if outcome.blocked:
        return text, outcome.reason
    if not outcome.context:
        return text, None
    return "\n\n".join([text, "Context from a UserPromptSubmit hook:", *outcome.context]), None


async def stop_hooks(hooks: HookRunner | None, active: bool, last: str) -> str | None:
    """Run the Stop hooks: the instruction to send the model back to work with, or None.

    ``active``: a Stop hook already did so in this turn (the hook may let go)."""
    if hooks is None or not hooks.has("Stop"):
        return None
    outcome = await hooks.run("Stop", {"stop_hook_active": active, "last_message": last})
    return f"[A Stop hook asks you to go on] {outcome.reason}" if outcome.blocked else None


async def notification_hooks(
    hooks: HookRunner | None, message: str, notification_type: str, title: str
) -> None:
    """Run the Notification hooks whose matcher fits ``notification_type`` (what they
    print is not used: they route the notification, they decide nothing)."""
    if hooks is None or not hooks.has("Notification"):
        return
    data = {"message": message, "title": title, "notification_type": notification_type}
    await hooks.run("Notification", data)


def _one_line(text: str) -> str:
    """The first non-empty line of ``text``, at most 300 characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:300]
