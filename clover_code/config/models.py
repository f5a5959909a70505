"""The ``[models]`` table: short names for the models a server serves, and what each takes.

An entry is keyed by the name the user types (``/model fast``, ``--model fast``)
and names the server's model id; a key that is itself a server id (``id``
left out) holds that model's own settings. ``ModelSettings.for_model`` turns the settings
of a session into those of one model: its id, its context window and how its
tool calls are read.
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ModelEntry", "RawParsing", "ResolvedModel", "resolve_model"]

RawParsing = Literal["auto", "always", "never"]


class ModelEntry(BaseModel):
    """One model of the ``[models]`` table, e.g. ``[models.fast] id = "qwen3-coder-30b"``."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(None, min_length=1)
    """The model id the server lists (``/v1/models``); unset: the entry's own name."""

    context_window: int | None = Field(None, ge=1024)
    """Tokens shared by prompt and response for this model; unset: what the server
    reports on a switch, else the context_window setting."""

    vision: bool | None = None
    """Whether the model takes images: true sends them, false never does (the text goes
    alone, with one sentence saying so); unset (auto): a remote model is sent them until
    its server refuses images once, a local engine never is."""

    raw_parsing: RawParsing | None = None
    """How this model's tool calls and reasoning are read (as the raw_parsing setting:
    always for a server that sends the model's raw Qwen3 text); unset: the setting."""


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    """A name the user gave, looked up in the ``[models]`` table."""

    name: str
    """What the user typed (an alias or an id)."""
    id: str
    """The id the server is asked for."""
    entry: ModelEntry | None
    """Its ``[models]`` entry (None: none configured)."""


def resolve_model(models: dict[str, ModelEntry], name: str) -> ResolvedModel:
    """``name`` as an alias of ``models``, or as an id one of its entries names, or as
    a plain id."""
    entry = models.get(name)
    if entry is not None:
        return ResolvedModel(name, entry.id or name, entry)
    for key, other in models.items():
        if other.id == name:
            return ResolvedModel(key, name, other)
    return ResolvedModel(name, name, None)
