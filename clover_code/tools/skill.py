"""The ``skill`` tool: load a skill's instructions (see ``clover_code.agent.extensions.skills``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, Field

from clover_code.errors import ToolError
from clover_code.protocol import SkillLoaded
from clover_code.tools.base import Tool, ToolContext, ToolKind, ToolResult

__all__ = ["LoadedSkill", "SkillArgs", "SkillTool"]


class LoadedSkill(Protocol):
    """What the tool needs of a skill (``clover_code.agent.extensions.skills.Skill`` is one);
    a protocol, so the tools layer does not import the agent."""

    @property
    def name(self) -> str:
        """The name the model asks for."""
        ...

    @property
    def body(self) -> str:
        """The instructions of its SKILL.md."""
        ...

    @property
    def folder(self) -> Path:
        """Its folder, resolved."""
        ...

    def files(self) -> list[Path]:
        """Its files besides SKILL.md."""
        ...


class SkillArgs(BaseModel):
    """Arguments of skill."""

    # Built when first used: a session without skills never validates one.
    model_config = ConfigDict(defer_build=True)

    name: str = Field(description="The skill's name, as the system prompt lists it.")


class SkillTool(Tool[SkillArgs]):
    """Gives the model a skill's body and the list of its files.

    A skill folder outside the workspace (the user's own skills) becomes
    readable by ``read_file`` once loaded, and only that folder."""

    name: ClassVar[str] = "skill"
    description: ClassVar[str] = (
        "Load a skill: its instructions and the list of its files. Use it when a skill's "
        "description in the system prompt fits the task, before doing the task. Read the "
        "skill's files with read_file and run its scripts with the shell tool."
    )
    kind: ClassVar[ToolKind] = "read"
    Args = SkillArgs

    def __init__(self, skills: Sequence[LoadedSkill]) -> None:
        self.skills = {skill.name: skill for skill in skills}

    def summary(self, args: SkillArgs) -> str:
        """The skill's name."""
        return args.name

    async def run(self, args: SkillArgs, ctx: ToolContext) -> ToolResult:
        """The body of the skill and its files, as paths read_file takes."""
        skill = self.skills.get(args.name)
        if skill is None:
            known = ", ".join(sorted(self.skills)) or "none"
            raise ToolError(f"there is no skill '{args.name}'; the skills are: {known}")
        workspace = ctx.workspace
        inside = workspace.contains(skill.folder)
        if not inside and skill.folder not in ctx.read_roots:
            ctx.read_roots.append(skill.folder)
        files = [workspace.relative(f) if inside else str(f) for f in skill.files()]
        folder = workspace.relative(skill.folder) if inside else str(skill.folder)
        parts = [f"Skill '{skill.name}' (folder {folder}):", skill.body]
        if files:
            parts.append(
                "Files of this skill (read them with read_file at these paths; run its "
                "scripts with the shell tool):\n" + "\n".join(f"- {f}" for f in files)
            )
        return ToolResult("\n\n".join(parts), display=SkillLoaded(skill=skill.name, folder=folder))
