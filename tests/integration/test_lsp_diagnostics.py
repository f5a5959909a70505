"""Diagnostics after edits from real language servers in real sandboxes.

A session opened through the factory, on a scripted model, writes a clean
file, then edits a type error into it, then edits the fix: the error comes
back in the same tool result (text and display) and the fix's result has
none. The servers are the real ones: basedpyright (PyPI) and
typescript-language-server (npm), in the Docker image and, for bubblewrap,
as installed on this machine (``scripts/install-system``). ``lsp_wait`` is
set high only as a bound: a cold server on a busy machine takes seconds.

On the host (``--sandbox none``) servers start only for a trusted project,
and a server command from the project's files passes the host-program check
first.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from clover_code import protocol as p
from clover_code.config.load import load_settings
from clover_code.config.settings import Settings
from tests.fakes import ScriptedBackend, text_response, tool_response
from tests.integration.sandbox_fixtures import KINDS, Space
from tests.sessions import open_session
from tests.waiting import PATIENCE, need_program

pytestmark = pytest.mark.integration

FAKE = Path(__file__).parents[1] / "unit" / "tools" / "lsp" / "fake_server.py"

CASES: dict[str, tuple[str, str, tuple[str, str], str, str]] = {
    # language: file, clean text, (text the error replaces, the error), code, server
    "python": (
        "calc.py",
        "def total(items: list[int]) -> int:\n    return sum(items)\n",
        ("return sum(items)", 'return "none"'),
        "reportReturnType",
        "basedpyright-langserver",
    ),
    "typescript": (
        "calc.ts",
        "export function total(items: number[]): number {\n"
        "  return items.reduce((a, b) => a + b, 0);\n}\n",
        ("return items.reduce((a, b) => a + b, 0);", 'return "none";'),
        "2322",
        "typescript-language-server",
    ),
}


def settings_for(
    tmp_path: Path, root: Path, env: dict[str, str] | None = None, **values: Any
) -> Settings:
    values = {"sessions_dir": tmp_path / "sessions", "repo_map_tokens": 0, **values}
    values.setdefault("lsp_wait", PATIENCE)
    return load_settings(
        values, repo_root=root, user_config=tmp_path / "no-user-config.toml", env=env or {}
    )


def edit_script(language: str) -> ScriptedBackend:
    name, clean, (good, bad), _, _ = CASES[language]
    return ScriptedBackend(
        [
            tool_response(("write_file", {"path": name, "content": clean})),
            tool_response(("edit_file", {"path": name, "old_string": good, "new_string": bad})),
            tool_response(("edit_file", {"path": name, "old_string": bad, "new_string": good})),
            text_response("done"),
        ]
    )


async def run_edits(
    settings: Settings, language: str, root: Path
) -> tuple[list[p.ToolCallFinished], list[str]]:
    events: list[p.Event] = []
    session = await open_session(settings, edit_script(language), root, events)
    try:
        await session.run_turn("introduce a type error, then fix it")
    finally:
        await session.close()
    finished = [e for e in events if isinstance(e, p.ToolCallFinished)]
    notices = [e.text for e in events if isinstance(e, p.Notice)]
    return finished, notices


def assert_error_then_fix(finished: list[p.ToolCallFinished], language: str) -> None:
    name, _, _, code, server = CASES[language]
    assert [f.status for f in finished] == ["ok", "ok", "ok"], [f.result for f in finished]
    wrote, broke, fixed = finished
    assert "Diagnostics" not in wrote.result, wrote.result
    assert f"Diagnostics after this change ({server}):" in broke.result, broke.result
    assert f"{name}:2:" in broke.result and f"[{code}]" in broke.result, broke.result
    assert isinstance(broke.display, p.FileEdit)
    (found,) = broke.display.diagnostics
    assert (found.path, found.line, found.severity, found.code) == (name, 2, "error", code)
    assert "Diagnostics" not in fixed.result and "no diagnostics yet" not in fixed.result
    assert isinstance(fixed.display, p.FileEdit) and fixed.display.diagnostics == []


@pytest.mark.parametrize("language", sorted(CASES))
@pytest.mark.parametrize("kind", KINDS)
async def test_a_type_error_comes_back_and_its_fix_clears_it(
    kind: str, language: str, space: Space, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    extra: dict[str, Any] = {"sandbox": kind}
    if kind == "docker":
        extra["sandbox_image"] = request.getfixturevalue("sandbox_image")
    else:
        request.getfixturevalue("bwrap_works")
        need_program(
            CASES[language][4], "CI installs the language servers (scripts/install-system)"
        )
    finished, notices = await run_edits(
        settings_for(tmp_path, space.root, **extra), language, space.root
    )
    assert not [n for n in notices if "diagnostics for" in n or "language server" in n], notices
    assert_error_then_fix(finished, language)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


async def test_on_the_host_an_untrusted_project_starts_no_server(
    project: Path, tmp_path: Path
) -> None:
    finished, notices = await run_edits(
        settings_for(tmp_path, project, sandbox="none"), "python", project
    )
    assert all("Diagnostics" not in f.result for f in finished)
    (said,) = [n for n in notices if "diagnostics for" in n]
    assert said.startswith("diagnostics for python files are off: with --sandbox none")
    assert "trusted project" in said


async def test_on_the_host_a_trusted_project_gets_diagnostics(
    project: Path, tmp_path: Path
) -> None:
    need_program("basedpyright-langserver", "CI installs the language servers")
    trusted = {"CLOVER_TRUST_PROJECT_SETTINGS": "1"}
    settings = settings_for(tmp_path, project, trusted, sandbox="none")
    finished, notices = await run_edits(settings, "python", project)
    assert not [n for n in notices if "diagnostics for" in n], notices
    assert_error_then_fix(finished, "python")


async def test_a_project_server_that_changed_since_trusted_does_not_run_on_the_host(
    project: Path, tmp_path: Path
) -> None:
    (project / "tools").mkdir()
    shutil.copy(FAKE, project / "tools" / "server.py")
    (project / ".clover").mkdir()
    (project / ".clover" / "config.toml").write_text(
        f'[lsp.python]\ncommand = "{sys.executable}"\nargs = ["tools/server.py"]\n'
    )
    trusted = {"CLOVER_TRUST_PROJECT_SETTINGS": "1"}
    settings = settings_for(tmp_path, project, trusted, sandbox="none")
    assert settings.lsp["python"].command == sys.executable  # trusted: it applies
    with (project / "tools" / "server.py").open("a") as script:
        script.write("# changed after it was trusted\n")
    finished, notices = await run_edits(settings, "python", project)
    assert all("Diagnostics" not in f.result for f in finished)
    (said,) = [n for n in notices if "diagnostics for" in n]
    assert "tools/server.py changed since you trusted this project" in said


async def test_a_project_server_needs_trust_to_replace_the_built_in_one(
    project: Path, tmp_path: Path
) -> None:
    (project / ".clover").mkdir()
    (project / ".clover" / "config.toml").write_text(
        '[lsp.python]\ncommand = "./evil"\npatterns = ["*.py", "*.pyw"]\n'
    )
    settings = settings_for(tmp_path, project)
    assert settings.lsp["python"].command is None  # dropped until trusted
    assert settings.lsp["python"].patterns == ["*.py", "*.pyw"]  # harmless: kept
    report = settings.project_trust
    assert report is not None and not report.project_trusted()
    assert "lsp" in report.untrusted()[0].loosening
