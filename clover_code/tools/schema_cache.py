"""The JSON Schemas of the tools' arguments, kept between runs.

Every request tells the model each tool's arguments as a JSON Schema. Making
them means building every tool's arguments model (pydantic) and walking it:
about 2.7% of a one-step run's instructions, for schemas that change only when the code
does. So the builtin tools' schemas are kept in the user's cache folder
(``tool-schemas.json``), each under a fingerprint of its model: the class's
docstring and config, each field's name, type, default, description, alias,
constraints and extras, its validators' names, and the same of every model
it nests. A model whose fingerprint differs (the code changed), a new
clover-code or pydantic version, or an unreadable file: the schema is made
as before, and the file is rewritten. The arguments models themselves are
built when a call is first validated (``defer_build``).

Only models defined in clover-code's own modules are kept (a program's own
tools, built at run time, are made every time). The schema only tells the
model what to send: every call is still validated by the real model.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
import typing
from pathlib import Path
from typing import Any

import pydantic
from pydantic import BaseModel

import clover_code
from clover_code.errors import ToolError
from clover_code.fs.atomic import atomic_write

__all__ = ["fingerprint", "parameters", "save"]

_FILE = "tool-schemas.json"
_DECORATORS = (
    "validators",
    "field_validators",
    "root_validators",
    "field_serializers",
    "model_serializers",
    "model_validators",
    "computed_fields",
)


def fingerprint(model: type[BaseModel]) -> str:
    """What the model's JSON Schema is made from, as one digest."""
    parts: list[str] = [pydantic.VERSION, clover_code.__version__]
    _describe(model, parts, set())
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _describe(model: type[BaseModel], parts: list[str], seen: set[type[BaseModel]]) -> None:
    if model in seen:
        return
    seen.add(model)
    config = sorted((key, repr(value)) for key, value in model.model_config.items())
    parts += [f"{model.__module__}:{model.__qualname__}", model.__doc__ or "", repr(config)]
    decorators = model.__pydantic_decorators__
    parts += [repr(sorted(getattr(decorators, kind))) for kind in _DECORATORS]
    for name, info in model.model_fields.items():
        factory = info.default_factory
        default = getattr(factory, "__qualname__", repr(factory)) if factory else repr(info.default)
        parts += [name, repr(info.annotation), default, repr(info.description)]
        parts += [repr(info.alias), repr(info.title), repr(info.examples)]
        parts += [repr(info.json_schema_extra), repr(info.metadata)]
        for nested in _models_in(info.annotation):
            _describe(nested, parts, seen)


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _cacheable(model: type[BaseModel]) -> bool:
    """Defined in clover-code's own source: a module's class by its name (not one made
    at run time, such as a program's custom tool's arguments)."""
    if not model.__module__.startswith("clover_code."):
        return False
    found: object = sys.modules.get(model.__module__)
    for name in model.__qualname__.split("."):
        found = getattr(found, name, None)
    return found is model


def _made(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


class _Kept:
    """The file's schemas, read once a process; written back by ``save`` when changed."""

    def __init__(self) -> None:
        self.path: Path | None = None
        self.entries: dict[str, Any] | None = None
        self.changed = False

    def load(self) -> dict[str, Any]:
        if self.entries is None:
            from clover_code.config.settings import user_cache_dir

            self.path = user_cache_dir() / _FILE
            try:
                data = json.loads(self.path.read_bytes())
            except (OSError, ValueError):
                data = None
            kept = data.get("schemas") if isinstance(data, dict) else None
            self.entries = kept if isinstance(kept, dict) else {}
        return self.entries


_KEPT = _Kept()


def parameters(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of ``model`` as the model is told it (no titles): the kept one
    when its fingerprint matches, else made (and kept)."""
    if not _cacheable(model):
        return _made(model)
    key = f"{model.__module__}:{model.__qualname__}"
    digest = fingerprint(model)
    entries = _KEPT.load()
    entry = entries.get(key)
    if isinstance(entry, dict) and entry.get("fingerprint") == digest:
        schema = entry.get("schema")
        if isinstance(schema, dict):
            return copy.deepcopy(schema)
    schema = _made(model)
    entries[key] = {"fingerprint": digest, "schema": schema}
    _KEPT.changed = True
    return copy.deepcopy(schema)


def save() -> None:
    """Write the kept schemas back if any was made this run (a folder that cannot be
    written: they are made again next time)."""
    if not _KEPT.changed or _KEPT.path is None or _KEPT.entries is None:
        return
    data = json.dumps({"schemas": _KEPT.entries}).encode()  # the order is the schema's
    try:
        atomic_write(_KEPT.path, data)
    except ToolError:  # a cache: never the run's failure
        return
    _KEPT.changed = False
