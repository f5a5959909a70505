"""Hooks: the user's programs, run at lifecycle points of a session.

Configured in the settings files (``[[hooks.PreToolUse]]`` tables, see
``HookConfig``); a project file's hooks run only once the user trusted that
file (``clover_code.config.trust``: ``hooks`` is a loosening key).

The contract is Claude Code's, so its hook scripts work with at most a change
of tool names:

- the program gets one JSON object on stdin: ``hook_event_name``,
  ``session_id``, ``transcript_path``, ``cwd`` and, per event, ``prompt``,
  ``tool_name``, ``tool_input``, ``tool_response``, and for ``Notification``
  ``message``, ``title`` and ``notification_type`` (``permission_prompt``: an
  approval waits; ``idle_prompt``: the prompt waits after a turn), which its
  matcher is matched against (a front end sends ``protocol.Notify`` when it
  tells the user, and the session runs these hooks then);
- exit 0 lets things go on; the stdout of ``UserPromptSubmit`` and
  ``SessionStart`` is added to the model's context;
- exit 2 blocks: stderr is the reason (``PreToolUse``: the call is refused
  with it; ``UserPromptSubmit``: the prompt is refused and the user told;
  ``PostToolUse``: it is added to the result; ``Stop``: the model goes on
  with it as the next instruction);
- any other exit is a warning to the user, and things go on;
- stdout may be a JSON object for finer control: ``decision`` (``block`` or
  ``approve``), ``reason``, ``additionalContext``, and for ``PreToolUse`` a
  replacement ``tool_input`` (Claude Code's ``hookSpecificOutput`` with
  ``permissionDecision``/``updatedInput`` is read too).

What "approve" means here: the call runs without asking the user, but deny
rules, refusals of the approval mode (read-only) and protected paths still
apply; a replaced ``tool_input`` is validated and judged like the model's own.

Hooks run on the host (they are the user's programs) in the workspace, with
their argv split from the configured command (``shlex``); the model's data
reaches them only through stdin. A hook that cannot start, crashes, hangs
past its timeout (its whole process group is killed) or prints bad JSON is
reported in one sentence and the session goes on.

An SDK program's hooks are Python functions (``hook_functions``), run after the
configured ones with the same data and judged the same way.

``run_host_program`` is that run alone, for other configured host programs
(the app's status line), with the same check first.

Before every run the command is checked (``host_programs``): a script or
program in the workspace runs only with the bytes the user trusted, and a
user-level command never resolves into the workspace. A refused hook is
reported as outcome ``refused`` with a warning naming the file; a refused
PreToolUse hook blocks the call (its check did not run), with that reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clover_code import protocol as p
from clover_code.agent.extensions.hook_functions import HookFunction, call_hook_function
from clover_code.agent.extensions.host_programs import HostPrograms, Refused
from clover_code.config.settings import HookConfig, HookEvent
from clover_code.protocol.json_text import loads_bounded

__all__ = [
    "HOOK_EVENTS",
    "AnyHook",
    "HookOutcome",
    "HookRunner",
    "HostRun",
    "notification_hooks",
    "prompt_hooks",
    "run_host_program",
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
    "Notification",
)
BLOCK_EXIT = 2
"""The exit status that blocks (Claude Code's)."""
MAX_CONTEXT_CHARS = 10_000
"""Most characters of one hook's output added to the model's context."""
_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})
_MATCHED_EVENTS = _TOOL_EVENTS | {"Notification"}
"""Events whose hooks have a matcher: over the tool name, or the notification's type."""

AnyHook = HookConfig | HookFunction
"""A configured hook program, or a function of the program that embeds the agent."""


@dataclass(slots=True)
class HookOutcome:
    """What the hooks of one event decided together."""

    blocked: bool = False
    reason: str = ""
    approved: bool = False
    tool_input: dict[str, Any] | None = None
    """A replacement for the tool call's arguments (PreToolUse)."""
    context: list[str] = field(default_factory=list)
    """Text to add to the model's context (UserPromptSubmit, SessionStart)."""


@dataclass(slots=True)
class HostRun:
    """How one run of a configured host program went."""

    code: int | None
    """Its exit status (None: it did not run, or did not finish)."""
    stdout: str
    stderr: str
    problem: str | None = None
    """Why it did not run or finish, as the end of a sentence (``it could not start ...``)."""
    refused: bool = False
    """The check before the run refused it (``problem`` says why)."""


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
        self,
        event: HookEvent,
        data: Mapping[str, Any] | None = None,
        *,
        tool: str | None = None,
        match: str | None = None,
    ) -> HookOutcome:
        """Run the hooks of ``event`` (those whose matcher fits ``tool``, or ``match``
        for an event matched on something else) in order.

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
        subject = tool if tool is not None else match
        for config in self.hooks.get(event, []):
            matched = not config.matcher or subject is None or re.fullmatch(config.matcher, subject)
            if event in _MATCHED_EVENTS and not matched:
                continue
            if isinstance(config, HookFunction):
                called = await call_hook_function(config, payload)
                run = HostRun(
                    0 if called.problem is None else None, called.output, "", called.problem
                )
            else:
                run = await self._execute(config, payload)
            self._judge(event, config, run, outcome, tool)
            if outcome.blocked:
                break
            if outcome.tool_input is not None:
                payload["tool_input"] = outcome.tool_input
        return outcome

    async def _execute(self, config: HookConfig, payload: Mapping[str, Any]) -> HostRun:
        return await run_host_program(
            config.command,
            payload,
            programs=self.programs,
            root=self.root,
            timeout=config.timeout,
            retrust=self.retrust,
        )

    def _judge(
        self,
        event: HookEvent,
        config: AnyHook,
        run: HostRun,
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
        reason = data.get("reason") or specific.get("permissionDecisionReason") or ""
        reason = str(reason)
        if decision == "block" or permission == "deny":
            outcome.blocked = True
            outcome.reason = reason or "a hook blocked this."
            self._report(event, config, "blocked", _one_line(outcome.reason), tool)
            return
        if decision == "approve" or permission == "allow":
            outcome.approved = True
        new_input = data.get("tool_input", specific.get("updatedInput"))
        if event == "PreToolUse" and new_input is not None:
            if not isinstance(new_input, dict):
                self._report(
                    event, config, "failed", "its tool_input is not a JSON object; ignored.", tool
                )
                return
            outcome.tool_input = new_input
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


async def run_host_program(
    command: str,
    payload: Mapping[str, Any],
    *,
    programs: HostPrograms,
    root: Path,
    timeout: float,
    retrust: Callable[[str], Awaitable[bool]] | None = None,
) -> HostRun:
    """Run a configured host program as a hook runs: ``command`` split into words and
    checked (``programs``; ``retrust`` may ask about a changed trusted script), in
    ``root``, with ``payload`` as JSON on stdin, its process group killed after
    ``timeout`` seconds (and when it ends, for what it left behind)."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        return HostRun(None, "", "", f"its command cannot be split into words ({exc})")
    if not argv:
        return HostRun(None, "", "", "its command is empty")
    prepared = programs.prepare(argv)
    changed = prepared.changed if isinstance(prepared, Refused) else None
    # Checked again after the answer: bytes changed since the diff do not run.
    if changed and retrust is not None and await retrust(changed):
        prepared = programs.prepare(argv)
    if isinstance(prepared, Refused):
        return HostRun(None, "", "", f"it was not run: {prepared.reason}.", refused=True)
    env = {**os.environ, "PATH": prepared.path_env, "CLOVER_PROJECT_DIR": str(root)}
    try:
        proc = await asyncio.create_subprocess_exec(
            *prepared.argv,
            cwd=root,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group, killed as a whole
        )
    except OSError as exc:
        return HostRun(None, "", "", f"it could not start ({exc.strerror or exc})")
    data = json.dumps(payload).encode()
    try:
        out, err = await asyncio.wait_for(proc.communicate(data), timeout)
    except TimeoutError:
        _kill_group(proc.pid)
        await proc.wait()
        return HostRun(None, "", "", f"it did not finish within {timeout:g} s and was killed")
    except BaseException:
        _kill_group(proc.pid)
        raise
    finally:
        # Children it left behind in its group go too.
        _kill_group(proc.pid)
    stdout = out.decode("utf-8", errors="replace")
    stderr = err.decode("utf-8", errors="replace")
    code = proc.returncode
    if code is not None and code < 0:
        name = _signal_name(-code)
        return HostRun(code, stdout, stderr, f"it was killed by {name}")
    return HostRun(code, stdout, stderr)


async def notification_hooks(
    hooks: HookRunner | None, message: str, notification_type: str, title: str
) -> None:
    """Run the Notification hooks whose matcher fits ``notification_type`` (what they
    print is not used: they route the notification, they decide nothing)."""
    if hooks is None or not hooks.has("Notification"):
        return
    data = {"message": message, "title": title, "notification_type": notification_type}
    await hooks.run("Notification", data, match=notification_type)


def _one_line(text: str) -> str:
    """The first non-empty line of ``text``, at most 300 characters."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:300]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
