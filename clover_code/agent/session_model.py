"""The model a session uses, and switching it (``SetModel``, ``/model``).

A switch opens the engine for the new model (``engine/models.py``), hands it
to the agent for the next request, records it in the transcript (so
``--resume`` goes on with it) and says so with ``ModelChanged``. The engine of
the earlier model is closed once no turn can still be using it: a switch
during a turn leaves the response being streamed (and any child agent) on it
until the turn ends.
"""

from __future__ import annotations

from clover_code import protocol as p
from clover_code.agent.steps import run_all
from clover_code.agent.transcript import Transcript
from clover_code.agent.turn.loop import Agent
from clover_code.config.settings import Settings
from clover_code.engine.base import Backend
from clover_code.engine.models import Switched, model_options, open_model, takes_images
from clover_code.errors import CloverError

__all__ = ["SessionModel"]


class SessionModel:
    """The session's model as the user named it, and the engines of earlier ones."""

    def __init__(self, opened_with: Settings, name: str, emit: p.Emit) -> None:
        self.opened_with = opened_with
        """The settings the session was opened with: each model's are made from them."""
        self.name = name
        """The model in use as the user named it (a ``[models]`` name, or the id)."""
        self._emit = emit
        self._retired: list[Backend] = []

    async def options(self, backend: Backend) -> tuple[list[p.ModelOption], str | None]:
        """The models the session could switch to, the one in use marked, and a
        sentence when the server's list could not be had."""
        return await model_options(self.opened_with, backend)

    async def switch(
        self, agent: Agent, name: str, transcript: Transcript, *, turn_running: bool
    ) -> None:
        """``SetModel``: ``name`` from the next request on (recorded), or an
        ``ErrorEvent`` saying why not."""
        try:
            switched = await open_model(self.opened_with, agent.backend, name)
        except CloverError as exc:
            self._emit(p.ErrorEvent(message=str(exc)))
            return
        transcript.model_switch(switched.name, switched.backend.model)
        await self._use(agent, switched, turn_running=turn_running)

    async def resume(self, agent: Agent, name: str) -> None:
        """Go on with the model a resumed session had switched to; when that cannot be,
        say so and stay on the one it opened with."""
        try:
            switched = await open_model(self.opened_with, agent.backend, name)
        except CloverError as exc:
            stays = agent.backend.model
            self._emit(
                p.Notice(
                    level="warning",
                    text=f"this session had switched to the model {name}, but {exc} "
                    f"It goes on with {stays}.",
                )
            )
            return
        await self._use(agent, switched, turn_running=False)

    async def _use(self, agent: Agent, switched: Switched, *, turn_running: bool) -> None:
        old = agent.backend
        agent.switch_engine(switched.backend, switched.settings)
        self.name = switched.name
        self._emit(
            p.ModelChanged(
                model=switched.backend.model,
                name=switched.name,
                context_window=switched.settings.context_window,
                vision=takes_images(switched.settings, switched.backend),
            )
        )
        if old is not switched.backend:
            self._retired.append(old)
            if not turn_running:
                await self.close_retired()

    async def close_retired(self) -> None:
        """Close the engines of earlier models (no turn uses them any more)."""
        retired, self._retired = self._retired, []
        if retired:
            await run_all([("earlier engine", backend.aclose) for backend in retired])
