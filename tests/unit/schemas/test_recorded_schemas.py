"""The JSON schemas the command publishes stay byte for byte what was recorded.

Models are built when first used (``defer_build``) to keep the start short; how
and when a model is built must not change what its schema says. The settings'
schema documents the config files, each tool's is what the model is sent, the
result's and the protocol's are what other programs read.

After a deliberate change to a schema, record them again:
``python -m tests.unit.schemas.test_recorded_schemas``.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

RECORDED = Path(__file__).with_name("recorded.json")

_MODELS = (
    "clover_code.config.settings:Settings",
    "clover_code.config.app_settings:AppSettings",
    "clover_code.config.engine:ModelSettings",
    "clover_code.config.sections:McpServerConfig",
    "clover_code.config.sections:LspServerConfig",
    "clover_code.config.sections:HookConfig",
    "clover_code.config.sections:PermissionRules",
    "clover_code.config.sections:ModelPrice",
    "clover_code.config.models:ModelEntry",
    "clover_code.plugins.store:InstalledPlugin",
    "clover_code.agent.extensions.task_tool:TaskArgs",
    "clover_code.agent.extensions.task_tool:TaskResultArgs",
    "clover_code.agent.extensions.task_tool:TaskStopArgs",
    "clover_code.tools.grep:GrepArgs",
    "clover_code.tools.lsp.tool:DiagnosticsArgs",
    "clover_code.tools.job_tools:JobOutputArgs",
    "clover_code.tools.job_tools:JobStopArgs",
    "clover_code.tools.web:WebFetchArgs",
    "clover_code.tools.web:WebSearchArgs",
    "clover_code.tools.listing:ListFilesArgs",
    "clover_code.tools.listing:GlobArgs",
    "clover_code.tools.read_file:ReadFileArgs",
    "clover_code.tools.read_output:ReadOutputArgs",
    "clover_code.tools.todo:TodoArgs",
    "clover_code.tools.todo:TodoEntry",
    "clover_code.tools.skill:SkillArgs",
    "clover_code.tools.shell:ShellArgs",
    "clover_code.tools.repo_map:RepoMapArgs",
    "clover_code.tools.write_file:WriteFileArgs",
    "clover_code.tools.apply_patch:ApplyPatchArgs",
    "clover_code.tools.edit_file:EditFileArgs",
)
_ADAPTERS = (
    "clover_code.protocol.events:EVENT_ADAPTER",
    "clover_code.protocol.ops:OP_ADAPTER",
    "clover_code.protocol.tool_display:DISPLAY_ADAPTER",
)
_PUBLISHED = ("result", "events")
"""``clover-code schema result|events`` (the result's models, described from their
docstrings, which changes the models: so never recorded bare)."""


def _load(path: str) -> Any:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def _schemas() -> dict[str, str]:
    """Each schema as the text it is published as (keys in the model's order)."""
    out: dict[str, str] = {}
    for path in _MODELS:
        model = _load(path)
        assert isinstance(model, type) and issubclass(model, BaseModel)
        out[path] = json.dumps(model.model_json_schema())
    for path in _ADAPTERS:
        out[path] = json.dumps(_load(path).json_schema())
    from clover_code.cli.schema import SCHEMAS

    for which in _PUBLISHED:
        out[which] = json.dumps(SCHEMAS[which]())
    return out


@pytest.mark.parametrize("path", _MODELS + _ADAPTERS + _PUBLISHED)
def test_a_schema_is_what_was_recorded(path: str) -> None:
    recorded = json.loads(RECORDED.read_text())
    assert _schemas()[path] == recorded[path]


def test_every_tool_argument_model_is_recorded() -> None:
    from clover_code.tools.base import Tool

    def subclasses(cls: type) -> list[type]:
        found = []
        for sub in cls.__subclasses__():
            found += [sub, *subclasses(sub)]
        return found

    import clover_code.tools

    # Every module of the tools package, and the agent's own tools.
    for info in pkgutil.walk_packages(clover_code.tools.__path__, "clover_code.tools."):
        importlib.import_module(info.name)
    importlib.import_module("clover_code.agent.extensions.task_tool")
    # A tool that sends its own schema (an MCP server's) has none of ours to record, nor
    # has a function of an embedding program (sdk) or a test's tool.
    args = {
        f"{tool.Args.__module__}:{tool.Args.__qualname__}"
        for tool in subclasses(Tool)
        if tool.spec is Tool.spec
        and getattr(tool, "Args", None) is not None
        and tool.__module__.startswith(("clover_code.tools", "clover_code.agent"))
    }
    assert args - set(_MODELS) == set()


if __name__ == "__main__":
    RECORDED.write_text(json.dumps(_schemas(), indent=1) + "\n")
    sys.exit(0)
