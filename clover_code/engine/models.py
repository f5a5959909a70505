"""The models a session can use: what it could switch to, the engine for one, and
whether images go to it.

A remote server serves several models: a switch opens a backend for the new one
(its id from the ``[models]`` table, its context window from its entry, else
from what the server reports, and its tool-call reading), after making sure
the server lists it. A local engine (hf, sglang) holds the one checkpoint it
loaded, so it lists that and refuses a switch with one sentence: loading another
would take minutes and the GPU's memory, which a restart with
``--model-path`` does cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass

from clover_code import protocol as p
from clover_code.config.models import resolve_model
from clover_code.config.settings import Settings
from clover_code.engine.base import Backend
from clover_code.engine.remote.endpoint import ServedModel
from clover_code.engine.select import is_local, open_backend, remote_backend
from clover_code.errors import EngineError, ModelNotFound

__all__ = ["Switched", "model_options", "open_model", "takes_images"]


@dataclass(frozen=True, slots=True)
class Switched:
    """A session's engine after a switch."""

    backend: Backend
    settings: Settings
    """The session's settings for the new model (its id, window and parsing)."""
    name: str
    """What the user chose: a name of ``[models]``, else the id."""


def takes_images(settings: Settings, backend: Backend) -> bool | None:
    """Whether images go to ``backend``'s model: never to a local engine (Clover is
    text-only); to a server's, as its ``[models]`` entry's ``vision`` says, else None
    (sent until the server refuses them)."""
    if backend.name != "remote":
        return False
    entry = resolve_model(settings.models, backend.model).entry
    return entry.vision if entry is not None else None


def _local_refusal(settings: Settings, backend: Backend, name: str) -> EngineError:
    return EngineError(
        f"the {backend.name} engine runs only the checkpoint it loaded "
        f"({settings.model_path or backend.model}), so it cannot switch to {name!r}; "
        "start clover-code again with --model-path for that checkpoint, or --base-url "
        "for a server that serves it."
    )


async def open_model(settings: Settings, backend: Backend, name: str) -> Switched:
    """The engine for model ``name`` (a ``[models]`` name or an id) of the server
    ``backend`` talks to; an ``EngineError`` saying why not (the session stays on
    its model). ``backend`` itself comes back when it already serves that model.
    ``settings`` are the session's as opened: the new model's are derived from them."""
    chosen = resolve_model(settings.models, name)
    if chosen.id == backend.model:
        return Switched(backend, settings.for_model(name), chosen.name)
    if is_local(settings) or backend.name != "remote":
        raise _local_refusal(settings, backend, name)
    served = await _served(settings)
    ids = [m.id for m in served]
    if chosen.id not in ids:
        listed = ", ".join(repr(i) for i in ids[:12]) or "nothing"
        alias = f" ({name!r} in [models])" if chosen.entry is not None else ""
        raise ModelNotFound(
            f"the server does not serve the model {chosen.id!r}{alias}; it serves {listed}, "
            f"so the session stays on {backend.model!r}."
        )
    window = chosen.entry.context_window if chosen.entry is not None else None
    if window is None:
        window = next((m.context_window for m in served if m.id == chosen.id), None)
    if window is None:
        window = await _reported_window(settings, chosen.id)
    switched = settings.for_model(name, window)
    return Switched(await open_backend(switched), switched, chosen.name)


async def model_options(
    settings: Settings, backend: Backend
) -> tuple[list[p.ModelOption], str | None]:
    """The models the session could use (the server's list and the ``[models]``
    table; a local engine's loaded checkpoint), and a sentence when the server's list
    could not be had."""
    served: list[ServedModel] = []
    note: str | None = None
    local = is_local(settings) or backend.name != "remote"
    if local:
        served = [ServedModel(backend.model, settings.context_window)]
        note = f"the {backend.name} engine runs only the checkpoint it loaded."
    else:
        try:
            served = await _served(settings)
        except EngineError as exc:
            note = f"the server did not list its models ({exc})."
    options: dict[str, p.ModelOption] = {}
    for model in served:
        chosen = resolve_model(settings.models, model.id)
        entry = chosen.entry
        options[model.id] = p.ModelOption(
            name=chosen.name,
            id=model.id,
            current=model.id == backend.model,
            context_window=(entry.context_window if entry else None) or model.context_window,
            vision=entry.vision if entry else None,
        )
    for name, entry in settings.models.items():
        model_id = entry.id or name
        if model_id in options:
            continue
        options[model_id] = p.ModelOption(
            name=name,
            id=model_id,
            current=model_id == backend.model,
            served=model_id == backend.model,
            context_window=entry.context_window,
            vision=entry.vision,
        )
    if backend.model and backend.model not in options:
        options[backend.model] = p.ModelOption(name=backend.model, id=backend.model, current=True)
    return list(options.values()), note


async def _served(settings: Settings) -> list[ServedModel]:
    """What the settings' server lists (asked on a connection of its own)."""
    probe = remote_backend(settings)
    try:
        return await probe.served()
    finally:
        await probe.aclose()


async def _reported_window(settings: Settings, model: str) -> int | None:
    """The context window the settings' server reports for ``model`` (llama.cpp's /props)."""
    probe = remote_backend(settings)
    try:
        return await probe.served_window(model)
    finally:
        await probe.aclose()
