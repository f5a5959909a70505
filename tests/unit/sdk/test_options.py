"""The SDK's options are the settings' fields, checked as flags are but named as
options; its own arguments are checked before anything opens. The package never
loads Textual."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from clover_code.errors import ConfigError, UsageError
from clover_code.sdk import Hook, tool
from clover_code.sdk.options import Options


def read(tmp_path: Path, **given: Any) -> Options:
    base: dict[str, Any] = {
        "cwd": tmp_path,
        "can_use_tool": None,
        "tools": (),
        "hooks": None,
        "resume": None,
        "trust_project": False,
    }
    own = {k: given.pop(k) for k in list(given) if k in base}
    return Options.read(given, **{**base, **own})


def test_settings_are_options(tmp_path: Path) -> None:
    options = read(tmp_path, max_turns=7, base_url="http://localhost:1/v1", sandbox="none")
    assert options.settings.max_turns == 7 and options.settings.sandbox == "none"
    assert options.approval == "sandbox-auto" and options.approver is None
    asked = read(tmp_path, can_use_tool=lambda call: None)
    assert asked.approval == "ask" and asked.approver is not None
    assert read(tmp_path, approval="auto-edit", can_use_tool=print).approval == "auto-edit"


def test_a_bad_option_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        read(tmp_path, max_turns=0)
    assert str(caught.value) == (
        "option max_turns: bad value 0 for 'max_turns': Input should be greater than or equal to 1."
    )
    with pytest.raises(ConfigError, match="option max_turn: unknown key 'max_turn'; did you"):
        read(tmp_path, max_turn=3)


def test_an_administrator_refuses_an_option_by_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    managed = tmp_path / "managed.toml"
    managed.write_text('[limits]\nmax_approval = "ask"\n')
    monkeypatch.setenv("CLOVER_MANAGED_SETTINGS", str(managed))
    with pytest.raises(ConfigError, match='option approval="full-auto" is refused'):
        read(tmp_path, approval="full-auto")


class Args(BaseModel):
    text: str


def echo(args: Args) -> str:
    """Echo."""
    return args.text


def test_tools_and_hooks_are_checked_first(tmp_path: Path) -> None:
    options = read(tmp_path, tools=[echo], hooks={"Stop": echo, "PreToolUse": [Hook(echo, "x")]})
    assert [t.name for t in options.tools] == ["echo"]
    assert [h.matcher for h in options.hooks["PreToolUse"]] == ["x"]
    with pytest.raises(UsageError, match="two tools are named echo"):
        read(tmp_path, tools=[echo, tool(echo)])
    with pytest.raises(UsageError, match="tools holds a int; give functions"):
        read(tmp_path, tools=[3])
    with pytest.raises(UsageError, match="hooks names the event 'OnStop'; use one of"):
        read(tmp_path, hooks={"OnStop": echo})
    with pytest.raises(ConfigError, match="the hook matcher '\\(' is not a regular expression"):
        Hook(echo, "(")
    with pytest.raises(UsageError, match=r"cwd .* is not a directory"):
        read(tmp_path / "missing")


def test_the_sdk_never_loads_textual() -> None:
    code = "import sys, clover_code.sdk\nprint('textual' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
