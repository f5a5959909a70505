"""Running the model's tool calls: validation, approval, execution, results.

A malformed call (unknown tool, arguments that do not parse, hostile values
that ``Tool.screen`` refuses, arguments that do not match the schema) never
reaches the permission check or the tool: it becomes an error result that
tells the model what to fix. ``screen`` runs before the call is recorded, so
the transcript and the events only ever carry a safe copy of the arguments.

No single call can end the session: an unexpected exception from the
permission check, the approver or the tool becomes a failed result and an
error event (its traceback goes to this module's logger at debug level).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ValidationError

from clover_code import protocol as p
from clover_code.agent.extensions.hooks import HookRunner
from clover_code.agent.permissions.approval import ApprovalRequest, Approver
from clover_code.agent.permissions.edit_preview import EditAllowance, preview_edit
from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.agent.turn.call_text import printable_result, problem
from clover_code.agent.turn.confidence import EditRater
from clover_code.agent.turn.early import EarlyCalls, Slot
from clover_code.agent.turn.options import TurnOptions
from clover_code.agent.turn.plan import PLAN_MODE, plan_tools
from clover_code.agent.turn.plan import refusal as plan_refusal
from clover_code.config.settings import ApprovalMode
from clover_code.errors import CloverError, WorkspaceError
from clover_code.protocol.confidence import EditConfidence
from clover_code.protocol.json_text import printable
from clover_code.tools.arguments import CONTENT_LIMIT, screen_arguments
from clover_code.tools.base import Tool, ToolContext, ToolResult
from clover_code.tools.spill import OutputSpill

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ToolCall:
    """A tool call as the model made it, and what came of it."""

    id: str
    name: str
    arguments: dict[str, Any]
    parse_error: str | None = None
    result: str | None = None
    malformed: bool = False
    problem: str | None = None
    """What ``ToolDispatcher.screen`` found wrong with the arguments."""
    screened: bool = False
    confidence: EditRater | None = None
    """Rates an edit's diff by the fill confidences of the tokens that wrote it."""


class ToolDispatcher:
    """Runs tool calls for an agent and reports them as protocol events."""

    def __init__(
        self,
        *,
        tools: Sequence[Tool[Any]],
        context: ToolContext,
        approver: Approver,
        approval_mode: ApprovalMode,
        policy: PermissionPolicy,
        spill: OutputSpill,
        emit: p.Emit,
        on_todo: Callable[[list[dict[str, Any]]], None],
        hooks: HookRunner | None = None,
        ceiling: ApprovalMode = "full-auto",
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.ceiling: ApprovalMode = ceiling
        """The loosest approval mode allowed (an administrator's max_approval)."""
        self.context = context
        self.approver = approver
        self.approval_mode: ApprovalMode = approval_mode
        self.policy = policy
        self.spill = spill
        self.emit = emit
        self.on_todo = on_todo
        self.hooks = hooks
        self.edits = EditAllowance()
        self._plan_tools = plan_tools(tools)

    def offered(self, turn: TurnOptions) -> frozenset[str] | None:
        """The tools the model may call in ``turn`` (None: every tool): its allowed
        tools (a custom command's), narrowed further in plan mode."""
        if self.approval_mode != PLAN_MODE:
            return turn.allowed_tools
        if turn.allowed_tools is None:
            return self._plan_tools
        return self._plan_tools & turn.allowed_tools

    def screen(self, calls: list[ToolCall]) -> None:
        """Check each call's raw arguments and keep only a safe copy of them.

        Runs before the calls are recorded: lone surrogates, huge strings and
        non-finite numbers never reach the transcript or the front ends.
        """
        for call in calls:
            if call.screened:
                continue
            tool = self.tools.get(call.name)
            if tool is not None:
                screened = tool.screen(call.arguments)
            else:
                screened = screen_arguments(call.arguments, limits={}, default_limit=CONTENT_LIMIT)
            call.arguments, call.problem, call.screened = screened.arguments, screened.problem, True

    def may_change_things(self, calls: list[ToolCall]) -> bool:
        """Whether a call may have effects (an edit, a command, an MCP tool, a child
        agent): only reads, searches and fetches are known to have none."""
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is not None and tool.kind not in ("read", "search", "fetch"):
                return True
        return False

    async def run_calls(
        self, calls: list[ToolCall], turn: TurnOptions, early: EarlyCalls[ToolCall] | None = None
    ) -> None:
        """Run calls in order; consecutive read-only (or ``concurrent``) calls run concurrently.

        Calls ``early`` started while the response came are waited for in their place."""
        batch: list[ToolCall] = []
        for call in calls:
            tool = self.tools.get(call.name)
            if early is not None and early.started(call.id):
                batch.append(call)
                continue
            if tool is not None and (tool.kind in ("read", "search") or tool.concurrent):
                batch.append(call)
                continue
            if batch:
                await asyncio.gather(*(self._run_or_finish(c, turn, early) for c in batch))
                batch = []
            await self._run_or_finish(call, turn, early)
        if batch:
            await asyncio.gather(*(self._run_or_finish(c, turn, early) for c in batch))

    async def _run_or_finish(
        self, call: ToolCall, turn: TurnOptions, early: EarlyCalls[ToolCall] | None
    ) -> None:
        if early is None:
            await self.run_call(call, turn)
        elif early.started(call.id):
            await early.finish(call.id)
        else:
            # Hooks and approvals in the order of the calls: after the early ones'.
            await early.checked()
            await self.run_call(call, turn)

    async def run_call(self, call: ToolCall, turn: TurnOptions, slot: Slot | None = None) -> None:
        """Validate, approve and run one call of ``turn``; its result is always set.

        ``slot``: the call started before its response ended (``EarlyCalls``): its
        checks wait for the calls before it, and its events are held by the slot."""
        emit = self.emit if slot is None else slot.emit
        if slot is not None:
            await slot.my_turn()
        self.screen([call])
        tool = self.tools.get(call.name)
        started = time.monotonic()
        if tool is None:
            known = ", ".join(sorted(self.tools))
            self._malformed(call, f"unknown tool '{call.name}'. Available tools: {known}.", emit)
            return
        if call.parse_error:
            self._malformed(call, f"{call.parse_error}\n{self._schema_hint(tool)}", emit)
            return
        if call.problem:
            self._malformed(call, f"invalid arguments for tool '{tool.name}': {call.problem}", emit)
            return
        try:
            args = tool.Args.model_validate(call.arguments)
        except ValidationError as exc:
            problems = ", ".join(problem(e) for e in exc.errors()[:5])
            schema = json.dumps(tool.spec().parameters)
            self._malformed(
                call,
                f"invalid arguments for tool '{tool.name}': {problems}; send arguments that "
                f"match its JSON schema {schema}",
                emit,
            )
            return
        hook_refusal, approved = None, False
        if self.hooks is not None and self.hooks.has("PreToolUse"):
            args, hook_refusal, approved = await self._pre_tool_hooks(call, tool, args)
        try:
            summary = tool.summary(args)
        except Exception:
            # Only the card's one-line label is lost; the call itself can go on.
            log.debug("summary of %s failed", tool.name, exc_info=True)
            summary = tool.name
        emit(
            p.ToolCallStarted(
                call_id=call.id,
                name=tool.name,
                kind=tool.kind,
                arguments=call.arguments,
                summary=summary,
            )
        )
        offered = self.offered(turn)
        if self.approval_mode == PLAN_MODE and offered is not None and tool.name not in offered:
            hook_refusal = plan_refusal(offered)
        elif turn.allowed_tools is not None and tool.name not in turn.allowed_tools:
            allowed = ", ".join(sorted(turn.allowed_tools)) or "none"
            hook_refusal = f"refused: this command allows only these tools: {allowed}."
        try:
            if slot is not None and hook_refusal is None and self.verdict(tool, args) == "ask":
                # A hook changed the call: ask only once the response is whole.
                await slot.response_ended()
            refusal = hook_refusal or await self._approve(call, tool, args, summary, approved)
        except Exception as exc:
            self._unexpected(call, tool, exc, "check", started, emit)
            return
        if refusal is not None:
            call.result = refusal
            self._finish(call, "denied", refusal, None, started, emit)
            return
        if slot is not None:
            slot.admit()
        started = time.monotonic()  # the duration is the run's, not the wait for the user
        streamed: list[str] = []
        try:
            result = await self._execute(call, tool, args, streamed, turn, emit)
            call.result = self.spill.fit(call.id, result.text, "".join(streamed) or None)
        except Exception as exc:
            self._unexpected(call, tool, exc, "run", started, emit)
            return
        if isinstance(result.display, p.TodoList):
            self.on_todo([item.model_dump() for item in result.display.todo])
        for notice in result.notices:
            emit(p.Notice(level="warning", text=notice))
        status = "error" if result.is_error else "ok"
        shown = result.text
        if self.hooks is not None and self.hooks.has("PostToolUse"):
            response = {"result": result.text, "is_error": result.is_error}
            data = {"tool_name": tool.name, "tool_input": call.arguments, "tool_response": response}
            after = await self.hooks.run("PostToolUse", data, tool=tool.name)
            if after.blocked:
                # What the model sees gets the hook's reason, and so does the event.
                note = f"\n\n[PostToolUse hook] {after.reason}"
                call.result += note
                shown += note
        self._finish(call, status, shown, result.display, started, emit)

    def verdict(self, tool: Tool[Any], args: BaseModel) -> str:
        """What the approval mode and rules say of a call with ``args`` before anyone
        is asked: allow, ask or deny."""
        ruling = self.policy.decide(
            self.approval_mode, tool.name, tool.kind, args.model_dump(), on_host=tool.runs_on_host
        )
        return ruling.verdict

    async def _pre_tool_hooks(
        self, call: ToolCall, tool: Tool[Any], args: BaseModel
    ) -> tuple[BaseModel, str | None, bool]:
        """Run the PreToolUse hooks: the arguments to use, a refusal, and whether
        a hook approved the call (which only spares asking the user)."""
        assert self.hooks is not None
        data = {"tool_name": tool.name, "tool_input": call.arguments}
        outcome = await self.hooks.run("PreToolUse", data, tool=tool.name)
        if outcome.blocked:
            return args, f"refused by a PreToolUse hook: {outcome.reason}", False
        if outcome.tool_input is not None:
            # Screened and validated like the model's own arguments.
            screened = tool.screen(outcome.tool_input)
            try:
                if screened.problem:
                    raise ValueError(screened.problem)
                args = tool.Args.model_validate(screened.arguments)
            except (ValidationError, ValueError) as exc:
                why = f"{exc.error_count()} errors" if isinstance(exc, ValidationError) else exc
                return args, f"refused: a PreToolUse hook gave invalid arguments ({why}).", False
            call.arguments = screened.arguments
        return args, None, outcome.approved

    def _unexpected(
        self,
        call: ToolCall,
        tool: Tool[Any],
        exc: Exception,
        stage: str,
        started: float,
        emit: p.Emit,
    ) -> None:
        """An exception nobody meant to raise: a failed call and an error event, not a crash."""
        log.debug("tool call %s (%s) failed to %s", call.id, tool.name, stage, exc_info=exc)
        detail = f"{type(exc).__name__}: {exc}"[:300]
        message = (
            f"the '{tool.name}' call failed unexpectedly ({detail}); it did not complete, "
            "so try another way (and report this as a bug)."
        )
        call.result = f"error: {message}"
        emit(p.ErrorEvent(message=message))
        self._finish(call, "error", call.result, None, started, emit)

    async def _approve(
        self, call: ToolCall, tool: Tool[Any], args: BaseModel, summary: str, approved: bool = False
    ) -> str | None:
        """None when the call may run, else the refusal the model sees.

        ``approved`` (a PreToolUse hook's "approve") and a PermissionRequest hook's
        allow spare asking the user, never more: deny rules, the mode's refusals,
        protected paths and the administrator's limit still stand."""
        arguments = args.model_dump()
        command = arguments.get("command")
        shell = tool.name == "shell" and isinstance(command, str)
        command = command if isinstance(command, str) else ""
        ruling = self.policy.decide(
            self.approval_mode, tool.name, tool.kind, arguments, on_host=tool.runs_on_host
        )
        if ruling.verdict == "allow":
            return None
        if ruling.verdict == "deny":
            return f"refused: {ruling.reason}"
        path = arguments.get("path") if tool.kind == "edit" else None
        if isinstance(path, str):
            try:  # a write the tool will refuse anyway is refused before anyone is asked
                self.context.workspace.resolve(path, write=True)
            except WorkspaceError as exc:
                return f"refused: {exc}."
        if approved and self._hook_may_allow(tool, arguments):
            return None
        if self.edits.covers(path):
            return None
        from clover_code.agent.extensions.hook_calls import permission_request

        hooked = await permission_request(self.hooks, tool.name, call.arguments)
        if hooked.behavior == "deny":
            return f"denied by a PermissionRequest hook: {hooked.message or 'no reason given.'}"
        if hooked.behavior == "allow" and self._hook_may_allow(tool, arguments):
            return None
        prefix = self.policy.session_prefix(command) if shell else None
        # Only approvers that show it get the dry run (an editor's would cost a file read).
        preview = await preview_edit(tool, args, self.context) if self.approver.shows_diff else None
        answer = await self.approver.request(
            ApprovalRequest(
                call.id,
                tool.name,
                tool.kind,
                summary,
                call.arguments,
                prefix,
                protected=ruling.protected,
                diff=preview.diff if preview else None,
                preview=preview,
                low_confidence=_rated(call, tool, preview.diff if preview else None),
                mode_allows=self.approval_mode == "full-auto" and not ruling.protected,
            )
        )
        if answer.allowed:
            if answer.remember_prefix and shell:
                self.policy.allow_for_session(answer.remember_prefix)
            self.edits.remember(answer.remember_edits, path)
            return None
        reason = answer.feedback or "the user did not allow this call."
        return f"denied: {reason} ({ruling.reason})"

    def _hook_may_allow(self, tool: Tool[Any], arguments: dict[str, Any]) -> bool:
        """Whether a hook's allow may spare asking: where the ceiling mode would run the
        call without asking (else a notice says why not)."""
        ruling = self.policy.decide(
            self.ceiling, tool.name, tool.kind, arguments, on_host=tool.runs_on_host
        )
        if ruling.verdict != "allow":
            self.emit(
                p.Notice(text=f"a hook's allow of {tool.name} was not taken: {ruling.reason}")
            )
        return ruling.verdict == "allow"

    async def _execute(
        self,
        call: ToolCall,
        tool: Tool[Any],
        args: BaseModel,
        streamed: list[str],
        turn: TurnOptions,
        emit: p.Emit,
    ) -> ToolResult:
        def on_output(text: str) -> None:
            text = printable(text)
            streamed.append(text)
            emit(p.ToolOutput(call_id=call.id, text=text))

        try:
            context = replace(
                self.context,
                on_output=on_output,
                call_id=call.id,
                allowed_tools=turn.allowed_tools,
            )
            result = await tool.run(args, context)
        except CloverError as exc:
            result = ToolResult(text=f"error: {exc}", is_error=True)
        return printable_result(result)

    def _malformed(self, call: ToolCall, message: str, emit: p.Emit) -> None:
        call.malformed = True
        call.result = f"error: {message}"
        emit(
            p.ToolCallStarted(
                call_id=call.id, name=call.name, kind="other", arguments=call.arguments, summary=""
            )
        )
        self._finish(call, "error", call.result, None, time.monotonic(), emit)

    def _finish(
        self,
        call: ToolCall,
        status: Any,
        text: str,
        display: p.ToolDisplay | None,
        started: float,
        emit: p.Emit,
    ) -> None:
        emit(
            p.ToolCallFinished(
                call_id=call.id,
                name=call.name,
                status=status,
                result=text,
                display=display,
                duration=time.monotonic() - started,
                low_confidence=_rated(call, self.tools.get(call.name), display),
            )
        )

    @staticmethod
    def _schema_hint(tool: Tool[Any]) -> str:
        return f"The arguments of '{tool.name}' must match this JSON schema: " + json.dumps(
            tool.spec().parameters
        )


def _rated(
    call: ToolCall, tool: Tool[Any] | None, diff: str | p.ToolDisplay | None
) -> EditConfidence | None:
    """The low-confidence tokens of the edit ``call`` made as ``diff`` (or as the diff of
    its ``FileEdit`` or ``PatchApplied`` display), looked for in the arguments ``tool``
    writes; None when not known."""
    if isinstance(diff, p.FileEdit | p.PatchApplied):
        diff = diff.diff
    if call.confidence is None or not isinstance(diff, str) or not diff:
        return None
    written = tool.written_arguments if tool is not None else frozenset()
    return call.confidence.rate(diff, written)
