"""What a session's model requests cost, and its budget (``pricing``, ``max_cost``).

Each response is priced from the token counts its engine reported (or, when it
reported none, the ones counted here) with the model's ``[pricing.MODEL]`` entry:
prompt tokens the server read from its cache at ``cached_input``, the other
prompt tokens at ``input``, generated ones at ``output``. A local engine (hf,
SGLang in process) costs 0 unless priced; any other model without an entry has
an unknown cost (null in the events), and a budget cannot be kept with it.

One ``Spend`` serves a session: the parent agent and its children charge it, so
``max_cost`` counts everything. The turn loop asks ``limit`` before each
request: once the money spent reaches the budget, the turn ends with status
``max_cost`` (the request that crossed it has completed, so the total may pass
the budget by one response's cost).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass

from clover_code import protocol as p
from clover_code.config.sections import ModelPrice
from clover_code.engine import events as ev
from clover_code.engine.base import Backend, ChatRequest
from clover_code.errors import EngineError
from clover_code.protocol.cost import money

__all__ = ["LOCAL_ENGINES", "BudgetStop", "Metered", "Spend", "price_of", "unpriced_budget"]

LOCAL_ENGINES = frozenset({"hf", "sglang"})
"""Engines that run on this machine: no per-token price unless one is configured."""

_FREE = ModelPrice(input=0, output=0)


def price_of(pricing: Mapping[str, ModelPrice], engine: str, model: str) -> ModelPrice | None:
    """The price of ``model`` served by ``engine``; None when it is unknown."""
    price = pricing.get(model)
    if price is None and engine in LOCAL_ENGINES:
        return _FREE
    return price


def unpriced_budget(
    pricing: Mapping[str, ModelPrice], budget: float | None, engine: str, model: str
) -> str | None:
    """The sentence refusing a budget that ``model`` (without a price) cannot keep."""
    if budget is None or price_of(pricing, engine, model) is not None:
        return None
    return (
        f"max_cost is set but the model {model} has no price, so the budget cannot be "
        f'kept; add [pricing."{model}"] with input and output (per million tokens) to '
        "your config, or unset max_cost."
    )


@dataclass(frozen=True, slots=True)
class BudgetStop:
    """Why the next request may not be sent, and how the turn ends."""

    status: p.TurnStatus
    message: str


class Spend:
    """The money a session's agents spent, against its budget (``max_cost``, None: none)."""

    def __init__(self, pricing: Mapping[str, ModelPrice], budget: float | None) -> None:
        self.pricing = pricing
        self.budget = budget
        self.total = 0.0
        """Money spent so far on priced requests."""
        self.unpriced: set[str] = set()
        """Models that answered without a price (their cost is unknown)."""

    def charge(self, engine: str, model: str, usage: ev.Usage) -> float | None:
        """Price one response of ``model`` and add it; None when it has no price."""
        price = price_of(self.pricing, engine, model)
        if price is None:
            self.unpriced.add(model)
            return None
        cost = price.cost(usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens)
        self.total += cost
        return cost

    def limit(self, engine: str, model: str) -> BudgetStop | None:
        """What keeps the next request of ``model`` from being sent (None: nothing)."""
        if self.budget is None:
            return None
        if self.total >= self.budget:
            return BudgetStop(
                "max_cost",
                f"stopped after spending {money(self.total)}, the budget of "
                f"{money(self.budget)} (--max-cost); raise it to go further.",
            )
        unpriced = unpriced_budget(self.pricing, self.budget, engine, model)
        return BudgetStop("failed", unpriced) if unpriced is not None else None


class Metered:
    """A backend whose every response is charged to a ``Spend`` (a request that emits no
    usage event of its own, such as a compaction summary); ``cost`` is their total."""

    def __init__(self, inner: Backend, spend: Spend) -> None:
        self.inner = inner
        self.spend = spend
        self.name, self.model, self.block_size = inner.name, inner.model, inner.block_size
        self.cost: float | None = 0.0

    @property
    def notices(self) -> Sequence[str]:
        """The inner backend's."""
        return self.inner.notices

    @property
    def failure(self) -> EngineError | None:
        """The inner backend's last failure."""
        return self.inner.failure

    async def check(self) -> None:
        """The inner backend's check."""
        await self.inner.check()

    async def aclose(self) -> None:
        """Nothing: the session owns the engine."""

    async def stream(self, request: ChatRequest) -> AsyncGenerator[ev.EngineEvent, None]:
        """The inner stream; its usage is charged as it passes."""
        async with aclosing(self.inner.stream(request)) as events:
            async for event in events:
                if isinstance(event, ev.Usage):
                    cost = self.spend.charge(self.name, self.model, event)
                    self.cost = None if cost is None or self.cost is None else self.cost + cost
                yield event
