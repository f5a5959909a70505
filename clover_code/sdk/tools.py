"""Custom tools: a Python function of the embedding program, offered to the model.

``tool`` turns a function that takes one pydantic model (its arguments) into a
``Tool`` (``clover_code.tools.base``): the model sees the function's name,
docstring and the model's JSON schema; a call's arguments are screened and
validated like a built-in tool's before the function runs.

Its kind decides approval like a built-in tool's. The default is ``execute``:
the function is arbitrary code on the host whose effects no checkpoint records
and no sandbox contains, so it asks in ``ask``, ``auto-edit`` and
``sandbox-auto`` (it runs outside the sandbox, ``Tool.runs_on_host``), is
refused in ``read-only`` and ``plan``, and runs in ``full-auto``. A function
that only looks things up says ``kind="read"`` (it then runs in every mode,
plan included); ``edit`` and ``fetch`` are judged as file edits and network
requests are.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, cast, get_args, overload

from pydantic import BaseModel

from clover_code.errors import ToolError, UsageError
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult

__all__ = ["KINDS", "FunctionTool", "tool"]

KINDS: tuple[ToolKind, ...] = tuple(k for k in get_args(ToolKind) if k != "other")
"""The kinds a custom tool may have."""
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

ToolFunction = Callable[[Any], Any | Awaitable[Any]]
"""A custom tool's function: its argument model in, text (or a JSON value) out."""


class FunctionTool(Tool[BaseModel]):
    """A custom tool: calls its function with the validated arguments.

    Its answer goes to the model: a string as it is, any other value as JSON. A
    ``ToolError`` it raises is an error the model reads and can correct; any other
    exception becomes an error result naming it (the session goes on)."""

    runs_on_host: ClassVar[bool] = True

    def __init__(self, function: ToolFunction) -> None:
        self.function = function

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Call the function and turn its answer into a result."""
        try:
            answer = self.function(args)
            if inspect.isawaitable(answer):
                answer = await answer
        except ToolError:
            raise  # the dispatcher gives its sentence to the model
        except Exception as exc:  # the embedding program's bug: the model is told
            return ToolResult(text=f"error: {type(exc).__name__}: {exc}", is_error=True)
        if isinstance(answer, str):
            return ToolResult(text=answer)
        try:
            return ToolResult(text=json.dumps(answer))
        except (TypeError, ValueError):
            return ToolResult(
                text=f"error: the tool returned a {type(answer).__name__}, which is neither "
                "text nor a JSON value.",
                is_error=True,
            )


@overload
def tool(function: ToolFunction, /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    kind: ToolKind = "execute",
    args: type[BaseModel] | None = None,
) -> Callable[[ToolFunction], FunctionTool]: ...


def tool(
    function: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    kind: ToolKind = "execute",
    args: type[BaseModel] | None = None,
) -> FunctionTool | Callable[[ToolFunction], FunctionTool]:
    """Make a custom tool of ``function`` (``@tool`` or ``@tool(kind="read")``).

    ``name`` defaults to the function's, ``description`` to its docstring and
    ``args`` to the pydantic model its first parameter is annotated with.
    ``UsageError`` says what is missing or wrong."""

    def make(function: ToolFunction) -> FunctionTool:
        return _function_tool(function, name, description, kind, args)

    return make(function) if function is not None else make


def _function_tool(
    function: ToolFunction,
    name: str | None,
    description: str | None,
    kind: str,
    args: type[BaseModel] | None,
) -> FunctionTool:
    if not callable(function):
        raise UsageError(f"a tool needs a function, not {type(function).__name__}.")
    name = name or str(getattr(function, "__name__", ""))
    if not _NAME.match(name):
        raise UsageError(
            f"the tool name {name!r} is not 1 to 64 letters, digits, '_' or '-'; "
            "give the tool another name."
        )
    description = description or inspect.getdoc(function) or ""
    if not description.strip():
        raise UsageError(
            f"the tool {name} has no description; give its function a docstring, or "
            "description=..., which the model reads to know when to call it."
        )
    if kind not in KINDS:
        raise UsageError(f"the tool {name} has the kind {kind!r}; use one of {', '.join(KINDS)}.")
    model = args or _argument_model(function, name)
    attributes = {"name": name, "description": description.strip(), "kind": kind, "Args": model}
    cls = cast(type[FunctionTool], type(f"FunctionTool[{name}]", (FunctionTool,), attributes))
    return cls(function)


def _argument_model(function: ToolFunction, name: str) -> type[BaseModel]:
    """The pydantic model the function's first parameter is annotated with."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
        hints = typing.get_type_hints(function)
    except (TypeError, ValueError, NameError):
        parameters, hints = [], {}
    first = hints.get(parameters[0].name) if parameters else None
    if isinstance(first, type) and issubclass(first, BaseModel):
        return first
    raise UsageError(
        f"the tool {name} needs its function's first parameter annotated with a pydantic "
        "model (the arguments the model sends), or args=SomeModel."
    )
