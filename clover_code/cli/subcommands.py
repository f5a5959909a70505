"""The table of the commands besides the app and ``--task`` (``SUBCOMMANDS``): each one
run by its own module, imported only when it runs, and listed at the end of
``clover-code --help``."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["SUBCOMMANDS", "Subcommand", "commands_help"]


@dataclass(frozen=True, slots=True)
class Subcommand:
    """``clover-code NAME ...``: run by ``main(argv) -> int`` of ``module``, whose
    ``build_parser()`` is its command line (the reference pages read it)."""

    name: str
    module: str
    summary: str
    """Its line in ``clover-code --help``."""
    arguments: str = ""
    """What that line shows after the name."""

    def run(self, argv: list[str]) -> int:
        """Run it with ``argv`` (what follows its name); returns the exit code.

        Its module is imported only now: each command loads what it needs.
        """
        main: Callable[[list[str]], int] = importlib.import_module(self.module).main
        return main(argv)

    def build_parser(self) -> argparse.ArgumentParser:
        """Its command line."""
        build: Callable[[], argparse.ArgumentParser] = importlib.import_module(
            self.module
        ).build_parser
        return build()


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand(
        "acp",
        "clover_code.acp.main",
        "serve the Agent Client Protocol on stdin/stdout (editors)",
    ),
    Subcommand(
        "serve",
        "clover_code.serve.main",
        "serve a local checkpoint as an OpenAI-compatible server",
    ),
    Subcommand(
        "sandbox",
        "clover_code.cli.sandbox",
        "build, check or run a command in the sandbox (sandbox --help)",
    ),
    Subcommand(
        "review",
        "clover_code.cli.review",
        "review a change headless: findings as text, JSON or SARIF",
        arguments="[BASE]",
    ),
    Subcommand(
        "batch",
        "clover_code.batch.main",
        "many tasks, each in its own clone (batch --help)",
        arguments="TASKS.jsonl --out DIR",
    ),
    Subcommand(
        "export",
        "clover_code.cli.export",
        "write a stored session as Markdown or self-contained HTML",
        arguments="[ID] [-o FILE]",
    ),
    Subcommand(
        "plugin",
        "clover_code.cli.plugin",
        "install, list, enable, disable or remove plugins",
        arguments="install|list|...",
    ),
    Subcommand(
        "schema",
        "clover_code.cli.schema",
        "JSON Schema of the headless JSON result / stream lines",
        arguments="result|events",
    ),
    Subcommand(
        "mcp-server",
        "clover_code.mcp_server.main",
        "serve the agent as an MCP server on stdin/stdout",
    ),
    Subcommand(
        "web",
        "clover_code.webapp.main",
        "serve the app as a web page (web --help)",
    ),
    Subcommand(
        "github",
        "clover_code.github.main",
        "act on @clover mentions inside a GitHub Actions job",
    ),
    Subcommand(
        "worktree",
        "clover_code.cli.worktree",
        "the git worktrees clover-code made for this repository",
        arguments="list|remove NAME|prune",
    ),
    Subcommand(
        "doctor",
        "clover_code.doctor.main",
        "check what a run needs and say how to fix what is missing",
    ),
)
"""Every command but the app and ``--task``, in the order ``--help`` lists them."""


def commands_help() -> str:
    """The list of commands at the end of ``--help``."""
    rows = [
        ("clover-code", "the interactive app in this directory"),
        ("clover-code --task TEXT", "run one task headless (see the task options above)"),
    ]
    rows += [(f"clover-code {c.name} {c.arguments}".rstrip(), c.summary) for c in SUBCOMMANDS]
    # The summaries line up in one column; a longer command keeps a wide gap.
    lines = [f"  {usage}{' ' * max(28 - len(usage), 3)}{summary}\n" for usage, summary in rows]
    return "commands:\n" + "".join(lines) + "  each command has its own --help\n\n"
