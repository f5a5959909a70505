"""The built-in tools, ready to offer to the model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clover_code.repomap import RepoMap
from clover_code.tools.apply_patch import ApplyPatchTool
from clover_code.tools.base import Tool
from clover_code.tools.edit_file import EditFileTool
from clover_code.tools.grep import GrepTool
from clover_code.tools.job_tools import JobOutputTool, JobStopTool
from clover_code.tools.listing import GlobTool, ListFilesTool
from clover_code.tools.read_file import ReadFileTool
from clover_code.tools.read_output import ReadOutputTool
from clover_code.tools.repo_map import RepoMapTool
from clover_code.tools.shell import ShellTool
from clover_code.tools.spill import OutputSpill
from clover_code.tools.todo import TodoTool
from clover_code.tools.write_file import WriteFileTool

if TYPE_CHECKING:
    from clover_code.config.settings import Settings

__all__ = ["default_tools"]


def default_tools(
    shell: bool,
    spill: OutputSpill | None = None,
    repo_map: RepoMap | None = None,
    settings: Settings | None = None,
) -> list[Tool[Any]]:
    """One instance of every built-in tool; ``shell`` adds the shell tool and the
    background job tools, ``spill`` (where long outputs are saved) the ``read_output``
    tool and ``settings`` the web tools (``tools.web``)."""
    tools: list[Tool[Any]] = [
        ReadFileTool(),
        WriteFileTool(),
        EditFileTool(),
        ApplyPatchTool(),
        ListFilesTool(),
        GlobTool(),
        GrepTool(),
        RepoMapTool(repo_map),
        TodoTool(),
    ]
    if shell:
        tools += [ShellTool(), JobOutputTool(), JobStopTool()]
    if spill is not None:
        tools.append(ReadOutputTool(spill))
    if settings is not None:
        from clover_code.tools.web import web_tools

        tools += web_tools(settings)
    return tools
