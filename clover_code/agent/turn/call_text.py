"""The text of a call's result and of its argument problems, as the model and front ends get it."""

from __future__ import annotations

from typing import Any

from clover_code.protocol.json_text import printable, printable_value
from clover_code.tools.base import ToolResult

__all__ = ["printable_result", "problem"]


def printable_result(result: ToolResult) -> ToolResult:
    """``result`` with bytes that are not UTF-8 (file names and contents a shell command
    made) escaped, so it can go to the model, the transcript and every front end."""
    display = result.display
    if display is not None:
        try:
            display.model_dump_json()
        except ValueError:  # pydantic's serialisation error
            display = type(display).model_validate(printable_value(display.model_dump()))
    return ToolResult(
        text=printable(result.text),
        is_error=result.is_error,
        display=display,
        notices=[printable(n) for n in result.notices],
    )


_JSON_TYPES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}
_JSON_TYPES |= {list: "a list", dict: "an object", type(None): "null"}


def problem(error: Any) -> str:
    """One validation error as a clause: which argument, what is wrong, what came."""
    where = ".".join(str(x) for x in error["loc"]) or "(arguments)"
    message = str(error["msg"])
    message = message[:1].lower() + message[1:]
    if error["type"] == "missing":
        return f"'{where}' is missing"
    got = _JSON_TYPES.get(type(error.get("input")), "")
    return f"'{where}': {message}" + (f" (got {got})" if got else "")
