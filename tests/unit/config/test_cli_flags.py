"""Flags come from the settings model: types, choices and help are declared once."""

from __future__ import annotations

import argparse
from typing import get_args

import pytest

from clover_code.acp.bridge import MODES
from clover_code.acp.main import build_parser as acp_parser
from clover_code.cli.parser import build_parser
from clover_code.config.flags import Flag, add_setting_flags, flag_values
from clover_code.config.loosening import APPROVAL_ORDER
from clover_code.protocol import APPROVAL_MODES, ApprovalMode, SetApprovalMode
from clover_code.serve.main import build_parser as serve_parser
from clover_code.ui.commands import COMMANDS


def _choices(parser: argparse.ArgumentParser, option: str) -> tuple[str, ...]:
    action = next(a for a in parser._actions if option in a.option_strings)
    return tuple(action.choices or ())


@pytest.mark.parametrize("parser", [build_parser(), acp_parser()], ids=["app", "acp"])
def test_every_front_end_offers_the_approval_modes_of_the_protocol(
    parser: argparse.ArgumentParser,
) -> None:
    assert _choices(parser, "--approval") == APPROVAL_MODES == get_args(ApprovalMode)
    assert _choices(parser, "--sandbox") == ("auto", "docker", "bwrap", "none")


def test_the_mode_lists_all_come_from_the_protocol() -> None:
    assert APPROVAL_ORDER == APPROVAL_MODES
    assert tuple(MODES) == APPROVAL_MODES
    assert SetApprovalMode(mode="full-auto").mode == "full-auto"
    assert any(c.name == "approval" for c in COMMANDS)


def test_flags_are_typed_by_the_model_and_unset_flags_stay_out() -> None:
    args = serve_parser().parse_args(["--port", "9000", "--threshold", "0.9", "--drafts"])
    values = flag_values(args, ("serve_port", "threshold", "serve_drafts", "dtype"))
    assert values == {"serve_port": 9000, "threshold": 0.9, "serve_drafts": True}
    assert _choices(serve_parser(), "--engine") == ("hf", "sglang")
    with pytest.raises(SystemExit):
        serve_parser().parse_args(["--dtype", "int3"])


def test_a_setting_that_defaults_on_gets_a_no_switch_and_help_from_its_docstring() -> None:
    parser = argparse.ArgumentParser()
    add_setting_flags(parser, ("thinking", Flag("base_url", metavar="URL"), "approval"))
    args = parser.parse_args(["--no-thinking", "--base-url", "http://h:1/v1"])
    assert flag_values(args, ("thinking", "base_url", "approval")) == {
        "thinking": False,
        "base_url": "http://h:1/v1",
    }
    helps = {a.dest: a.help for a in parser._actions}
    assert helps["base_url"] == "URL of an OpenAI-compatible server, e.g. http://localhost:30000/v1"
    assert helps["approval"] is not None and helps["approval"].startswith("what may run")
