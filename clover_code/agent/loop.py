"""The turn loop: ask the model, run the tools it calls, repeat until it answers.

One ``Agent`` holds the conversation of a session. ``run_turn`` never raises
for engine or tool trouble: everything ends as protocol events and a
``TurnFinished`` with a status, and the conversation is left valid (every
tool call answered) so the session can go on or be resumed.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from clover_code import protocol as p
from clover_code.agent.approval import ApprovalRequest, Approver, command_prefix, verdict
from clover_code.config import ApprovalMode, Settings
from clover_code.engine import events as ev
from clover_code.engine.base import Backend, ChatRequest, Message
from clover_code.errors import CloverError, StreamInterrupted
from clover_code.tools.base import Tool, ToolContext, ToolResult

Emit = Callable[[p.Event], None]

INTERRUPTED_NOTE = "[interrupted by the user]"


@dataclass(slots=True)
class _Call:
    """A tool call as the model made it, and what came of it."""

    id: str
    name: str
    arguments: dict[str, Any]
    parse_error: str | None = None
    result: str | None = None
    malformed: bool = False


@dataclass(slots=True)
class _TurnState:
    """What a turn has produced so far, kept so an interruption loses nothing."""

    requests: int = 0
    malformed_streak: int = 0
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    phase: Literal["idle", "streaming", "tools"] = "idle"
    final_text: str = ""


class Agent:
    """Runs turns of one conversation against a backend with a set of tools."""

    def __init__(
        self,
        *,
        backend: Backend,
        tools: Sequence[Tool],
        context: ToolContext,
        settings: Settings,
        approver: Approver,
        approval_mode: ApprovalMode,
        system_prompt: str,
        emit: Emit,
        record_message: Callable[[Message], None],
        messages: list[Message] | None = None,
    ) -> None:
        self.backend = backend
        self.tools = {tool.name: tool for tool in tools}
        self.context = context
        self.settings = settings
        self.approver = approver
        self.approval_mode: ApprovalMode = approval_mode
        self.system_prompt = system_prompt
        self.emit = emit
        self._record = record_message
        self.messages: list[Message] = list(messages or [])
        self.allowed_prefixes: set[str] = set()
        self.turn = sum(1 for m in self.messages if m.get("role") == "user")
        self._specs = [tool.spec() for tool in tools]
        self._block = 0

    def _add(self, message: Message) -> None:
        self.messages.append(message)
        self._record(message)

    async def run_turn(self, text: str) -> p.TurnFinished:
        """Work on one user input until the model answers, a limit hits, or it is cancelled."""
        self.turn += 1
        self._add({"role": "user", "content": text})
        self.emit(p.TurnStarted(turn=self.turn, text=text))
        state = _TurnState()
        status: p.TurnStatus
        try:
            async with asyncio.timeout(self.settings.timeout):
                status = await self._loop(state)
        except TimeoutError:
            self._close_partial(state, "[stopped: the time limit was reached]")
            limit = self.settings.timeout
            self.emit(p.ErrorEvent(message=f"the task hit its time limit of {limit:g} s."))
            status = "timeout"
        except asyncio.CancelledError:
            # The interruption is handled here (the turn ends cleanly), so the
            # task's cancel request is withdrawn for whatever runs next.
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            self._close_partial(state, INTERRUPTED_NOTE)
            status = "interrupted"
        finished = p.TurnFinished(
            turn=self.turn,
            status=status,
            final_text=state.final_text,
            model_requests=state.requests,
        )
        self.emit(finished)
        return finished

    async def _loop(self, state: _TurnState) -> p.TurnStatus:
        while True:
            if state.requests >= self.settings.max_turns:
                self.emit(
                    p.ErrorEvent(
                        message=f"stopped after {state.requests} model requests "
                        f"(--max-turns {self.settings.max_turns}); raise the limit to go further."
                    )
                )
                return "max_turns"
            state.requests += 1
            failure = await self._respond(state)
            calls = state.calls
            self._add(self._assistant_message(state, calls))
            state.phase = "tools"
            if failure is not None:
                self.emit(p.ErrorEvent(message=str(failure)))
                return "failed"
            if not calls:
                state.final_text = "".join(state.content)
                return "completed"
            await self._run_calls(calls)
            for call in calls:
                self._add({"role": "tool", "tool_call_id": call.id, "content": call.result or ""})
            state.phase = "idle"
            if all(call.malformed for call in calls):
                state.malformed_streak += 1
                if state.malformed_streak > self.settings.tool_retries:
                    self.emit(
                        p.ErrorEvent(
                            message=f"the model made {state.malformed_streak} malformed tool "
                            "calls in a row; the turn was stopped."
                        )
                    )
                    return "failed"
            else:
                state.malformed_streak = 0
            state.content, state.reasoning, state.calls = [], [], []

    # ----------------------------------------------------------- model call

    async def _respond(self, state: _TurnState) -> CloverError | None:
        """Stream one model response into ``state``; return the failure, if any."""
        request = ChatRequest(
            messages=[{"role": "system", "content": self.system_prompt}, *self._wire_messages()],
            tools=self._specs,
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
            enable_thinking=self.settings.thinking,
        )
        failure: CloverError | None = None
        tokens = blocks = 0
        first_block: float | None = None
        prompt_tokens = completion_tokens = 0
        # Left "streaming" if cancelled mid-stream, so _close_partial knows.
        state.phase = "streaming"
        async with aclosing(self.backend.stream(request)) as stream:
            async for event in stream:
                if isinstance(event, ev.BlockCommitted):
                    first_block = first_block or time.monotonic()
                    tokens += event.token_count
                    blocks += 1
                    self.emit(
                        p.BlockCommitted(
                            block=self._block,
                            text=event.text,
                            token_count=event.token_count,
                            steps=event.steps,
                        )
                    )
                    self._block += 1
                elif isinstance(event, ev.ContentDelta):
                    state.content.append(event.text)
                    self.emit(p.ContentDelta(text=event.text))
                elif isinstance(event, ev.ReasoningDelta):
                    state.reasoning.append(event.text)
                    self.emit(p.ReasoningDelta(text=event.text))
                elif isinstance(event, ev.ToolCallEnd):
                    state.calls.append(
                        _Call(event.id, event.name, event.arguments, parse_error=event.error)
                    )
                elif isinstance(event, ev.BlockDraft):
                    self.emit(
                        p.BlockDraft(
                            block=self._block,
                            step=event.step,
                            tokens=[
                                None if m else t
                                for t, m in zip(event.tokens, event.masked, strict=True)
                            ],
                            confidences=event.confidences,
                        )
                    )
                elif isinstance(event, ev.Usage):
                    prompt_tokens, completion_tokens = event.prompt_tokens, event.completion_tokens
                elif isinstance(event, ev.Failed):
                    failure = event.error
                elif isinstance(event, ev.Finished) and event.reason == "length":
                    self.emit(p.Notice(level="warning", text="the response hit the token limit."))
        state.phase = "idle"
        elapsed = time.monotonic() - first_block if first_block else 0.0
        self.emit(
            p.UsageReport(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens or tokens,
                context_window=self.settings.context_window,
                tokens_per_second=tokens / elapsed if elapsed > 0 else None,
                blocks_per_second=blocks / elapsed if elapsed > 0 else None,
            )
        )
        if isinstance(failure, StreamInterrupted):
            # What arrived is kept, but half-received tool calls must not run.
            state.calls = []
        return failure

    def _wire_messages(self) -> list[Message]:
        """The history as sent to the model (reasoning stays in the transcript only)."""
        return [
            {k: v for k, v in m.items() if k != "reasoning_content"}
            if "reasoning_content" in m
            else m
            for m in self.messages
        ]

    @staticmethod
    def _assistant_message(state: _TurnState, calls: list[_Call]) -> Message:
        message: Message = {"role": "assistant", "content": "".join(state.content)}
        if state.reasoning:
            message["reasoning_content"] = "".join(state.reasoning)
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                for c in calls
            ]
        return message

    def _close_partial(self, state: _TurnState, note: str) -> None:
        """Leave a valid conversation after an interruption: keep what arrived,
        and answer every tool call that was already recorded."""
        if state.phase == "streaming":
            # Half-received tool calls never ran; keep the text with a note.
            state.content.append(("\n\n" if state.content else "") + note)
            self._add(self._assistant_message(state, []))
        elif state.phase == "tools":
            for call in state.calls:
                if call.result is None:
                    call.result = f"cancelled: {note}"
                self._add({"role": "tool", "tool_call_id": call.id, "content": call.result})
        state.phase = "idle"

    # ------------------------------------------------------------ tools

    async def _run_calls(self, calls: list[_Call]) -> None:
        """Run calls in order; consecutive read-only calls run concurrently."""
        batch: list[_Call] = []
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is not None and tool.kind in ("read", "search"):
                batch.append(call)
                continue
            if batch:
                await asyncio.gather(*(self._run_call(c) for c in batch))
                batch = []
            await self._run_call(call)
        if batch:
            await asyncio.gather(*(self._run_call(c) for c in batch))

    async def _run_call(self, call: _Call) -> None:
        tool = self.tools.get(call.name)
        started = time.monotonic()
        if tool is None:
            known = ", ".join(sorted(self.tools))
            self._malformed(call, f"unknown tool '{call.name}'. Available tools: {known}.")
            return
        if call.parse_error:
            self._malformed(call, f"{call.parse_error}\n{self._schema_hint(tool)}")
            return
        try:
            args = tool.Args.model_validate(call.arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"'{'.'.join(str(x) for x in e['loc']) or '(arguments)'}': {e['msg']}"
                for e in exc.errors()
            )
            self._malformed(
                call,
                f"invalid arguments for tool '{tool.name}': {problems}.\n{self._schema_hint(tool)}",
            )
            return
        summary = tool.summary(args)
        self.emit(
            p.ToolCallStarted(
                call_id=call.id,
                name=tool.name,
                kind=tool.kind,
                arguments=call.arguments,
                summary=summary,
            )
        )
        refusal = await self._approve(call, tool, args, summary)
        if refusal is not None:
            call.result = refusal
            self._finish(call, "denied", refusal, {}, started)
            return
        result = await self._execute(call, tool, args)
        call.result = result.text
        status = "error" if result.is_error else "ok"
        self._finish(call, status, result.text, result.display, started)

    async def _approve(self, call: _Call, tool: Tool, args: BaseModel, summary: str) -> str | None:
        """None when the call may run, else the refusal the model sees."""
        command = getattr(args, "command", None)
        prefix = command_prefix(command) if isinstance(command, str) else None
        decision = verdict(self.approval_mode, tool.kind)
        if decision == "ask" and prefix and prefix in self.allowed_prefixes:
            decision = "allow"
        if decision == "allow":
            return None
        if decision == "deny":
            return (
                f"refused: approval mode '{self.approval_mode}' does not allow "
                f"{tool.kind} tools such as {tool.name}."
            )
        answer = await self.approver.request(
            ApprovalRequest(call.id, tool.name, tool.kind, summary, call.arguments, prefix)
        )
        if answer.allowed:
            if answer.remember_prefix:
                self.allowed_prefixes.add(answer.remember_prefix)
            return None
        return "denied: " + (answer.feedback or "the user did not allow this call.")

    async def _execute(self, call: _Call, tool: Tool, args: BaseModel) -> ToolResult:
        def on_output(text: str) -> None:
            self.emit(p.ToolOutput(call_id=call.id, text=text))

        ctx = ToolContext(
            workspace=self.context.workspace,
            sandbox=self.context.sandbox,
            shell_timeout=self.context.shell_timeout,
            output_limit=self.context.output_limit,
            on_output=on_output,
        )
        try:
            return await tool.run(args, ctx)
        except CloverError as exc:
            return ToolResult(text=f"error: {exc}", is_error=True)

    def _malformed(self, call: _Call, message: str) -> None:
        call.malformed = True
        call.result = f"error: {message}"
        self.emit(
            p.ToolCallStarted(
                call_id=call.id, name=call.name, kind="other", arguments=call.arguments, summary=""
            )
        )
        self._finish(call, "error", call.result, {}, time.monotonic())

    def _finish(
        self, call: _Call, status: Any, text: str, display: dict[str, Any], started: float
    ) -> None:
        self.emit(
            p.ToolCallFinished(
                call_id=call.id,
                name=call.name,
                status=status,
                result=text,
                display=display,
                duration=time.monotonic() - started,
            )
        )

    @staticmethod
    def _schema_hint(tool: Tool) -> str:
        return f"The arguments of '{tool.name}' must match this JSON schema: " + json.dumps(
            tool.spec().parameters
        )
