"""The system prompt: package prompt + environment facts + the repo's own instructions."""

from __future__ import annotations

import platform
from datetime import date
from importlib import resources
from pathlib import Path

INSTRUCTION_FILES = ("AGENTS.md", "CLOVER.md")
"""Files in the repository root whose text the model always sees (those of
sub-directories join once the agent works there: ``clover_code.agent.turn.nested``)."""

MAX_INSTRUCTION_CHARS = 40_000


def base_prompt() -> str:
    """The system prompt shipped with the package."""
    return resources.files("clover_code").joinpath("prompts/system.md").read_text("utf-8")


def repo_instructions(root: Path) -> list[tuple[str, str]]:
    """(file name, text) for each instruction file present in ``root``."""
    found = []
    for name in INSTRUCTION_FILES:
        path = root / name
        if path.is_file():
            text = path.read_text("utf-8", errors="replace")
            if len(text) > MAX_INSTRUCTION_CHARS:
                text = text[:MAX_INSTRUCTION_CHARS] + f"\n[... {name} truncated ...]"
            found.append((name, text))
    return found


def user_instructions(config_dir: Path | None) -> str:
    """The user's own ``AGENTS.md`` in the config dir (every repository), or ""."""
    if config_dir is None:
        return ""
    path = config_dir / "AGENTS.md"
    try:
        text = path.read_text("utf-8", errors="replace")
    except OSError:
        return ""
    return text[:MAX_INSTRUCTION_CHARS]


def system_prompt(
    root: Path,
    *,
    is_git: bool,
    shell: str | None,
    tools: list[str],
    repo_map: str = "",
    config_dir: Path | None = None,
    extra: list[str] | None = None,
) -> str:
    """Assemble the full system prompt for a session in ``root``.

    ``config_dir`` is the user config dir (its ``AGENTS.md`` applies to every
    repository); ``extra`` are further sections (e.g. the skills list)."""
    parts = [base_prompt().strip()]
    env = [
        f"- Repository root: {root}",
        f"- Git repository: {'yes' if is_git else 'no'}",
        f"- Platform: {platform.system()} {platform.release()}",
        f"- Today: {date.today().isoformat()}",
        f"- Tools: {', '.join(tools)}",
        (
            f"- Shell commands run in: {shell}"
            if shell
            else "- No shell: commands cannot be run in this session."
        ),
    ]
    parts.append("Environment:\n" + "\n".join(env))
    mine = user_instructions(config_dir).strip()
    if mine:
        parts.append(f"Instructions from your user AGENTS.md (follow them):\n{mine}")
    for name, text in repo_instructions(root):
        parts.append(f"Instructions from {name} (follow them):\n{text.strip()}")
    parts += [section.strip() for section in extra or () if section.strip()]
    if repo_map:
        parts.append(
            "Repository map (the most referenced definitions, by file; use the repo_map "
            "tool to focus it on other files or names):\n" + repo_map.strip()
        )
    return "\n\n".join(parts) + "\n"
