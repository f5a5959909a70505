"""Custom tools: a function and its pydantic model become a tool the model can call,
judged by its kind like a built-in one (a host function is never "contained")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from clover_code.agent.permissions.policy import PermissionPolicy
from clover_code.config.settings import PermissionRules
from clover_code.errors import ToolError, UsageError
from clover_code.sdk import FunctionTool, tool
from clover_code.tools.base import ToolContext
from clover_code.tools.workspace import Workspace


class City(BaseModel):
    city: str
    days: int = 1


def context(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(tmp_path))


async def test_a_function_becomes_a_tool_with_its_schema(tmp_path: Path) -> None:
    @tool(kind="read")
    async def forecast(args: City) -> str:
        """The weather in a city for the next days."""
        return f"{args.city}: sunny for {args.days} days"

    assert isinstance(forecast, FunctionTool)
    spec = forecast.spec()
    assert (spec.name, spec.description) == ("forecast", "The weather in a city for the next days.")
    assert spec.parameters["required"] == ["city"]
    assert forecast.kind == "read" and forecast.runs_on_host
    result = await forecast.run(City(city="Paris", days=2), context(tmp_path))
    assert (result.text, result.is_error) == ("Paris: sunny for 2 days", False)


async def test_plain_functions_and_json_answers(tmp_path: Path) -> None:
    def lookup(args: City) -> dict[str, Any]:
        """Look a city up."""
        return {"city": args.city, "population": 3}

    made = tool(lookup)
    assert made.kind == "execute"  # the default: host code that asks first
    result = await made.run(City(city="Oslo"), context(tmp_path))
    assert result.text == '{"city": "Oslo", "population": 3}'


async def test_what_the_function_raises_is_an_error_result(tmp_path: Path) -> None:
    @tool(name="boom", description="Fails.")
    def fails(args: City) -> str:
        raise KeyError(args.city)

    result = await fails.run(City(city="X"), context(tmp_path))
    assert result.is_error and result.text == "error: KeyError: 'X'"

    @tool(description="Says no.")
    def refuses(args: City) -> str:
        raise ToolError("no such city; give a capital")

    with pytest.raises(ToolError):  # the dispatcher gives its sentence to the model
        await refuses.run(City(city="X"), context(tmp_path))

    @tool(description="Returns a set.")
    def odd(args: City) -> object:
        return {1, 2}

    answer = await odd.run(City(city="X"), context(tmp_path))
    assert answer.is_error and "a set, which is neither text nor a JSON value" in answer.text


def no_docstring(args: City) -> str:
    return ""


def untyped(args):  # type: ignore[no-untyped-def]
    """Has no model."""
    return ""


@pytest.mark.parametrize(
    ("make", "sentence"),
    [
        (lambda: tool(no_docstring), "the tool no_docstring has no description"),
        (lambda: tool(untyped), "first parameter annotated with a pydantic model"),
        (lambda: tool(name="two words", description="x")(no_docstring), "is not 1 to 64"),
        (lambda: tool(kind="other", description="x")(no_docstring), "use one of read, search"),
    ],
)
def test_each_mistake_is_one_sentence(make: Any, sentence: str) -> None:
    with pytest.raises(UsageError, match=sentence):
        make()


def test_an_execute_tool_on_the_host_asks_in_sandbox_auto(tmp_path: Path) -> None:
    policy = PermissionPolicy(PermissionRules(), tmp_path, contained=True)
    shell = policy.decide("sandbox-auto", "shell", "execute", {"command": "ls"})
    assert shell.verdict == "allow"  # the shell runs in the contained sandbox
    mine = policy.decide("sandbox-auto", "mine", "execute", {}, on_host=True)
    assert mine.verdict == "ask"
    assert policy.decide("full-auto", "mine", "execute", {}, on_host=True).verdict == "allow"
    assert policy.decide("plan", "mine", "execute", {}, on_host=True).verdict == "deny"
    allowed = PermissionPolicy(PermissionRules(allow={"mine": ["*"]}), tmp_path, contained=True)
    assert allowed.decide("ask", "mine", "execute", {}, on_host=True).verdict == "allow"
