"""``clover-code serve``: parse the flags, load the local engine, run uvicorn.

For one box. For many users or many GPUs, run SGLang's own server
(``python -m sglang.launch_server``) and point clover-code at it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from clover_code.config import load_settings
from clover_code.errors import CloverError, UsageError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clover-code serve",
        description="Serve a local checkpoint as an OpenAI-compatible API (one box).",
    )
    parser.add_argument("--model-path", help="checkpoint directory")
    parser.add_argument("--engine", choices=["hf", "sglang"], help="local engine (default hf)")
    parser.add_argument("--host", dest="serve_host", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", dest="serve_port", type=int, help="port (8000)")
    parser.add_argument(
        "--drafts",
        dest="serve_drafts",
        action="store_true",
        default=None,
        help="stream denoising drafts to every client (clover_draft extension)",
    )
    parser.add_argument("--block-size", type=int)
    parser.add_argument("--threshold", type=float)
    parser.add_argument("--dtype", choices=["auto", "bfloat16", "float16", "float32"])
    parser.add_argument("--device")
    parser.add_argument("--max-tokens", type=int)
    for name in ("repetition", "presence", "frequency"):
        parser.add_argument(
            f"--{name}-penalty",
            type=float,
            help="default for every request (unset: the checkpoint's generation_config.json)",
        )
    parser.add_argument(
        "--decoder",
        choices=["auto", "checkpoint", "builtin"],
        help="hf engine: the checkpoint's own block decoding (auto: when it ships one) "
        "or clover-code's loop",
    )
    parser.add_argument(
        "--expert-mass",
        type=float,
        metavar="F",
        help="hf engine: per block, route only to the experts holding this share of the "
        "routing mass (0.9 = the model card's value; default off)",
    )
    parser.add_argument("--tp-size", type=int)
    parser.add_argument("--mem-fraction-static", type=float)
    parser.add_argument("--quantization")
    return parser


def main(argv: list[str]) -> int:
    """Run the server until interrupted; return the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    flags: dict[str, Any] = {k: v for k, v in vars(args).items() if v is not None}
    flags.setdefault("engine", "hf")
    try:
        settings = load_settings(flags)
        if not settings.model_path:
            raise UsageError("clover-code serve needs --model-path DIR (a local checkpoint).")
        from clover_code.engine.select import build_backend

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
    import uvicorn

    from clover_code.serve.app import build_app

    for line in getattr(backend, "notices", ()):
        print(f"clover-code serve: {line}", file=sys.stderr)
    app = build_app(backend, drafts=settings.serve_drafts)
    config = uvicorn.Config(
        app, host=settings.serve_host, port=settings.serve_port, log_level="warning"
    )
    print(
        f"clover-code serve: {backend.model} on http://{settings.serve_host}:"
        f"{settings.serve_port}/v1",
        file=sys.stderr,
    )
    try:
        asyncio.run(uvicorn.Server(config).serve())
    except KeyboardInterrupt:
        return 130
    finally:
        asyncio.run(backend.aclose())
    return 0
