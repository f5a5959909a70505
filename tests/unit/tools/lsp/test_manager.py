"""The session's language servers against a fake server: restarts, notices, severities.

The fake (``fake_server.py``) runs as a real process over real pipes, started
through the host sandbox; it stands in where a real server cannot be made to
crash or to report a warning on command. Real servers in real sandboxes are
``tests/integration/test_lsp_diagnostics.py``.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from clover_code.errors import ToolError
from clover_code.tools.base import ToolContext
from clover_code.tools.edit_file import EditFileArgs, EditFileTool
from clover_code.tools.lsp.manager import HostCheck, LanguageServers
from clover_code.tools.lsp.servers import ServerSpec
from clover_code.tools.lsp.tool import DiagnosticsArgs, DiagnosticsTool
from clover_code.tools.sandbox.host import HostSandbox
from clover_code.tools.workspace import Workspace
from clover_code.tools.write_file import WriteFileArgs, WriteFileTool

FAKE = str(Path(__file__).with_name("fake_server.py"))
SPEC = ServerSpec("fake", ((sys.executable, FAKE),), ("*.txt",))
WAIT = 120.0
"""A bound on each wait for the fake (it answers at once; a busy machine is slow)."""


def allow(argv: Sequence[str]) -> list[str] | str | None:
    return list(argv)


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[HostSandbox]:
    box = HostSandbox(tmp_path)
    yield box
    await box.close()


def servers(
    box: HostSandbox,
    spec: ServerSpec = SPEC,
    *,
    check: HostCheck | None = allow,
    off: str | None = None,
    severity: str = "error",
) -> LanguageServers:
    return LanguageServers(
        box,
        box.root,
        [spec],
        wait=WAIT,
        host_check=check,
        off=off,
        severity=severity,  # type: ignore[arg-type]
    )


async def test_an_error_comes_back_and_a_fix_clears_it(host: HostSandbox) -> None:
    lsp = servers(host)
    try:
        (found,) = await lsp.check([("a.txt", "fine\nan ERROR here\n")])
        assert [(d.line, d.column, d.severity, d.code) for d in found.diagnostics] == [
            (2, 4, "error", "F1")
        ]
        (found,) = await lsp.check([("a.txt", "fine\nall good\n")])
        assert found.diagnostics == [] and found.waiting is None
    finally:
        await lsp.close()


async def test_warnings_only_when_asked(host: HostSandbox) -> None:
    for severity, expected in (("error", ["error"]), ("warning", ["warning", "error"])):
        lsp = servers(host, severity=severity)
        try:
            (found,) = await lsp.check([("a.txt", "WARN\nERROR\n")])
            assert [d.severity for d in found.diagnostics] == expected
        finally:
            await lsp.close()


async def test_a_crash_restarts_once_then_the_language_is_off(host: HostSandbox) -> None:
    lsp = servers(host)
    try:
        assert await lsp.check([("a.txt", "CRASH\n")]) == []
        (said,) = lsp.take_notices()
        assert "stopped" in said and "told to crash" in said and "starts again" in said
        (found,) = await lsp.check([("a.txt", "ERROR\n")])  # started again
        assert len(found.diagnostics) == 1
        assert await lsp.check([("a.txt", "CRASH again\n")]) == []
        (said,) = lsp.take_notices()
        assert said.startswith("diagnostics for fake files are off") and "stopped again" in said
        assert not lsp.handles("a.txt")
        assert await lsp.check([("a.txt", "ERROR\n")]) == []
        assert lsp.take_notices() == []
    finally:
        await lsp.close()


async def test_a_missing_server_is_said_once(host: HostSandbox) -> None:
    lsp = servers(host, check=lambda argv: None)
    try:
        assert await lsp.check([("a.txt", "ERROR\n")]) == []
        (said,) = lsp.take_notices()
        assert "no language server for it is installed on this machine" in said
        assert await lsp.check([("b.txt", "ERROR\n")]) == []
        assert lsp.take_notices() == []
    finally:
        await lsp.close()


async def test_a_refused_program_never_starts(host: HostSandbox) -> None:
    lsp = servers(host, check=lambda argv: "it runs x from the workspace")
    try:
        assert await lsp.check([("a.txt", "ERROR\n")]) == []
        (said,) = lsp.take_notices()
        assert f"{sys.executable}: it runs x from the workspace" in said
        assert not host._groups  # nothing was started
    finally:
        await lsp.close()


async def test_off_says_why_and_starts_nothing(host: HostSandbox) -> None:
    lsp = servers(host, off="the project is not trusted")
    try:
        assert await lsp.check([("a.txt", "ERROR\n")]) == []
        assert lsp.take_notices() == [
            "diagnostics for fake files are off: the project is not trusted."
        ]
        assert not host._groups
    finally:
        await lsp.close()


async def test_the_sandbox_script_picks_the_first_program_found(host: HostSandbox) -> None:
    spec = ServerSpec("fake", (("no-such-server-x1",), (sys.executable, FAKE)), ("*.txt",))
    lsp = servers(host, spec, check=None)  # launched as in a sandbox: the shell decides
    try:
        (found,) = await lsp.check([("a.txt", "ERROR\n")])
        assert found.server == sys.executable and len(found.diagnostics) == 1
    finally:
        await lsp.close()
    missing = ServerSpec("fake", (("no-such-server-x1",), ("no-such-server-x2",)), ("*.txt",))
    lsp = servers(host, missing, check=None)
    try:
        assert await lsp.check([("a.txt", "ERROR\n")]) == []
        (said,) = lsp.take_notices()
        assert "installed in the sandbox (looked for no-such-server-x1, no-such-server-x2)" in said
    finally:
        await lsp.close()


async def test_close_stops_the_server(host: HostSandbox) -> None:
    lsp = servers(host)
    await lsp.check([("a.txt", "ERROR\n")])
    (group,) = host._groups
    await lsp.close()
    from clover_code.tools.sandbox.local_job import group_alive

    assert not group_alive(group)


async def test_edit_tools_report_and_the_tool_looks(host: HostSandbox) -> None:
    lsp = servers(host)
    ctx = ToolContext(workspace=Workspace(host.root), diagnostics=lsp)
    try:
        written = await WriteFileTool().run(WriteFileArgs(path="a.txt", content="ok\n"), ctx)
        assert "Diagnostics" not in written.text
        edit = EditFileArgs(path="a.txt", old_string="ok", new_string="ERROR")
        edited = await EditFileTool().run(edit, ctx)
        assert "Diagnostics after this change" in edited.text
        assert "a.txt:1:1: error: error here [F1]" in edited.text
        assert edited.display is not None and edited.display.diagnostics[0].line == 1  # type: ignore[union-attr]
        looked = await DiagnosticsTool().run(DiagnosticsArgs(path="a.txt"), ctx)
        assert looked.text.startswith("1 diagnostic(s) in a.txt")
        (host.root / "b.md").write_text("ERROR\n")
        with pytest.raises(ToolError, match=r"no language server checks 'b\.md'"):
            await DiagnosticsTool().run(DiagnosticsArgs(path="b.md"), ctx)
    finally:
        await lsp.close()
