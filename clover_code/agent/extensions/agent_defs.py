"""Agent definitions for the ``task`` tool: the built-in ones and the user's Markdown files.

A definition names a child agent the model may start: what it is for (its
description, listed in the system prompt), which tools it gets and what it is
told (its system prompt). ``explore`` (read and search tools; the default) and
``general`` (the parent's tools) are built in. More live in the project's
``.clover/agents/``, in the user config dir's ``agents/`` and in plugins
(named ``plugin:agent``), one Markdown file each: YAML front matter ``name``,
``description``, ``tools`` (a list, or names separated by commas), an optional
``model`` and an optional ``isolation`` (``worktree``: a child that may write works
in a git worktree of its own and its changes are merged back when it ends;
``shared``, the default: the parent's workspace); the body is the system prompt.
A malformed file is skipped with a note naming it.

The tools a definition names are only ever a filter on the parent's tools
(``SubagentRunner`` intersects them), so a definition, even one a project
ships, cannot give a child more than its parent has; ``.clover/agents/`` is
under ``.clover/``, which the permission policy protects from the agent's own
edits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from clover_code.agent.extensions.frontmatter import (
    FrontMatterError,
    named_entry,
    split_front_matter,
    why_skipped,
)

__all__ = [
    "BUILTIN_AGENTS",
    "DEFAULT_AGENT",
    "ISOLATIONS",
    "PROJECT_AGENTS_DIR",
    "AgentDefinition",
    "Isolation",
    "agents_prompt",
    "load_agents",
]

PROJECT_AGENTS_DIR = ".clover/agents"
"""Where a project keeps its agent definitions, relative to the workspace root."""
DEFAULT_AGENT = "explore"
READ_KINDS = frozenset({"read", "search"})

Isolation = Literal["shared", "worktree"]
"""Where a child works: the parent's workspace, or a git worktree of its own."""
ISOLATIONS: tuple[Isolation, ...] = get_args(Isolation)


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    """What a child agent is for, which tools it may have and what it is told."""

    name: str
    description: str
    prompt: str
    tools: frozenset[str] | None = None
    """Tool names (a filter on the parent's tools); None: by ``read_only``."""
    read_only: bool = False
    """Only the parent's read and search tools (when ``tools`` is None), and the
    read-only approval mode whatever the parent's is."""
    model: str | None = None
    """The model the definition asks for: a remote server is asked for it; a local
    engine serves one model, so the child runs on that (with a notice)."""
    source: str = "built-in"
    """``built-in``, or the file it came from."""
    isolation: Isolation = "shared"
    """``worktree``: a child that may write gets a worktree of its own (a ``task``
    call may ask for it too)."""


_EXPLORE_PROMPT = (
    "You are an explore agent: a helper started by another agent to investigate one "
    "question in this repository. Read and search the files you need (you cannot change "
    "anything), then answer with what you found: the facts, the file paths and line "
    "numbers that back them, and nothing else. Your answer is all the other agent sees."
)
_GENERAL_PROMPT = (
    "You are a general agent: a helper started by another agent to carry out one "
    "self-contained task in this repository. Do the task with the tools you have, then "
    "answer with a short report of what you did and found; your answer is all the other "
    "agent sees."
)

BUILTIN_AGENTS: dict[str, AgentDefinition] = {
    "explore": AgentDefinition(
        "explore",
        "Investigates a question with read and search tools only (cannot change files); "
        "answers with findings and file references. The default.",
        _EXPLORE_PROMPT,
        read_only=True,
    ),
    "general": AgentDefinition(
        "general",
        "Carries out a self-contained task with the same tools and approval mode as you "
        "(may edit files and run commands when you may).",
        _GENERAL_PROMPT,
    ),
}


def load_agents(
    root: Path, config_dir: Path | None, plugins: Sequence[tuple[str, Path]] = ()
) -> tuple[dict[str, AgentDefinition], list[str]]:
    """The built-in agents plus the project's, the user's and ``plugins``' (each
    plugin's name and agents folder; its agents are named ``plugin:agent``), and a
    note per skipped file.

    A project definition wins over a user one of the same name; neither may take
    a built-in name."""
    places: list[tuple[Path, str]] = [(root / PROJECT_AGENTS_DIR, "")]
    if config_dir is not None:
        places.append((config_dir / "agents", ""))
    places += [(folder, f"{name}:") for name, folder in plugins]
    agents = dict(BUILTIN_AGENTS)
    notes: list[str] = []
    for base, prefix in places:
        try:
            files = sorted(p for p in base.glob("*.md") if p.is_file())
        except OSError:
            continue
        for path in files:
            try:
                agent = _read(path, prefix)
            except (FrontMatterError, OSError, UnicodeDecodeError) as exc:
                notes.append(f"agent file {path} was skipped: {why_skipped(exc)}.")
                continue
            if agent.name in agents:
                kept = agents[agent.name].source
                notes.append(
                    f"agent file {path} was skipped: the agent '{agent.name}' of {kept} "
                    "has the same name."
                )
                continue
            agents[agent.name] = agent
    return agents, notes


def _read(path: Path, prefix: str = "") -> AgentDefinition:
    meta, body = split_front_matter(path.read_text("utf-8"))
    name, description = named_entry(meta, path.stem)
    name = prefix + name
    if not body.strip():
        raise FrontMatterError("it has no system prompt after the front matter")
    model = meta.get("model")
    if model is not None and not isinstance(model, str):
        raise FrontMatterError("its model must be a string")
    tools = _tools(meta.get("tools"))
    isolation = meta.get("isolation", "shared")
    if isolation not in ISOLATIONS:
        raise FrontMatterError("its isolation must be shared or worktree")
    return AgentDefinition(
        name,
        description,
        body.strip(),
        tools=tools,
        read_only=tools is None,
        model=model,
        source=str(path),
        isolation="worktree" if isolation == "worktree" else "shared",
    )


def _tools(value: object) -> frozenset[str] | None:
    """The ``tools`` entry: a list or a comma-separated string; absent means read-only."""
    if value is None:
        return None
    if isinstance(value, str):
        names = [n.strip() for n in value.split(",")]
    elif isinstance(value, list) and all(isinstance(n, str) for n in value):
        names = [str(n).strip() for n in value]
    else:
        raise FrontMatterError("its tools must be a list of tool names")
    return frozenset(n for n in names if n)


def agents_prompt(agents: dict[str, AgentDefinition]) -> str:
    """The system prompt's section: each agent's name and description."""
    if not agents:
        return ""
    lines = [f"- {a.name}: {a.description}" for a in agents.values()]
    return (
        "Agents for the task tool (start one per independent investigation or sub-task; "
        "several task calls in one response run at the same time, each with its own "
        "context, and only its final answer comes back to you):\n" + "\n".join(lines)
    )
