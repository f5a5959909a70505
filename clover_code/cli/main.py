"""The one entry point: ``clover-code`` (app), ``--task`` (headless), and the table of
the other commands (``SUBCOMMANDS``), each run by its own module."""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clover_code import __version__
from clover_code.config.flags import (
    ENGINE_FLAGS,
    Flag,
    FlagSpec,
    add_engine_arguments,
    add_setting_flags,
    given_settings,
)
from clover_code.errors import CloverError, ExitCode, UsageError

if TYPE_CHECKING:
    from clover_code.cli.worktree import SessionWorktree
    from clover_code.config.settings import Settings
    from clover_code.protocol import ImageAttachment


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


def _commands_help() -> str:
    """The list of commands at the end of ``--help``."""
    rows = [
        ("clover-code", "the interactive app in this directory"),
        ("clover-code --task TEXT", "run one task headless (see the task options above)"),
    ]
    rows += [(f"clover-code {c.name} {c.arguments}".rstrip(), c.summary) for c in SUBCOMMANDS]
    # The summaries line up in one column; a longer command keeps a wide gap.
    lines = [f"  {usage}{' ' * max(28 - len(usage), 3)}{summary}\n" for usage, summary in rows]
    return "commands:\n" + "".join(lines) + "  each command has its own --help\n\n"


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
        epilog=_commands_help() + EXIT_CODES_HELP,
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


def _read_task(args: argparse.Namespace) -> str | None:
    if args.task_file is not None:
        try:
            text: str = args.task_file.read_text("utf-8")
        except FileNotFoundError:
            raise UsageError(f"task file {args.task_file} does not exist.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"task file {args.task_file} cannot be read ({exc}).") from None
    elif args.task == "-":
        text = sys.stdin.read()
    elif args.task is not None:
        text = args.task
    else:
        return None
    if not text.strip():
        raise UsageError("the task is empty; say what the agent should do.")
    return text


def _read_images(args: argparse.Namespace, task: str | None) -> tuple[ImageAttachment, ...]:
    """The images ``--image`` attaches (``ImageError``, exit 2, for one that cannot be)."""
    if not args.image:
        return ()
    if task is None:
        raise UsageError("--image needs a task (--task or --task-file); in the app, type @FILE.")
    from clover_code.fs.images import read_image
    from clover_code.protocol import ImageAttachment

    return tuple(ImageAttachment.of(*read_image(path), str(path)) for path in args.image)


def _cli_settings(args: argparse.Namespace) -> dict[str, Any]:
    return given_settings(args, ENGINE_FLAGS, TASK_FLAGS, ("sandbox_network",))


def run(argv: list[str], loaded: Callable[[], None] = lambda: None) -> int:
    """Parse ``argv`` and run; returns the exit code. ``loaded`` is called once the
    command's modules are loaded, before its work starts."""
    for command in SUBCOMMANDS:
        if argv[:1] == [command.name]:
            loaded()
            return command.run(argv[1:])
    started = time.monotonic()
    args = build_parser().parse_args(argv)
    from clover_code.agent.transcript import find_session
    from clover_code.config.settings import load_settings
    from clover_code.fs.workspace_root import find_root

    cwd = (args.cd or Path.cwd()).resolve()
    session_tree: SessionWorktree | None = None
    try:
        if not cwd.is_dir():
            raise UsageError(f"directory {cwd} does not exist.")
        task = _read_task(args)
        images = _read_images(args, task)
        if args.worktree_from_dirty and args.worktree is None:
            raise UsageError("--worktree-from-dirty goes with --worktree; add it.")
        output_schema = None
        if args.output_schema is not None:
            if task is None:
                raise UsageError("--output-schema needs a task (--task or --task-file).")
            from clover_code.outcome.output_schema import load_output_schema

            output_schema = load_output_schema(args.output_schema)
        if args.worktree is not None:
            session_tree = _enter_worktree(cwd, args)
            cwd = session_tree.cwd
        root, _ = find_root(cwd)
        settings = load_settings(
            _cli_settings(args), repo_root=root, trust_project=args.trust_project
        )
        resume = None
        if args.resume is not None or args.continue_:
            resume = find_session(settings.resolved_sessions_dir(), args.resume or None, root)
        if args.fork is not None:
            from clover_code.agent.fork import fork_session

            sessions = settings.resolved_sessions_dir()
            resume = fork_session(find_session(sessions, args.fork, root), sessions)
        if args.watch:
            if task is not None:
                raise UsageError("--watch and --task do not go together; use one of them.")
            from clover_code.watch import run_watch

            loaded()
            return run_watch(settings, cwd)
        if task is None and not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise UsageError(
                "the interactive app needs a terminal; without one, run a task headless "
                'with --task "..." (see --help).'
            )
    except CloverError as exc:
        from clover_code.headless.ending import report_error

        code = report_error(exc, args.output_format, sys.stdout, sys.stderr, started=started)
        if session_tree is not None:
            session_tree.farewell(sys.stderr)
        return code
    try:
        if task is None:
            from clover_code.ui.run import run_app

            def reload() -> Settings:
                return load_settings(_cli_settings(args), repo_root=root)

            try:
                return run_app(settings, cwd, resume=resume, reload=reload, loaded=loaded)
            except CloverError as exc:  # the app's own settings (theme, [keys]), before it starts
                from clover_code.headless.ending import report_error

                return report_error(
                    exc, args.output_format, sys.stdout, sys.stderr, started=started
                )
        from clover_code.headless.run import run_task

        loaded()
        return asyncio.run(
            run_task(
                settings,
                task,
                cwd,
                output_format=args.output_format,
                resume=resume,
                started=started,
                output_schema=output_schema,
                own_process=True,
                images=images,
                # json and stream-json carry fill confidences: say once when there are none.
                confidence_notice=args.output_format != "text",
            )
        )
    finally:
        if session_tree is not None:
            session_tree.farewell(sys.stderr)


def _enter_worktree(cwd: Path, args: argparse.Namespace) -> SessionWorktree:
    """The worktree ``--worktree`` names (made now, or reopened); what it did is said."""
    from clover_code.cli.worktree import open_worktree

    tree = open_worktree(cwd, args.worktree or None, carry=args.worktree_from_dirty)
    sys.stderr.write(f"clover-code: working in {tree.path} on branch {tree.branch}.\n")
    for note in tree.notes:
        sys.stderr.write(f"clover-code: {note}\n")
    return tree


UNUSED_IMPORTS = ("httpx._main", "trio")
"""Optional imports of our libraries that this command never uses, blocked for its
process: httpx loads its command-line client (click, rich, pygments: some 45 ms and
6 MiB) and httpcore loads trio whenever they are installed, and both fall back
quietly when the import fails. Our event loop is asyncio's."""


def block_unused_imports() -> None:
    """Make the imports in ``UNUSED_IMPORTS`` fail (a None in ``sys.modules`` does that)."""
    for name in UNUSED_IMPORTS:
        if name not in sys.modules:
            sys.modules[name] = None  # type: ignore[assignment]  # documented by importlib


def start_up_loaded() -> None:
    """End of the start-up: what the modules made stays for the life of the process, so the
    collector is told never to scan it again (``gc.freeze``), and collection resumes."""
    gc.freeze()
    gc.enable()


def main() -> None:
    """Console-script entry point."""
    # Loading the modules makes objects by the hundred thousand and frees few: the
    # collector's passes over them cost a tenth of a short run's CPU and find nothing.
    gc.disable()
    block_unused_imports()
    from clover_code.proc.parent_tie import tie_to_parent
    from clover_code.redact import redact_log_records

    try:
        redact_log_records()
        tie_to_parent()
        code = run(sys.argv[1:], start_up_loaded)
    except KeyboardInterrupt:
        code = ExitCode.INTERRUPTED
    sys.exit(code)
