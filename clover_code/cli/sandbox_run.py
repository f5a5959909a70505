"""``clover-code sandbox run``: one command in the sandbox the agent's commands run in.

    clover-code sandbox run [-C DIR] [--sandbox KIND] [--network] [--timeout S]
                            [--trust-project] (-c 'SHELL LINE' | -- PROGRAM ARG...)

The sandbox is chosen exactly as for the agent (settings, the project's trusted
image, ``--sandbox``), and ``.git`` is checked after the command as after every
agent command, so a build or test run of code the agent wrote cannot plant
anything the user's git would run. Batch runs use it for their ``setup`` and
``test_command``. Output streams to stdout (its first megabyte, as the agent's
live output); the exit status is the command's, 124 when it ran past
``--timeout``, 3 when no sandbox can run here, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from pathlib import Path

from clover_code.errors import ExitCode, UsageError

__all__ = ["add_run_parser", "run_main"]

TIMED_OUT = 124
"""Exit status of a command that ran past ``--timeout`` (as ``timeout(1)`` has it)."""


def add_run_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``run`` sub-command's interface."""
    run = sub.add_parser(
        "run",
        help="run one command in the sandbox",
        description="Run one command in the sandbox the agent's commands run in "
        "(chosen by settings and --sandbox); .git is checked afterwards.",
    )
    run.add_argument("-C", dest="directory", type=Path, default=None, help="workspace")
    run.add_argument(
        "--sandbox",
        choices=("auto", "docker", "bwrap", "none"),
        default=None,
        help="where to run it (default: the sandbox setting)",
    )
    run.add_argument("--network", action="store_true", help="let the command reach the network")
    run.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS", help="limit (600)")
    run.add_argument(
        "--trust-project",
        action="store_true",
        help="apply this project's settings and image definition as they are now",
    )
    run.add_argument("-c", dest="line", metavar="'SHELL LINE'", help="a bash command line")
    run.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARG...")


def _command(args: argparse.Namespace) -> str:
    argv = list(args.argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if args.line is not None and argv:
        raise UsageError("give the command either with -c or after --, not both.")
    if args.line is not None:
        if not args.line.strip():
            raise UsageError("the -c command line is empty.")
        return str(args.line)
    if not argv:
        raise UsageError("no command given; pass -c 'LINE' or -- PROGRAM ARG...")
    return shlex.join(argv)


def run_main(args: argparse.Namespace) -> int:
    """Run ``clover-code sandbox run``; returns the exit status."""
    command = _command(args)
    if args.timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds.")
    start = (args.directory or Path.cwd()).expanduser()
    if not start.is_dir():
        raise UsageError(f"{start} is not a directory; pass an existing workspace with -C.")
    try:
        return asyncio.run(_run(command, start, args))
    except KeyboardInterrupt:
        print("clover-code: interrupted.", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)


async def _run(command: str, start: Path, args: argparse.Namespace) -> int:
    from clover_code.config.load import load_settings
    from clover_code.fs.workspace_root import find_root
    from clover_code.tools.sandbox.git_guard import GitGuard
    from clover_code.tools.sandbox.select import choose_from_settings

    root, _ = find_root(start)
    cli: dict[str, object] = {"sandbox": args.sandbox}
    if args.network:
        cli["sandbox_network"] = True
    settings = load_settings(cli, repo_root=root, trust_project=args.trust_project)

    def progress(line: str) -> None:
        print(f"clover-code: {line}", file=sys.stderr, flush=True)

    choice = await asyncio.to_thread(choose_from_settings, settings, root, progress)
    if choice.sandbox is None:
        print(f"clover-code: {choice.notice}", file=sys.stderr)
        return int(ExitCode.SANDBOX_UNAVAILABLE)
    sandbox = choice.sandbox
    if choice.warning and choice.notice:
        print(f"clover-code: {choice.notice}", file=sys.stderr)

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    guard = await asyncio.to_thread(GitGuard.before_command, root)
    try:
        if start.resolve() != root and start.resolve().is_relative_to(root):
            command = f"cd {shlex.quote(str(start.resolve().relative_to(root)))} && {command}"
        result = await sandbox.exec(command, timeout=args.timeout, on_output=write)
    finally:
        restored = await asyncio.shield(asyncio.to_thread(guard.check))
        if restored is not None:
            print(f"clover-code: {restored}", file=sys.stderr)
        await asyncio.shield(sandbox.close())
    if result.timed_out:
        print(
            f"clover-code: the command ran past {args.timeout:g} s and was stopped.",
            file=sys.stderr,
        )
        return TIMED_OUT
    return result.exit_code if result.exit_code is not None else 1
