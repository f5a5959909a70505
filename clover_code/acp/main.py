"""``clover-code acp``: run the ACP agent on stdin/stdout until the editor hangs up.

Flags choose the engine and policies like the rest of clover-code (and the
same environment variables and config files apply); ``--terminal`` runs
shell commands in the editor's terminal instead of the sandbox. Logs and
problems go to stderr, which editors show in their agent log. End of input,
SIGTERM or Ctrl+C close every session cleanly: running turns end as
interrupted (their prompts answer ``cancelled``), transcripts are complete,
and every request still open gets an answer before the process exits (an
error, for one that cannot complete).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path
from typing import cast

from acp import Agent
from acp.agent.connection import AgentSideConnection

from clover_code.acp.agent import CloverAgent
from clover_code.acp.transport import LineTransport, stdio_pipes
from clover_code.config.flags import (
    ENGINE_FLAGS,
    Flag,
    FlagSpec,
    add_engine_arguments,
    add_setting_flags,
    given_settings,
)
from clover_code.errors import CloverError, ExitCode

__all__ = ["build_parser", "main", "serve"]

_OWN_FLAGS: tuple[FlagSpec, ...] = (
    Flag("approval", help="the starting mode (default: ask); the editor's mode picker changes it"),
    Flag(
        "max_turns",
        metavar="N",
        help="most model requests (each model response, tool rounds included) per prompt",
    ),
    Flag("timeout", metavar="SECONDS", help="limit per turn"),
    Flag("max_cost", metavar="AMOUNT", help="most money the session may spend (see pricing)"),
)
"""Settings this command has flags for besides the shared engine ones."""

_ANSWER_WAIT = 5.0
"""Seconds the requests still running at end of input get to answer."""


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``clover-code acp``."""
    parser = argparse.ArgumentParser(
        prog="clover-code acp",
        description="Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed.",
    )
    add_engine_arguments(parser)
    parser.add_argument(
        "--terminal",
        action="store_true",
        help="run shell commands in the editor's terminal (no sandbox) when it offers one",
    )
    add_setting_flags(parser, _OWN_FLAGS)
    parser.add_argument(
        "--trust-project",
        action="store_true",
        help="trust the .clover/config.toml and .mcp.json of the projects the editor opens, "
        "as they are now, so settings in them that loosen safety apply",
    )
    return parser


def main(argv: list[str]) -> int:
    """Parse ``argv``, check the settings, and serve; returns the exit code."""
    args = build_parser().parse_args(argv)
    cli = given_settings(args, ENGINE_FLAGS, _OWN_FLAGS)
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="clover-code acp: %(message)s"
    )
    try:
        from clover_code.config.load import load_settings
        from clover_code.fs.workspace_root import find_root

        settings = load_settings(cli, repo_root=find_root(Path.cwd())[0])
        if args.terminal:  # commands in the editor's terminal run on this machine
            settings.managed.refuse_host_terminal()
    except CloverError as exc:
        sys.stderr.write(f"clover-code acp: {exc}\n")
        return int(exc.exit_code)
    if sys.stdin.isatty():
        sys.stderr.write(
            "clover-code acp speaks the Agent Client Protocol on stdin and stdout; "
            "start it from an editor such as Zed (see the README).\n"
        )
    try:
        agent = CloverAgent(cli, terminal=args.terminal, trust_project=args.trust_project)
        return asyncio.run(serve(agent))
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)


async def serve(agent: CloverAgent) -> int:
    """Serve ``agent`` on the process's stdin/stdout until end of input."""
    try:
        reader, pipe = await stdio_pipes()
    except (OSError, ValueError) as exc:
        sys.stderr.write(
            f"clover-code acp: stdin and stdout must be pipes from an editor ({exc}).\n"
        )
        return int(ExitCode.USAGE)
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError):
        loop.add_signal_handler(signal.SIGTERM, reader.feed_eof)
    # The SDK routes only the methods an agent defines; the rest answer
    # "method not found", so a partial ``Agent`` is what it expects.
    transport = LineTransport(reader, pipe)
    connection = AgentSideConnection(cast(Agent, agent), transport, listening=False)
    try:
        await connection.listen()
    finally:
        # Sessions first, while replies can still go out: their running
        # prompts end and answer "cancelled". Then every other request still
        # running gets a moment to answer, and an error if it does not.
        await agent.close()
        if not await transport.settle(_ANSWER_WAIT):
            reason = "the editor closed the agent's input (end of input)."
            # An editor that no longer reads its end cannot hold the exit up.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(transport.refuse_open(reason), _ANSWER_WAIT)
        # A session that a late session/new opened meanwhile is closed too.
        await agent.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(connection.close(), 5.0)
    return int(ExitCode.OK)
