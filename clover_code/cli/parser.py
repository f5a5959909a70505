"""The command line of ``clover-code`` itself: the app's and ``--task``'s options
(``build_parser``), with the commands and exit codes its ``--help`` ends with, and the
settings its flags give (``cli_settings``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from clover_code import __version__
from clover_code.cli.subcommands import commands_help
from clover_code.config.flags import (
    ENGINE_FLAGS,
    Flag,
    FlagSpec,
    add_engine_arguments,
    add_setting_flags,
    given_settings,
)

__all__ = ["EXIT_CODES_HELP", "TASK_FLAGS", "build_parser", "cli_settings"]

EXIT_CODES_HELP = """exit codes:
  0    the task completed
  1    the agent failed (engine error mid-task, repeated malformed tool calls)
  2    usage or config error (bad flag, bad --base-url, bad config file, missing task file)
  3    no engine available (no server configured, unreachable, API key refused at start
       or mid-task, unknown model)
  4    a limit was reached (--max-turns, --timeout, --max-tokens, --max-cost)
  130  interrupted (Ctrl+C); the transcript is saved and can be resumed
"""


TASK_FLAGS: tuple[FlagSpec, ...] = (
    Flag(
        "max_turns",
        metavar="N",
        help="most model requests (each model response, tool rounds included) per task",
    ),
    Flag("timeout", metavar="SECONDS", help="wall-clock limit"),
    Flag(
        "max_cost",
        metavar="AMOUNT",
        help="most money the session may spend, children included (needs [pricing.MODEL]); "
        "the task ends as a limit (exit 4) before the next request once it is spent",
    ),
    Flag(
        "max_tokens",
        metavar="N",
        help="most tokens per model response (default: what the context leaves, at most 32768)",
    ),
    Flag(
        "approval",
        help="what may run without asking (headless default: sandbox-auto, commands run "
        "without asking only in Docker or bubblewrap; asking = refused)",
    ),
    Flag(
        "auto_commit",
        help="commit the agent's changes on the current branch when the task completes (CI)",
    ),
)
"""The settings the task (headless) options set."""


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(
        prog="clover-code",
        description="A coding agent for block-diffusion LLMs and any OpenAI-compatible server.",
        epilog=commands_help() + EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"clover-code {__version__}")
    task = parser.add_argument_group("task (headless mode)")
    source = task.add_mutually_exclusive_group()
    source.add_argument("--task", metavar="TEXT", help="run one task headless ('-' reads stdin)")
    source.add_argument("--task-file", metavar="FILE", type=Path, help="read the task from FILE")
    task.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="text (default), one JSON result, or the event stream as JSON lines",
    )
    task.add_argument(
        "--output-schema",
        type=Path,
        metavar="FILE",
        help="a JSON Schema the final answer must match (the model retries on a mismatch; "
        "the value is the result's structured_output)",
    )
    task.add_argument(
        "--image",
        action="append",
        type=Path,
        metavar="FILE",
        help="attach an image (PNG, JPEG, GIF or WebP) to the task; repeatable. A model "
        "that takes no images gets the text alone, and a warning says so",
    )
    add_setting_flags(task, TASK_FLAGS)
    resume = task.add_mutually_exclusive_group()
    resume.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="ID",
        help="resume session ID (or a unique prefix); without ID, the latest in this repository",
    )
    resume.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="resume the latest session in this repository",
    )
    resume.add_argument(
        "--fork",
        metavar="ID",
        help="start a new session with a copy of session ID's conversation (ID is untouched)",
    )
    add_engine_arguments(parser)
    add_setting_flags(parser, ("sandbox_network",))
    parser.add_argument(
        "--watch",
        action="store_true",
        help="watch the repository and act on comments ending in AI! (do it) or AI? (answer)",
    )
    parser.add_argument("-C", "--cd", type=Path, metavar="DIR", help="work in DIR")
    parser.add_argument(
        "--worktree",
        nargs="?",
        const="",
        metavar="NAME",
        help="work in a git worktree of this repository on branch clover/NAME (made in "
        "clover-code's data directory; your checkout stays as it is; the same NAME again "
        "reopens it); without NAME, a new one",
    )
    parser.add_argument(
        "--worktree-from-dirty",
        action="store_true",
        help="with --worktree: carry your uncommitted changes over to the new worktree",
    )
    parser.add_argument(
        "--trust-project",
        action="store_true",
        help="trust this repository's .clover/config.toml and .mcp.json as they are now "
        "(remembered until they change), so settings in them that loosen safety apply",
    )
    return parser


def cli_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the flags in ``args`` give (those left unset are not among them)."""
    return given_settings(args, ENGINE_FLAGS, TASK_FLAGS, ("sandbox_network",))
