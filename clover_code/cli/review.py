"""``clover-code review``: review a diff headless and print the findings."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from clover_code.config.flags import (
    ENGINE_FLAGS,
    Flag,
    FlagSpec,
    add_engine_arguments,
    add_setting_flags,
    flag_values,
    setting_names,
)
from clover_code.errors import CloverError, UsageError
from clover_code.review.diff import DiffTarget

__all__ = ["build_parser", "main"]

REVIEW_FLAGS: tuple[FlagSpec, ...] = (
    Flag("max_turns", metavar="N", help="most model requests for the review"),
    Flag("timeout", metavar="SECONDS", help="wall-clock limit"),
    Flag("max_tokens", metavar="N", help="most tokens per model response"),
)
"""The settings the review's own options set."""


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``clover-code review``."""
    parser = argparse.ArgumentParser(
        prog="clover-code review",
        description="Review a change and print the findings (file, lines, severity bug|risk|nit, "
        "title, body). The agent reads the code with the read-only tools only: the review runs "
        "in read-only mode whatever the configured mode. Default: the changes since the merge "
        "base with the default branch (origin/HEAD), uncommitted and new files included.",
    )
    parser.add_argument(
        "base",
        nargs="?",
        metavar="BASE",
        help="review the changes since the merge base with BASE (a branch, tag or commit)",
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--staged", action="store_true", help="review the staged changes")
    what.add_argument("--commit", metavar="SHA", help="review one commit")
    what.add_argument(
        "--files", nargs="+", metavar="PATH", help="review these files whole, as they are"
    )
    what.add_argument(
        "--diff",
        type=Path,
        metavar="FILE",
        help="review the unified diff in FILE ('-' reads stdin) against this checkout",
    )
    parser.add_argument(
        "--output-format",
        choices=("text", "json", "sarif"),
        default="text",
        help="text (default), the JSON result with the findings, or SARIF 2.1.0",
    )
    parser.add_argument(
        "--known",
        type=Path,
        metavar="FILE",
        help="a JSON list of findings reported before: not reported again",
    )
    add_setting_flags(parser, REVIEW_FLAGS)
    add_engine_arguments(parser)
    parser.add_argument("-C", "--cd", type=Path, metavar="DIR", help="work in DIR")
    parser.add_argument(
        "--trust-project",
        action="store_true",
        help="trust this repository's .clover/config.toml and .mcp.json as they are now",
    )
    return parser


def _target(args: argparse.Namespace) -> DiffTarget:
    if args.base is not None and (args.staged or args.commit or args.files or args.diff):
        raise UsageError(
            "BASE goes alone; --staged, --commit, --files and --diff each name what to review."
        )
    if args.diff is None:
        return DiffTarget(
            base=args.base,
            staged=args.staged,
            commit=args.commit,
            files=tuple(args.files or ()),
        )
    if str(args.diff) == "-":
        return DiffTarget(patch=sys.stdin.read(), patch_source="the diff read from stdin")
    try:
        text = args.diff.read_text("utf-8", errors="replace")
    except FileNotFoundError:
        raise UsageError(f"diff file {args.diff} does not exist.") from None
    except OSError as exc:
        raise UsageError(f"diff file {args.diff} cannot be read ({exc.strerror}).") from None
    return DiffTarget(patch=text, patch_source=f"the diff in {args.diff.name}")


def github_default_branch(env: Mapping[str, str]) -> Callable[[], str | None] | None:
    """Inside a GitHub Actions job, the repository's default branch from the API (a
    checkout made by actions/checkout has no origin/HEAD); None elsewhere."""
    repository = env.get("GITHUB_REPOSITORY")
    if not env.get("GITHUB_ACTIONS") or not repository:
        return None

    def ask() -> str | None:
        from clover_code.github.api import DEFAULT_API_URL, GitHubApi, GitHubApiError

        token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN") or ""
        api = GitHubApi(env.get("GITHUB_API_URL") or DEFAULT_API_URL, repository, token)
        try:
            return api.default_branch()
        except GitHubApiError:
            return None
        finally:
            api.close()

    return ask


def main(argv: list[str]) -> int:
    """Run ``clover-code review``; returns the exit code."""
    started = time.monotonic()
    args = build_parser().parse_args(argv)
    from clover_code.config.load import load_settings
    from clover_code.fs.workspace_root import find_root
    from clover_code.headless.ending import report_error
    from clover_code.headless.render import OutputFormat
    from clover_code.headless.review import load_known, run_review_task

    cwd = (args.cd or Path.cwd()).resolve()
    fallback: OutputFormat = "json" if args.output_format == "json" else "text"
    try:
        if not cwd.is_dir():
            raise UsageError(f"directory {cwd} does not exist.")
        target = _target(args)
        known = load_known(args.known) if args.known is not None else None
        root, _ = find_root(cwd)
        keys = setting_names((*ENGINE_FLAGS, *REVIEW_FLAGS))
        settings = load_settings(
            flag_values(args, keys), repo_root=root, trust_project=args.trust_project
        )
    except CloverError as exc:
        return report_error(exc, fallback, sys.stdout, sys.stderr, started=started)
    return asyncio.run(
        run_review_task(
            settings,
            cwd,
            target,
            output_format=args.output_format,
            started=started,
            known=known,
            default_branch=github_default_branch(os.environ),
            own_process=True,
        )
    )
