"""``clover-code github``: the command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from clover_code.errors import CloverError, ExitCode, UsageError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The subcommand's options."""
    parser = argparse.ArgumentParser(
        prog="clover-code github",
        description="Inside a GitHub Actions job: act on an issue or comment that mentions the "
        "trigger (push a branch and open a pull request, push to the PR branch, or answer), "
        "or review a pull request (on a pull_request or pull_request_target event, or a "
        "'TRIGGER review' comment) and post the findings as one review. "
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
    from clover_code.config.load import load_settings
    from clover_code.github.credentials import hold_credentials, take_held
    from clover_code.github.leaks import job_secrets
    from clover_code.github.runner import job_from_env, run_job
    from clover_code.redact import remember

    try:
        env = {**os.environ, **take_held()}
        token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN") or ""
        # Starts the process again, without the credentials in its environment, if needed.
        held = hold_credentials(env, token) if token else {}
        workspace = args.cd.resolve() if args.cd is not None else None
        root = workspace or Path(env.get("GITHUB_WORKSPACE") or ".").resolve()
        settings = load_settings({}, repo_root=root)
        if settings.sandbox == "none" and not settings.github_host_shell:
            raise UsageError(
                "sandbox none runs the agent's shell on the runner itself, where it can read "
                "the job's token (the step's own shell holds it); use sandbox auto, docker or "
                "bwrap, or set CLOVER_GITHUB_HOST_SHELL=1 (the action's allow_host_shell) "
                "to accept that."
            )
        api_key = settings.api_key.get_secret_value() if settings.api_key else None
        secrets = job_secrets(token, held, api_key=api_key, base_url=settings.base_url)
        remember(*secrets.values())
        job = job_from_env(
            env,
            args.trigger or settings.github_trigger,
            workspace,
            sandbox=settings.sandbox,
            secrets=secrets,
            max_review_comments=settings.github_max_review_comments,
        )
        return run_job(job, {k: v for k, v in os.environ.items() if k not in held})
    except CloverError as exc:
        sys.stderr.write(f"clover-code github: {exc}\n")
        return int(exc.exit_code)
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
