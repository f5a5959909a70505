"""Skills: folders holding a ``SKILL.md``, offered to the model by name and description.

A skill is a folder with a ``SKILL.md`` (YAML front matter ``name`` and
``description``, then a body of instructions) and any files or scripts beside
it. They are found in the project's ``.clover/skills/`` and ``.agents/skills/``,
in the user config dir's ``skills/`` (a project skill wins over a user one
of the same name) and in plugins (named ``plugin:skill``). The system prompt
lists each skill's name and description only; the model loads a skill's body with the ``skill`` tool
(``clover_code.tools.skill``) when the description fits the task. A
malformed ``SKILL.md`` is skipped with a note naming the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from clover_code.agent.extensions.frontmatter import (
    FrontMatterError,
    named_entry,
    split_front_matter,
    why_skipped,
)

__all__ = [
    "PROJECT_SKILL_DIRS",
    "SKILL_FILE",
    "Skill",
    "load_skills",
    "skills_listing",
    "skills_prompt",
]

SKILL_FILE = "SKILL.md"
PROJECT_SKILL_DIRS = (".clover/skills", ".agents/skills")
"""Where a project keeps its skills, relative to the workspace root."""
MAX_FILES = 200
"""Most files of a skill folder listed for the model."""


@dataclass(frozen=True, slots=True)
class Skill:
    """One skill as found on disk."""

    name: str
    description: str
    body: str
    folder: Path
    """The skill's folder, resolved."""
    source: str
    """``project``, ``user`` or ``plugin NAME``."""

    def files(self) -> list[Path]:
        """The skill's files besides SKILL.md (resolved, sorted; links are not followed)."""
        found: list[Path] = []
        for current, dirs, names in os.walk(self.folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                path = Path(current) / name
                if path != self.folder / SKILL_FILE and not name.startswith("."):
                    found.append(path)
                if len(found) >= MAX_FILES:
                    return found
        return found


def load_skills(
    root: Path, config_dir: Path | None, plugins: Sequence[tuple[str, Path]] = ()
) -> tuple[list[Skill], list[str]]:
    """The skills of workspace ``root``, of the user and of ``plugins`` (each plugin's
    name and skills folder; its skills are named ``plugin:skill``), and a note per
    skipped one."""
    places: list[tuple[Path, str, str]] = [
        (root / rel, "project", "") for rel in PROJECT_SKILL_DIRS
    ]
    if config_dir is not None:
        places.append((config_dir / "skills", "user", ""))
    places += [(folder, f"plugin {name}", f"{name}:") for name, folder in plugins]
    skills: dict[str, Skill] = {}
    notes: list[str] = []
    for base, source, prefix in places:
        for skill_md in _skill_files(base):
            try:
                skill = _read(skill_md, source, prefix)
            except (FrontMatterError, OSError, UnicodeDecodeError) as exc:
                notes.append(f"skill file {skill_md} was skipped: {why_skipped(exc)}.")
                continue
            if skill.name in skills:
                kept = skills[skill.name].folder / SKILL_FILE
                notes.append(
                    f"skill file {skill_md} was skipped: the skill '{skill.name}' of {kept} "
                    "has the same name."
                )
                continue
            skills[skill.name] = skill
    return list(skills.values()), notes


def _skill_files(base: Path) -> Iterable[Path]:
    try:
        folders = sorted(p for p in base.iterdir() if p.is_dir())
    except OSError:
        return []
    return [f / SKILL_FILE for f in folders if (f / SKILL_FILE).is_file()]


def _read(skill_md: Path, source: str, prefix: str = "") -> Skill:
    meta, body = split_front_matter(skill_md.read_text("utf-8"))
    folder = Path(os.path.realpath(skill_md.parent))
    name, description = named_entry(meta, skill_md.parent.name)
    if not body.strip():
        raise FrontMatterError("it has no instructions after the front matter")
    return Skill(prefix + name, description, body.strip(), folder, source)


def skills_prompt(skills: list[Skill]) -> str:
    """The system prompt's section: each skill's name and description only."""
    if not skills:
        return ""
    lines = [f"- {s.name}: {s.description}" for s in skills]
    return (
        "Skills (instructions for particular tasks; when one's description fits the "
        "task, load it with the skill tool before you start, then follow it):\n" + "\n".join(lines)
    )


def skills_listing(skills: list[Skill]) -> str:
    """A listing for the user (``/skills``): name, where it lives, description."""
    if not skills:
        return (
            "No skills. Add a folder with a SKILL.md to .clover/skills/, .agents/skills/ "
            "or the user config dir's skills/."
        )
    return "\n".join(f"{s.name} ({s.source}, {s.folder}): {s.description}" for s in skills)
