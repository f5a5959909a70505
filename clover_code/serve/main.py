"""``clover-code serve``: parse the flags, load the local engine, run uvicorn.

Settings load as for every other command, with the repository's own config
(where ``serve_host`` and ``serve_api_key`` apply only once the project is
trusted). Every client authenticates, loopback included: ``--api-key`` (or
``CLOVER_SERVE_API_KEY``), else a random key printed once at start.

For one box. For many users or many GPUs, run SGLang's own server
(``python -m sglang.launch_server``) and point clover-code at it.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from pathlib import Path
from typing import Any

from clover_code.config.flags import SERVE_FLAGS, add_setting_flags, given_settings
from clover_code.config.load import load_settings
from clover_code.errors import CloverError, UsageError, missing_extra

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The serve command's flags: the local engine and where to listen."""
    parser = argparse.ArgumentParser(
        prog="clover-code serve",
        description="Serve a local checkpoint as an OpenAI-compatible API (one box).",
    )
    add_setting_flags(parser, SERVE_FLAGS)
    return parser


def main(argv: list[str]) -> int:
    """Run the server until interrupted; return the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    flags = given_settings(args, SERVE_FLAGS)
    flags.setdefault("engine", "hf")
    try:
        from clover_code.fs.workspace_root import find_root

        settings = load_settings(flags, repo_root=find_root(Path.cwd())[0])
        report = settings.project_trust
        notice = report.notice() if report is not None else None
        if notice:
            print(f"clover-code serve: {notice}", file=sys.stderr)
        if not settings.model_path:
            raise UsageError("clover-code serve needs --model-path DIR (a local checkpoint).")
        try:
            import uvicorn

            from clover_code.serve.app import build_app
            from clover_code.serve.request import BodyLimits
        except ModuleNotFoundError as exc:
            raise missing_extra(exc, "serving a checkpoint") from None
        from clover_code.agent.engines import build_backend

        if (Path(settings.model_path).expanduser() / "config.json").is_file():
            print(
                f"clover-code serve: loading {settings.model_path} with the {settings.engine} "
                "engine (a large checkpoint takes a few minutes)",
                file=sys.stderr,
            )
        backend = build_backend(settings)
    except CloverError as exc:
        print(f"clover-code serve: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    for line in backend.notices:
        print(f"clover-code serve: {line}", file=sys.stderr)
    key = settings.serve_api_key.get_secret_value() if settings.serve_api_key else None
    if not key:
        key = secrets.token_urlsafe(32)
        # Printed this once, to the terminal that started the server, and nowhere else.
        print(
            f"clover-code serve: clients must send Authorization: Bearer {key} "
            "(a new random key each start; set one with --api-key or CLOVER_SERVE_API_KEY)",
            file=sys.stderr,
        )
    limits = BodyLimits(int(settings.serve_max_body_mb * (1 << 20)), settings.serve_read_timeout)
    app = build_app(backend, api_key=key, drafts=settings.serve_drafts, limits=limits)
    config = uvicorn.Config(
        app, host=settings.serve_host, port=settings.serve_port, log_level="warning"
    )
    ready = (
        f"clover-code serve: {backend.model} on http://{settings.serve_host}:"
        f"{settings.serve_port}/v1"
    )
    try:
        asyncio.run(_serve(uvicorn.Server(config), ready))
    except KeyboardInterrupt:
        return 130
    finally:
        asyncio.run(backend.aclose())
    return 0


async def _serve(server: Any, ready: str) -> None:
    """Run the server; say ``ready`` once it listens (not before: a client that reads
    the line and connects at once must find the port open)."""
    running = asyncio.create_task(server.serve())
    while not server.started and not running.done():
        await asyncio.sleep(0.02)
    if server.started:
        print(ready, file=sys.stderr, flush=True)
    await running
