"""``clover-code mcp-server``: serve the agent over MCP on stdin/stdout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clover_code import __version__

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The mcp-server command's flags: the engine flags of the main command."""
    from clover_code.config.flags import add_engine_arguments

    parser = argparse.ArgumentParser(
        prog="clover-code mcp-server",
        description=(
            "Serve clover-code as an MCP server on stdin/stdout. Tools: run_task "
            "(prompt, cwd, approval, sandbox -> final answer, patch, session id) and "
            "continue_session (session_id, prompt). Nothing can be approved "
            "interactively: what the approval mode does not allow is refused."
        ),
    )
    parser.add_argument("--version", action="version", version=f"clover-code {__version__}")
    add_engine_arguments(parser)
    parser.add_argument(
        "--approval",
        choices=("read-only", "ask", "auto-edit", "full-auto"),
        help="the loosest approval mode a call may ask for (default auto-edit); --sandbox "
        "none lets calls run commands on this machine",
    )
    parser.add_argument(
        "--root",
        action="append",
        type=Path,
        metavar="DIR",
        help="a folder calls may work in (repeatable); a call's cwd must lie inside one "
        "(default: the directory the server was started in)",
    )
    parser.add_argument(
        "--call-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="the longest one call may take, waiting for another call on the same "
        "workspace included (1800)",
    )
    return parser


def main(argv: list[str]) -> int:
    """Run the server until the client closes stdin."""
    args = build_parser().parse_args(argv)
    from clover_code.config.flags import ENGINE_FLAGS, given_settings
    from clover_code.mcp_server.roots import Roots
    from clover_code.mcp_server.server import Approval, build_server

    base = given_settings(args, ENGINE_FLAGS)
    if not args.call_timeout > 0:
        print("clover-code mcp-server: --call-timeout must be above 0 seconds.", file=sys.stderr)
        return 2
    for root in args.root or ():
        if not root.expanduser().is_dir():
            print(f"clover-code mcp-server: --root {root} is not a directory.", file=sys.stderr)
            return 2
    from clover_code.config.load import refuse_flags
    from clover_code.errors import CloverError

    try:
        # Each call is checked again; a flag the administrator forbids stops the start.
        refuse_flags({**base, "approval": args.approval})
    except CloverError as exc:
        print(f"clover-code mcp-server: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    roots = Roots.given(args.root) if args.root else Roots.started_in(Path.cwd())
    ceiling: Approval = args.approval or "auto-edit"
    server = build_server(base, ceiling, roots=roots, call_timeout=args.call_timeout)
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        return 130
    sys.stdout.flush()
    return 0
