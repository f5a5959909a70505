"""What an agent holds of one conversation, and the ways its history is rewritten.

``Conversation`` is the state the turn loop (``loop.Agent``) runs on: the
messages and where each turn begins in them, the backend and settings they go
to, the tool dispatcher, the context budget and what the session has spent.
The history is rewritten only here: compaction (automatic when the next
request would crowd the window, or ``/compact``), ``/clear``, and the cut an
undo or ``/rewind`` makes; each such rewrite is recorded whole.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from clover_code import protocol as p
from clover_code.agent.extensions.hooks import HookRunner
from clover_code.agent.permissions.approval import Approver
from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.agent.turn.background import BackgroundWork
from clover_code.agent.turn.confidence import NoConfidenceNotice
from clover_code.agent.turn.context import Budget, TokenCounter
from clover_code.agent.turn.cost import Metered, Spend
from clover_code.agent.turn.dispatch import ToolDispatcher
from clover_code.agent.turn.images import Vision
from clover_code.agent.turn.nested import NestedInstructions
from clover_code.agent.turn.options import TurnLimits
from clover_code.config.settings import ApprovalMode, Settings
from clover_code.engine.base import Backend, Message, ToolSpec
from clover_code.errors import CloverError, ContextOverflow
from clover_code.tools.base import Tool, ToolContext
from clover_code.tools.spill import OutputSpill


class Conversation:
    """The messages of one session's conversation and what they are sent with; the
    turn loop (``Agent``) adds the turns."""

    def __init__(
        self,
        *,
        backend: Backend,
        tools: Sequence[Tool[Any]],
        context: ToolContext,
        settings: Settings,
        limits: TurnLimits,
        approver: Approver,
        approval_mode: ApprovalMode,
        system_prompt: str,
        emit: p.Emit,
        record_message: Callable[[Message], None],
        record_history: Callable[[list[Message]], None],
        spill: OutputSpill,
        messages: list[Message] | None = None,
        count_text: Callable[[str], int] | None = None,
        hooks: HookRunner | None = None,
        spend: Spend | None = None,
        background: BackgroundWork | None = None,
        commit: Callable[[], None] | None = None,
        confidence_notice: bool = False,
    ) -> None:
        self.backend = backend
        self.settings = settings
        self.spend = spend or Spend(settings.pricing, settings.max_cost)
        """What the session's requests cost (a child shares its parent's)."""
        self.limits = limits
        self.system_prompt = system_prompt
        self.emit = emit
        self._record = record_message
        self._commit = commit or (lambda: None)
        """Makes what was recorded durable (the transcript's group commit)."""
        self.messages: list[Message] = list(messages or [])
        self.dispatch = ToolDispatcher(
            tools=tools,
            context=context,
            approver=approver,
            approval_mode=approval_mode,
            policy=PermissionPolicy(
                settings.permissions,
                context.workspace.root,
                contained=context.sandbox is not None and context.sandbox.contained,
            ),
            spill=spill,
            emit=emit,
            on_todo=self._set_todo,
            hooks=hooks,
            ceiling=settings.managed.approval_or("full-auto"),
        )
        self.hooks = hooks
        self.background = background
        """Child agents running in the background, whose reports join the conversation."""
        self.nested = NestedInstructions(context.workspace.root)
        self.turn = sum(1 for m in self.messages if m.get("role") == "user")
        self._tools = tuple(tools)
        self._block = 0
        self._record_history = record_history
        self.counter = TokenCounter(count_text) if count_text else TokenCounter()
        self.budget = _budget(settings)
        self.vision = Vision()
        """Which models take the images of the conversation."""
        self.no_confidence = NoConfidenceNotice(emit if confidence_notice else None)
        """Says once that the engine reports no fill confidences (``confidence_notice``)."""
        self.todo: list[dict[str, Any]] = []
        self.stopped: str | None = None
        """Why the session cannot go on (see ``stop``), if it cannot."""
        users = (i for i, m in enumerate(self.messages) if m.get("role") == "user")
        self._turn_starts: dict[int, int] = dict(enumerate(users, 1))
        """Where each turn begins in ``messages`` (until history is rewritten); a resumed
        history's turns are numbered by its user messages, as ``turn`` counts them."""

    @functools.cached_property
    def _specs(self) -> list[ToolSpec]:
        """What the model is told of the tools, made for the first request: their JSON
        Schemas cost ~10 ms, which an app's session, open and waiting for the first
        prompt, does not need to pay before it is shown."""
        from clover_code.tools.schema_cache import save

        specs = [tool.spec() for tool in self._tools]
        save()
        return specs

    def switch_engine(self, backend: Backend, settings: Settings) -> None:
        """Ask ``backend`` (another model) from the next request on, with ``settings``
        (that model's window and tool-call reading)."""
        self.backend = backend
        self.settings = settings
        self.budget = _budget(settings)
        self.counter.reset()  # the new model's tokenizer counts differently

    def stop(self, reason: str) -> None:
        """End the running turn at its next step, and refuse later ones, as failed.

        For trouble that makes going on pointless (the transcript cannot be
        written); the reason is reported by whoever calls this."""
        self.stopped = reason

    @property
    def approval_mode(self) -> ApprovalMode:
        """The approval mode in force (front ends may switch it)."""
        return self.dispatch.approval_mode

    @approval_mode.setter
    def approval_mode(self, mode: ApprovalMode) -> None:
        self.dispatch.approval_mode = mode

    @property
    def approver(self) -> Approver:
        """Who answers approval requests."""
        return self.dispatch.approver

    def _set_todo(self, items: list[dict[str, Any]]) -> None:
        self.todo = items
        self.emit(p.TodoUpdated(items=[p.TodoItem.model_validate(i) for i in items]))

    def _add(self, message: Message) -> None:
        self.messages.append(message)
        self._record(message)

    async def _fit_context(self) -> CloverError | None:
        """Compact older turns when the next request would crowd the window."""
        size = self.counter.prompt(self.system_prompt, self.messages, self._specs)
        if size <= self.budget.compact_at:
            return None
        try:
            await self.compact(size)
        except CloverError as exc:
            return exc
        size = self.counter.prompt(self.system_prompt, self.messages, self._specs)
        if size > self.budget.prompt_limit:
            return ContextOverflow(
                f"the conversation needs about {size:,} tokens even after compaction, more than "
                f"the {self.budget.prompt_limit:,} the context window leaves for a prompt; "
                "start a new session (/clear) or ask for a smaller step."
            )
        return None

    async def compact(self, size: int | None = None) -> None:
        """Summarise older turns into one message (the ``/compact`` command)."""
        from clover_code.agent.turn.compaction import compact

        before = size or self.counter.prompt(self.system_prompt, self.messages, self._specs)
        if self.hooks is not None and self.hooks.has("PreCompact"):
            await self.hooks.run("PreCompact", {"trigger": "auto" if size else "manual"})
        # The system prompt and tool schemas are always sent: only the rest of
        # the budget is there for the history.
        fixed = TokenCounter(self.counter.count_text).prompt(self.system_prompt, [], self._specs)
        metered = Metered(self.backend, self.spend)  # the summary costs money too
        history, summary = await compact(
            metered,
            self.messages,
            self.counter,
            # Asked for (/compact), everything before the newest message is summarised:
            # a tail of the automatic share would leave nothing to summarise in a short
            # session.
            keep_tokens=max(256, (self.budget.compact_at - fixed) // 3) if size else 0,
            todo=self.todo,
        )
        self.nested.carry(history)
        self.messages = history
        self._turn_starts.clear()
        self.counter.reset()
        self._record_history(history)
        after = self.counter.prompt(self.system_prompt, self.messages, self._specs)
        self.emit(
            p.Compacted(
                summary=summary,
                tokens_before=before,
                tokens_after=after,
                cost=None if metered.cost is None else round(metered.cost, 8),
            )
        )

    def clear(self) -> None:
        """Forget the conversation (the ``/clear`` command); the transcript keeps it."""
        self.messages = []
        self._turn_starts.clear()
        self.todo = []
        self.counter.reset()
        self._record_history([])

    def forget_from(self, turn: int) -> bool:
        """Drop ``turn`` and every later turn from the conversation (after an undo);
        False, changing nothing, when the history was compacted or cleared since."""
        start = self._turn_starts.get(turn)
        if start is None:
            return False
        self.messages = self.messages[:start]
        self._turn_starts = {t: i for t, i in self._turn_starts.items() if t < turn}
        self.counter.reset()
        self._record_history(self.messages)
        return True

    def turn_back(self, count: int) -> int | None:
        """The oldest of the newest ``count`` turns the conversation still holds (None
        if it holds fewer): where ``/rewind count conversation`` cuts it."""
        turns = sorted(self._turn_starts)
        return turns[-count] if 0 < count <= len(turns) else None


def _budget(settings: Settings) -> Budget:
    """The context budget of a model with ``settings``' window."""
    return Budget(
        window=settings.context_window,
        response_reserve=settings.max_tokens
        or min(settings.response_reserve, settings.context_window // 4),
        threshold=settings.compact_threshold,
    )
