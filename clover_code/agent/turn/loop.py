"""The turn loop: ask the model, run the tools it calls, repeat until it answers.

One ``Agent`` holds the conversation of a session (``conversation``: its
messages, its budget and the ways its history is rewritten). ``run_turn`` never
raises for engine or tool trouble: everything ends as protocol events and a
``TurnFinished`` with a status, and the conversation is left valid (every
tool call answered) so the session can go on or be resumed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from clover_code import protocol as p
from clover_code.agent.extensions.hooks import prompt_hooks, stop_hooks
from clover_code.agent.turn.conversation import Conversation
from clover_code.agent.turn.early import EarlyCalls
from clover_code.agent.turn.images import user_message
from clover_code.agent.turn.options import PLAIN_TURN, TurnOptions
from clover_code.agent.turn.plan import PLAN_MODE, PLAN_PROMPT
from clover_code.agent.turn.tool_call import ToolCall
from clover_code.engine.base import ChatRequest
from clover_code.engine.messages import text_only
from clover_code.errors import CloverError

if TYPE_CHECKING:
    # One model response (streaming it, its calls started early) is loaded by the
    # first turn: an app's session is open, and shown, before any.
    from clover_code.agent.turn.respond import TurnState

INTERRUPTED_NOTE = "[interrupted by the user]"


class Agent(Conversation):
    """Runs turns of one conversation against a backend with a set of tools."""

    async def run_turn(
        self,
        text: str,
        options: TurnOptions = PLAIN_TURN,
        images: Sequence[p.ImageAttachment] = (),
    ) -> p.TurnFinished:
        """Work on one user input until the model answers, a limit hits, or it is cancelled.

        ``options.allowed_tools``, when set (a custom command's), narrows the tools;
        ``images`` go with the text to a model that takes them."""
        from clover_code.agent.turn.respond import TurnState

        self.turn += 1
        self._turn_starts[self.turn] = len(self.messages)
        content, refusal = await prompt_hooks(self.hooks, text)
        if refusal is not None:
            return self._refused(text, refusal)
        self._add(user_message(content, images))
        self.emit(p.TurnStarted(turn=self.turn, text=text))
        if images and not self.vision.sends(self.settings, self.backend):
            left_out = self.vision.left_out(self.settings, self.backend, images)
            self.emit(p.Notice(level="warning", text=left_out))
        state = TurnState()
        status: p.TurnStatus
        try:
            deadline = self.limits.deadline
            if deadline is None and self.limits.timeout is not None:
                deadline = asyncio.get_running_loop().time() + self.limits.timeout
            async with asyncio.timeout_at(deadline):
                status = await self._loop(state, options)
        except TimeoutError:
            self._close_partial(state, "[stopped: the time limit was reached]")
            limit = self.limits.timeout
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
            token_limit=status == "completed" and state.token_limit,
        )
        self.emit(finished)
        self._commit()
        return finished

    def _refused(self, text: str, reason: str) -> p.TurnFinished:
        """A prompt a UserPromptSubmit hook refused: the model never sees it."""
        self.emit(p.TurnStarted(turn=self.turn, text=text))
        self.emit(p.ErrorEvent(message=f"a UserPromptSubmit hook refused the prompt: {reason}"))
        finished = p.TurnFinished(turn=self.turn, status="failed", blocked=True)
        self.emit(finished)
        return finished

    async def _loop(self, state: TurnState, options: TurnOptions) -> p.TurnStatus:
        while True:
            if self.stopped is not None:
                if state.requests == 0:
                    # A turn asked for after the stop: say again why nothing happens.
                    self.emit(p.ErrorEvent(message=self.stopped, fatal=True))
                return "failed"
            if state.requests >= self.limits.max_requests:
                self.emit(
                    p.ErrorEvent(
                        message=f"stopped after {state.requests} model requests "
                        f"(--max-turns {self.limits.max_requests}); raise the limit to go further."
                    )
                )
                return "max_turns"
            await self._take_background()
            budget = self.spend.limit(self.backend.name, self.backend.model)
            if budget is not None:
                self.emit(p.ErrorEvent(message=budget.message))
                return budget.status
            state.requests += 1
            overflow = await self._fit_context()
            if overflow is not None:
                self.emit(p.ErrorEvent(message=str(overflow)))
                return "failed"
            # The step's one fsync: the previous step is durable before the next begins.
            self._commit()
            early = self._early_calls(options)
            async with early:
                status = await self._step(state, options, early)
            if status is not None:
                return status

    def _early_calls(self, options: TurnOptions) -> EarlyCalls[ToolCall]:
        """What starts the reading calls of the next response while it still comes."""
        from clover_code.agent.turn.early_check import may_start_early

        return EarlyCalls(
            enabled=self.settings.early_tools,
            eligible=lambda call: may_start_early(self.dispatch, call, options),
            start=lambda call, slot: self.dispatch.run_call(call, options, slot),
            emit=self.emit,
        )

    async def _step(
        self, state: TurnState, options: TurnOptions, early: EarlyCalls[ToolCall]
    ) -> p.TurnStatus | None:
        """One model response and its tool calls; the turn's status when it ends the turn."""
        from clover_code.agent.turn.respond import assistant_message

        failure = await self._respond(state, options, early)
        if failure is not None:
            # Calls of a failed response never run (those started early are
            # cancelled, unreported); what text arrived is kept.
            await early.discard()
            state.calls = []
        else:
            early.release()
        calls = state.calls
        # Before the calls are recorded: only safe copies of the arguments are kept.
        self.dispatch.screen(calls)
        self._add(assistant_message(state, calls))
        state.phase = "tools"
        if failure is not None:
            self.emit(p.ErrorEvent(message=str(failure)))
            return "failed"
        if self.stopped is not None:
            self._close_partial(state, "[stopped: the session cannot go on]")
            return "failed"
        if not calls:
            more = await stop_hooks(self.hooks, state.stop_hook_active, "".join(state.content))
            if more is not None:
                self._add({"role": "user", "content": more})
                state.content, state.reasoning, state.stop_hook_active = [], [], True
                return None
            background = self.background
            if options.wait_for_background and background and background.pending():
                # Not the final answer yet: the model hears from the children first.
                state.phase = "idle"
                await background.wait()
                state.content, state.reasoning = [], []
                return None
            state.final_text = "".join(state.content)
            return "completed"
        if self.dispatch.may_change_things(calls):
            self._commit()  # the calls are on disk before anything they do
        await self.dispatch.run_calls(calls, options, early)
        added = self.nested.annotate(calls)
        if added:
            self.emit(p.Notice(text=f"added the instructions of {', '.join(added)}."))
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
        return None

    # ----------------------------------------------------------- model call

    async def _take_background(self) -> None:
        """Add the reports of the background children that ended since the last request."""
        if self.background is None:
            return
        # Shielded: a merge under way finishes (and stays ready for the next turn)
        # even when this turn is interrupted.
        await asyncio.shield(self.background.prepare())
        for report in self.background.take():
            self._add({"role": "user", "content": report})

    async def _respond(
        self, state: TurnState, options: TurnOptions, early: EarlyCalls[ToolCall]
    ) -> CloverError | None:
        """Stream one model response into ``state``; return the failure, if any."""
        from clover_code.agent.turn.respond import stream_response, wire_messages

        allowed = self.dispatch.offered(options)
        system = self.system_prompt
        if self.approval_mode == PLAN_MODE:
            system += "\n\n" + PLAN_PROMPT
        history = wire_messages(self.messages)
        if not self.vision.sends(self.settings, self.backend):
            history = text_only(history)
        request = ChatRequest(
            messages=[{"role": "system", "content": system}, *history],
            tools=[s for s in self._specs if allowed is None or s.name in allowed],
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
            enable_thinking=self.settings.thinking,
        )
        failure, self._block = await stream_response(
            self.backend,
            request,
            state,
            emit=self.emit,
            settings=self.settings,
            counter=self.counter,
            estimated_prompt=self.counter.prompt(self.system_prompt, self.messages, self._specs),
            block=self._block,
            spend=self.spend,
            on_call=early.offer,
            no_confidence=self.no_confidence,
        )
        if state.images_refused:
            self.vision.refused.add(self.backend.model)
        return failure

    def _close_partial(self, state: TurnState, note: str) -> None:
        """Leave a valid conversation after an interruption: keep what arrived,
        and answer every tool call that was already recorded."""
        from clover_code.agent.turn.respond import assistant_message

        if state.phase == "streaming":
            # Half-received tool calls never ran; keep the text with a note.
            state.content.append(("\n\n" if state.content else "") + note)
            self._add(assistant_message(state, []))
        elif state.phase == "tools":
            for call in state.calls:
                if call.result is None:
                    call.result = f"cancelled: {note}"
                self._add({"role": "tool", "tool_call_id": call.id, "content": call.result})
        state.phase = "idle"
