"""The app process ``clover-code web`` starts for each browser tab.

textual-serve starts it with Textual's web driver, its stdin and stdout are
pipes to the server, so the terminal check of ``clover-code`` is skipped:
otherwise it is the interactive app with the same flags.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from clover_code.errors import CloverError
from clover_code.proc.parent_tie import tie_to_parent
from clover_code.webapp import CHECK

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """Run the app with ``argv`` (the main command's flags)."""
    tie_to_parent(signal.SIGTERM)  # first: the server may stop while this starts
    from clover_code.cli.parser import build_parser, cli_settings
    from clover_code.config.load import load_settings
    from clover_code.config.settings import Settings
    from clover_code.fs.workspace_root import find_root
    from clover_code.ui.run import run_app

    checking = argv[:1] == [CHECK]
    args = build_parser().parse_args(argv[1:] if checking else argv)
    if args.task is not None or args.watch or args.task_file is not None:
        sys.stderr.write(
            "clover-code: clover-code web serves the interactive app; --task and --watch "
            "do not apply.\n"
        )
        return 2
    if checking:
        return 0
    cwd = (args.cd or Path.cwd()).resolve()
    try:
        root, _ = find_root(cwd)
        settings = load_settings(
            cli_settings(args), repo_root=root, trust_project=args.trust_project
        )
    except CloverError as exc:
        sys.stderr.write(f"clover-code: {exc}\n")
        return int(exc.exit_code)

    def reload() -> Settings:
        return load_settings(cli_settings(args), repo_root=root)

    try:
        return run_app(settings, cwd, resume=None, reload=reload)
    except CloverError as exc:  # the app's own settings (theme, [keys]), before it starts
        sys.stderr.write(f"clover-code: {exc}\n")
        return int(exc.exit_code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
