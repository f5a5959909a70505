"""``clover-code github``: the command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from clover_code.errors import CloverError, ExitCode

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The subcommand's options."""
    parser = argparse.ArgumentParser(
        prog="clover-code github",
        description="Inside a GitHub Actions job: act on an issue or comment that mentions the "
        "trigger (push a branch and open a pull request, push to the PR branch, or answer). "
        "Reads GITHUB_EVENT_PATH, GITHUB_EVENT_NAME, GITHUB_REPOSITORY, GITHUB_TOKEN and "
        "GITHUB_API_URL; the model settings come from CLOVER_* variables or the config.",
    )
    parser.add_argument(
        "--trigger", help="the mention that asks for a run (setting github_trigger; @clover)"
    )
    parser.add_argument(
        "-C",
        "--cd",
        type=Path,
        metavar="DIR",
        help="the checkout (default: GITHUB_WORKSPACE, else this directory)",
    )
    return parser


def main(argv: list[str]) -> int:
    """Run ``clover-code github``; returns the exit code."""
    args = build_parser().parse_args(argv)
    from clover_code.config import load_settings
    from clover_code.github.runner import job_from_env, run_job

    env = dict(os.environ)
    try:
        workspace = args.cd.resolve() if args.cd is not None else None
        trigger = args.trigger
        if trigger is None:
            root = workspace or Path(env.get("GITHUB_WORKSPACE") or ".").resolve()
            trigger = load_settings({}, repo_root=root).github_trigger
        job = job_from_env(env, trigger, workspace)
        return run_job(job, env)
    except CloverError as exc:
        sys.stderr.write(f"clover-code github: {exc}\n")
        return int(exc.exit_code)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
