"""The one entry point: ``clover-code`` (app), ``--task`` (headless), or another command
(``SUBCOMMANDS``, ``cli/subcommands.py``) run by its own module; the command line itself
is ``cli/parser.py``'s."""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code.cli.parser import build_parser, cli_settings
from clover_code.cli.subcommands import SUBCOMMANDS
from clover_code.errors import CloverError, ExitCode, UsageError

if TYPE_CHECKING:
    from clover_code.cli.worktree import SessionWorktree
    from clover_code.config.settings import Settings
    from clover_code.protocol import ImageAttachment


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
    from clover_code.config.load import load_settings
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
            cli_settings(args), repo_root=root, trust_project=args.trust_project
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
                return load_settings(cli_settings(args), repo_root=root)

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
