"""``clover-code web [--host H] [--port P] [app flags]``: the app in a browser.

Each browser tab gets its own app process (textual-serve). The default is
loopback only; bound to any other address, the URL carries a random token
that every request must present, and a warning says who can reach it.
"""

from __future__ import annotations

import argparse
import secrets
import shlex
import subprocess
import sys

from clover_code.webapp import CHECK
from clover_code.webapp.guard import is_loopback

__all__ = ["build_parser", "child_command", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The web command's own flags; the rest go to the app (see ``clover-code --help``)."""
    parser = argparse.ArgumentParser(
        prog="clover-code web",
        description=(
            "Serve the clover-code app as a web page. Other flags (--base-url, --approval, "
            "--cd, ...) are the app's own."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (8000)")
    return parser


def child_command(app_args: list[str]) -> str:
    """The command line textual-serve runs for each tab: this Python, the app's
    entry point and the user's own flags, each quoted (it goes through a shell)."""
    return shlex.join([sys.executable, "-P", "-m", "clover_code.webapp.child", *app_args])


def main(argv: list[str]) -> int:
    """Serve until Ctrl+C; returns the exit code."""
    args, rest = build_parser().parse_known_args(argv)
    if not 0 < args.port < 65536:
        sys.stderr.write(f"clover-code: --port {args.port} is not a port number (1-65535).\n")
        return 2
    # The app's flags are checked now, by the app's own parser, rather than in
    # each tab; it runs as its own process, as the tabs' apps will.
    check = subprocess.run(
        [sys.executable, "-P", "-m", "clover_code.webapp.child", CHECK, *rest],
        capture_output=True,
        text=True,
        check=False,
    )
    if check.returncode != 0:
        sys.stderr.write(check.stderr)
        return 2
    try:
        from clover_code.webapp.server import GuardedServer
    except ImportError:
        sys.stderr.write(
            "clover-code: the web front end needs textual-serve; install it with "
            "pip install 'clover-code[web]'.\n"
        )
        return 2
    token = None if is_loopback(args.host) else secrets.token_urlsafe(24)
    server = GuardedServer(child_command(rest), args.host, args.port, token)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{shown}:{args.port}/" + (f"?token={token}" if token else "")
    if token:
        sys.stderr.write(
            f"clover-code: warning: serving on {args.host}, not loopback: anyone who can "
            "reach this address and has the URL below can run the agent as you, and the "
            "traffic is not encrypted (put it behind HTTPS).\n"
        )
    sys.stderr.write(f"clover-code web: open {url}\n")
    sys.stderr.flush()
    server.serve()
    return 0
