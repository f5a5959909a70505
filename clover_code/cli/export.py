"""``clover-code export [SESSION_ID] [--format md|html] [-o FILE]``: a stored session as
Markdown or as one self-contained HTML page (``agent/export``).

The session is named as ``--resume`` names it (an id or a unique prefix; none:
the latest session of this repository). Without ``-o`` the document goes to
stdout; the format is then Markdown unless ``--format`` says otherwise, and
with ``-o`` it follows the file's extension (``.html``, ``.htm``). A bad id,
an unreadable session or a file that cannot be written is one sentence on
stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clover_code.agent.export import EXPORT_FORMATS, export_session, format_for, write_export
from clover_code.errors import CloverError, UsageError


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``clover-code export``."""
    parser = argparse.ArgumentParser(
        prog="clover-code export",
        description="Write a stored session (its prompts, replies, reasoning, tool calls, "
        "outputs and diffs) as Markdown or as one self-contained HTML page, secrets masked.",
    )
    parser.add_argument(
        "session",
        nargs="?",
        metavar="SESSION_ID",
        help="the session's id or a unique prefix (default: the latest in this repository)",
    )
    parser.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        help="md (Markdown) or html (default: from the -o file's extension, else md)",
    )
    parser.add_argument(
        "-o", "--output", type=Path, metavar="FILE", help="write to FILE (default: stdout)"
    )
    parser.add_argument("-C", "--cd", type=Path, metavar="DIR", help="the repository (default: .)")
    return parser


def main(argv: list[str]) -> int:
    """Run ``clover-code export``; returns the exit code."""
    args = build_parser().parse_args(argv)
    from clover_code.agent.transcript import find_session
    from clover_code.config.load import load_settings
    from clover_code.fs.workspace_root import find_root

    cwd = (args.cd or Path.cwd()).resolve()
    try:
        if not cwd.is_dir():
            raise UsageError(f"directory {cwd} does not exist.")
        root, _ = find_root(cwd)
        settings = load_settings({}, repo_root=root)
        path = find_session(settings.resolved_sessions_dir(), args.session, root)
        if args.output is None:
            sys.stdout.write(export_session(path, args.format or "md"))
            return 0
        out = args.output if args.output.is_absolute() else Path.cwd() / args.output
        write_export(path, args.format or format_for(out), out)
    except CloverError as exc:
        print(f"clover-code export: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    print(f"exported session {path.stem} to {out}", file=sys.stderr)
    return 0
