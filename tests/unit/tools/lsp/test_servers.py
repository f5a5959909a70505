"""Which server checks which file: the built-in table merged with the [lsp] settings."""

from __future__ import annotations

from clover_code.config.sections import LspServerConfig
from clover_code.tools.lsp.report import FileCheck, from_lsp, report_text
from clover_code.tools.lsp.servers import BUILTIN, server_specs


def test_built_in_languages_and_their_files() -> None:
    specs, problems = server_specs({})
    assert [s.language for s in specs] == ["python", "typescript", "go", "rust"]
    assert problems == []
    python, typescript = specs[0], specs[1]
    assert python.candidates[0] == ("basedpyright-langserver", "--stdio")
    assert python.matches("pkg/mod.py") and not python.matches("mod.pyc")
    assert typescript.language_id("ui/App.tsx") == "typescriptreact"
    assert typescript.language_id("x.mjs") == "javascript"


def test_settings_replace_add_and_turn_off() -> None:
    specs, problems = server_specs(
        {
            "python": LspServerConfig(command="pylsp", init_options={"a": 1}),
            "go": LspServerConfig(enabled=False),
            "zig": LspServerConfig(command="zls", patterns=["*.zig"]),
            "lua": LspServerConfig(patterns=["*.lua"]),
        }
    )
    by_name = {s.language: s for s in specs}
    assert by_name["python"].candidates == (("pylsp",),)
    assert by_name["python"].patterns == BUILTIN["python"].patterns
    assert by_name["python"].init_options == {"a": 1} and by_name["python"].configured
    assert "go" not in by_name
    assert by_name["zig"].matches("src/main.zig")
    assert problems == [
        "the language server for 'lua' in [lsp.lua] has no a command; give it a command "
        '(e.g. command = "pylsp", patterns = ["*.py"]), so it is off.'
    ]


def test_severity_filter_and_the_report() -> None:
    items = [
        {"range": {"start": {"line": 4, "character": 2}}, "severity": 2, "message": "w"},
        {"range": {"start": {"line": 1, "character": 0}}, "message": "no\n  severity", "code": 7},
        {"severity": 3, "message": "info"},
        "not a diagnostic",
    ]
    errors = from_lsp([i for i in items if isinstance(i, dict)], "m.py", "error")
    assert [(d.line, d.column, d.message, d.code) for d in errors] == [(2, 1, "no severity", "7")]
    both = from_lsp([i for i in items if isinstance(i, dict)], "m.py", "warning")
    assert [d.severity for d in both] == ["error", "warning"]
    text = report_text([FileCheck("m.py", "pylsp", both, None)], limit=1)
    assert text.splitlines() == [
        "Diagnostics after this change (pylsp):",
        "m.py:2:1: error: no severity [7]",
        "… and 1 more in m.py (the diagnostics tool lists them all)",
    ]
    assert report_text([FileCheck("m.py", "pylsp", [], None)]) == ""
    assert report_text([FileCheck("m.py", "", [], "it is starting")]) == (
        "[no diagnostics yet: m.py: it is starting]"
    )
