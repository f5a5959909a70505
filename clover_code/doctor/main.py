"""``clover-code doctor [-C DIR] [--json] [engine flags]``: check what a run needs.

Exit status 0 when nothing stops a run, 1 when a check failed, 2 for bad flags.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from clover_code.config.flags import ENGINE_FLAGS, add_engine_arguments, given_settings
from clover_code.doctor.report import print_json, print_table

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The doctor command's flags: its own and the engine flags."""
    parser = argparse.ArgumentParser(
        prog="clover-code doctor",
        description="Check what a run needs (Python and extras, the sandbox, the model "
        "server, the config files and trust, the GPU stack), list the settings an "
        "administrator pins, and say how to fix what is missing.",
    )
    parser.add_argument("-C", "--cd", type=Path, metavar="DIR", help="check the workspace DIR")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--no-server", action="store_true", help="skip the requests to the model server"
    )
    add_engine_arguments(parser)
    return parser


def main(argv: list[str]) -> int:
    """Run every check and print the report."""
    args = build_parser().parse_args(argv)
    from clover_code.config.settings import user_config_path
    from clover_code.doctor.local import gpu_checks, python_checks, sandbox_checks
    from clover_code.doctor.managed import managed_checks
    from clover_code.doctor.server import config_checks, server_checks
    from clover_code.fs.workspace_root import find_root

    cwd = (args.cd or Path.cwd()).resolve()
    if not cwd.is_dir():
        print(f"clover-code: directory {cwd} does not exist.", file=sys.stderr)
        return 2
    root, _ = find_root(cwd)
    checks = python_checks()
    flags = given_settings(args, ENGINE_FLAGS)
    config, settings = config_checks(root, user_config_path(), flags)
    checks += sandbox_checks(root)
    if settings is not None and not args.no_server:
        checks += server_checks(settings)
    checks += config
    checks += managed_checks()
    if settings is not None:
        checks += gpu_checks(settings.engine, settings.model_path)
    (print_json if args.json else print_table)(checks, sys.stdout)
    return 1 if any(c.state == "fail" for c in checks) else 0
