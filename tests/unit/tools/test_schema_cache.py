"""The tools' argument schemas kept between runs: equal to the ones made, used again
only while their model's fingerprint matches, and never a failure of the run."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from clover_code.tools import schema_cache
from clover_code.tools.shell import ShellArgs
from clover_code.tools.todo import TodoArgs
from tests.unit.schemas.test_recorded_schemas import _MODELS


def _model(path: str) -> type[BaseModel]:
    module, name = path.split(":")
    model = getattr(importlib.import_module(module), name)
    assert isinstance(model, type) and issubclass(model, BaseModel)
    return model


@pytest.fixture
def kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test's own, read afresh (as by a new process)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(schema_cache, "_KEPT", schema_cache._Kept())
    return tmp_path / "cache" / "clover-code" / "tool-schemas.json"


def new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schema_cache, "_KEPT", schema_cache._Kept())


def made_never(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any, **__: Any) -> dict[str, Any]:
        raise AssertionError("the schema was made, not read")

    monkeypatch.setattr(schema_cache, "_made", refuse)


def test_every_builtin_tool_reads_back_what_was_made(
    kept: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = {_model(path) for path in _MODELS if ".tools." in path or "task_tool" in path}
    assert len(models) == 21  # every tool's arguments, and the to-do list's entry
    first = {model: schema_cache.parameters(model) for model in models}
    assert first == {model: schema_cache._made(model) for model in models}
    schema_cache.save()
    assert kept.exists()
    new_process(monkeypatch)
    made_never(monkeypatch)
    again = {model: schema_cache.parameters(model) for model in models}
    # The same schemas, in the same order (the properties' order is what the model reads).
    assert {m: json.dumps(again[m]) for m in models} == {m: json.dumps(first[m]) for m in models}
    # What a caller does to its copy does not reach the next one.
    schema_cache.parameters(ShellArgs)["properties"].clear()
    assert schema_cache.parameters(ShellArgs)["properties"]


def test_a_changed_model_is_made_again(kept: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Args(BaseModel):
        model_config = ConfigDict(defer_build=True)
        mode: Literal["a", "b"] = "a"

    class Changed(BaseModel):
        model_config = ConfigDict(defer_build=True)
        mode: Literal["a", "b", "c"] = "a"

    class Described(BaseModel):
        model_config = ConfigDict(defer_build=True)
        mode: Literal["a", "b"] = Field("a", description="which")

    for model in (Args, Changed, Described):  # as if each were the same class, edited
        model.__module__, model.__qualname__ = "clover_code.tools.example", "ExampleArgs"
    assert len({schema_cache.fingerprint(m) for m in (Args, Changed, Described)}) == 3
    schema_cache.parameters(Args)
    schema_cache.save()
    new_process(monkeypatch)
    assert schema_cache.parameters(Changed)["properties"]["mode"]["enum"] == ["a", "b", "c"]
    assert schema_cache.parameters(Described)["properties"]["mode"]["description"] == "which"
    # A nested model's change changes its parent's fingerprint too.
    before = schema_cache.fingerprint(TodoArgs)
    (entry,) = schema_cache._models_in(TodoArgs.model_fields["items"].annotation)
    monkeypatch.setattr(entry, "__doc__", "An edited docstring.")
    assert schema_cache.fingerprint(TodoArgs) != before


def test_a_damaged_or_unwritable_file_costs_nothing_but_time(
    kept: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept.parent.mkdir(parents=True)
    kept.write_text("{not json")
    assert schema_cache.parameters(ShellArgs) == schema_cache._made(ShellArgs)
    schema_cache.save()
    entries = json.loads(kept.read_text())["schemas"]
    assert entries["clover_code.tools.shell:ShellArgs"]["schema"] == schema_cache._made(ShellArgs)
    new_process(monkeypatch)
    kept.unlink()
    kept.mkdir()  # a folder where the file should be: it cannot be written
    assert schema_cache.parameters(ShellArgs) == schema_cache._made(ShellArgs)
    schema_cache.save()  # no error


def test_models_made_at_run_time_are_not_kept(kept: Path) -> None:
    class LocalArgs(BaseModel):
        text: str

    assert schema_cache.parameters(LocalArgs)["required"] == ["text"]
    schema_cache.save()
    assert not kept.exists()


def test_a_model_made_at_run_time_in_a_package_module_is_not_kept(kept: Path) -> None:
    made = type("MadeArgs", (BaseModel,), {"__annotations__": {"x": int}})
    made.__module__ = "clover_code.sdk.tools"  # as if the SDK had made it for a function
    assert schema_cache.parameters(made)["required"] == ["x"]
    schema_cache.save()
    assert not kept.exists()
