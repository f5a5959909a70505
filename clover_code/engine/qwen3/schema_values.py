"""Turn the raw text of a tool-call parameter into the value its JSON schema asks for.

The qwen3_coder call format carries every parameter value as bare text
(``<parameter=n>\\n3\\n</parameter>``), so the type has to come from the tool's
schema. A dLLM server skips grammars, so nothing upstream guarantees the text
fits: conversion failures are reported as ``ValueError`` carrying the tail of
one sentence ("expected integer, got 'abc'") for the caller to prefix.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from clover_code.protocol.json_text import JSONLimitError, loads_bounded

__all__ = ["ParamTypes", "convert_value", "property_types", "string_value", "tool_param_types"]

ParamTypes = tuple[str, ...]
"""JSON types a property allows, in schema order; empty when the schema names none."""

_KNOWN_TYPES = frozenset({"null", "boolean", "integer", "number", "object", "array", "string"})

# Conversion order when several types are allowed: the strict readings first,
# "string" last because every text is a valid string.
_TRY_ORDER = ("null", "boolean", "integer", "number", "object", "array")

_SHOW_LIMIT = 60


def property_types(schema: object) -> ParamTypes:
    """The JSON types one property schema allows (``type``, type lists, ``anyOf``/``oneOf``)."""
    found: list[str] = []
    _collect_types(schema, found, depth=0)
    return tuple(found)


def tool_param_types(parameters: Mapping[str, Any]) -> dict[str, ParamTypes]:
    """Map each property of a tool's ``parameters`` schema to the types it allows."""
    properties = parameters.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    return {str(name): property_types(schema) for name, schema in properties.items()}


def string_value(raw: str) -> str:
    """A string parameter: the newline after the open tag and before the close tag removed.

    Only one of each goes: the rest is the model's text verbatim, since values
    are often source code whose indentation and blank lines matter.
    """
    if raw.startswith("\n"):
        raw = raw[1:]
    if raw.endswith("\n"):
        raw = raw[:-1]
    return raw


def convert_value(raw: str, types: ParamTypes | None) -> Any:
    """Convert ``raw`` to one of ``types``; ``None`` means "not in the schema": keep the text.

    An empty ``types`` (the property exists but names no type) takes the text
    as JSON when it parses and as a string otherwise. Raises ``ValueError``
    with "expected <types>, got '<text>'" when no allowed type fits.
    """
    if types is None or types == ("string",):
        return string_value(raw)
    text = raw.strip()
    known = [t for t in types if t in _KNOWN_TYPES]
    if not known:
        try:
            return loads_bounded(text)
        except JSONLimitError as exc:
            raise ValueError(str(exc)) from None
        except ValueError:
            return string_value(raw)
    detail = ""
    for kind in _TRY_ORDER:
        if kind not in known:
            continue
        try:
            return _CONVERTERS[kind](text)
        except _Mismatch as exc:
            detail = exc.detail or detail
    if "string" in known:
        return string_value(raw)
    message = f"expected {' or '.join(known)}, got {_show(text)}"
    raise ValueError(f"{message} ({detail})" if detail else message)


class _Mismatch(ValueError):
    """The text is not a value of one candidate type; ``detail`` says why when it helps."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail)
        self.detail = detail


def _collect_types(schema: object, found: list[str], depth: int) -> None:
    # Depth guard: schemas are model-facing data and may be arbitrarily nested.
    if not isinstance(schema, Mapping) or depth > 4:
        return
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else declared
    if isinstance(names, list):
        for name in names:
            if isinstance(name, str) and name not in found:
                found.append(name)
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            for branch in branches:
                _collect_types(branch, found, depth + 1)


def _to_null(text: str) -> None:
    if text in ("null", "None"):
        return None
    raise _Mismatch()


def _to_boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise _Mismatch()


def _to_integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        pass
    # Models sometimes write "3.0" for an integer; accept it when nothing is lost.
    number = _finite_float(text)
    if number.is_integer():
        return int(number)
    raise _Mismatch()


def _to_number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return _finite_float(text)


def _finite_float(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise _Mismatch() from None
    # nan/inf parse as floats but have no JSON form.
    if not math.isfinite(number):
        raise _Mismatch()
    return number


def _to_json(text: str, kind: type[Any], kind_name: str) -> Any:
    try:
        value = loads_bounded(text)
    except JSONLimitError as exc:
        raise _Mismatch(str(exc)) from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise _Mismatch(f"invalid JSON: {exc.msg} at {where}") from None
    if not isinstance(value, kind):
        raise _Mismatch(f"the JSON is {_json_kind(value)}, not {kind_name}")
    return value


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _to_object(text: str) -> dict[str, Any]:
    value: dict[str, Any] = _to_json(text, dict, "an object")
    return value


def _to_array(text: str) -> list[Any]:
    value: list[Any] = _to_json(text, list, "an array")
    return value


_CONVERTERS: dict[str, Callable[[str], Any]] = {
    "null": _to_null,
    "boolean": _to_boolean,
    "integer": _to_integer,
    "number": _to_number,
    "object": _to_object,
    "array": _to_array,
}


def _show(text: str) -> str:
    if len(text) > _SHOW_LIMIT:
        text = text[:_SHOW_LIMIT] + "…"
    return repr(text)
