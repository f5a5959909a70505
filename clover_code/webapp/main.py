"""``clover-code web [--host H] [--port P] [app flags]``: the app in a browser.

Each browser tab gets its own app process (textual-serve). The default is
loopback only; the printed URL carries a random token that every request must
present, loopback included, and bound to any other address a warning says who
can reach it.
"""

from __future__ import annotations

import argparse
import secrets
import socket
import subprocess
import sys

from clover_code.webapp import CHECK
from clover_code.webapp.guard import is_loopback, url_host

__all__ = ["build_parser", "child_argv", "main", "shown_host"]


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


def child_argv(app_args: list[str]) -> list[str]:
    """The program textual-serve runs for each tab: this Python, the app's entry
    point and the user's own flags (run directly, no shell in between)."""
    return [sys.executable, "-P", "-m", "clover_code.webapp.child", *app_args]


def shown_host(host: str) -> str:
    """The host to print in the URL: for a wildcard bind (``0.0.0.0``, ``::``), an
    address of this machine that another one can use, else the address bound."""
    wildcard = {"0.0.0.0": socket.AF_INET, "": socket.AF_INET, "::": socket.AF_INET6}
    family = wildcard.get(host.strip("[]"))
    if family is None:
        return url_host(host)
    # Connecting a UDP socket sends nothing: it only picks the outgoing interface.
    probe = "192.0.2.1" if family == socket.AF_INET else "2001:db8::1"
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.connect((probe, 9))
            address = str(sock.getsockname()[0])
    except OSError:
        address = ""
    if not address or is_loopback(address):
        address = socket.gethostname()
    return url_host(address)


def main(argv: list[str]) -> int:
    """Serve until Ctrl+C; returns the exit code."""
    args, rest = build_parser().parse_known_args(argv)
    if not 0 < args.port < 65536:
        sys.stderr.write(f"clover-code: --port {args.port} is not a port number (1-65535).\n")
        return 2
    # The app's flags are checked now, by the app's own parser, rather than in
    # each tab; it runs as its own process, as the tabs' apps will.
    check = subprocess.run(
        [*child_argv([CHECK]), *rest],
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
    token = secrets.token_urlsafe(24)
    server = GuardedServer(child_argv(rest), args.host, args.port, token)
    url = f"http://{shown_host(args.host)}:{args.port}/?token={token}"
    if not is_loopback(args.host):
        sys.stderr.write(
            f"clover-code: warning: serving on {args.host}, not loopback: anyone who can "
            "reach this address and has the URL below can run the agent as you, and the "
            "traffic is not encrypted (put it behind HTTPS).\n"
        )
    sys.stderr.write(f"clover-code web: open {url}\n")
    sys.stderr.flush()
    server.serve()
    return 0
