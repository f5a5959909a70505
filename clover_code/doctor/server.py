"""Doctor checks of the model server and of the configuration.

The server checks make real requests: ``GET /models``, the server's own
context-window report where it has one (llama.cpp's ``/props``, ``max_model_len``
in vLLM's and SGLang's model list), and one short chat request offering a tool,
to see whether tool calls and reasoning come back in a form clover-code reads.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx

from clover_code.doctor.report import Check
from clover_code.errors import CloverError

__all__ = ["config_checks", "server_checks"]

_PROBE_TIMEOUT = 30.0
_PING_TOOL = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Answers pong. Call it when asked to ping.",
        "parameters": {"type": "object", "properties": {}},
    },
}


def _shown(url: str) -> str:
    """The URL without credentials (never printed)."""
    try:
        return str(httpx.URL(url).copy_with(username=None, password=None))
    except (httpx.InvalidURL, TypeError):
        return "the configured base URL"


def config_checks(root: Path, user_config: Path, flags: dict[str, Any]) -> tuple[list[Check], Any]:
    """The config files (they parse, what the project's trust decided) and the settings."""
    from clover_code.config.load import load_settings

    checks: list[Check] = []
    if user_config.is_file():
        checks.append(Check("config", "user config", "ok", f"{user_config}"))
    else:
        checks.append(
            Check("config", "user config", "info", f"none at {user_config} (defaults apply)")
        )
    try:
        settings = load_settings(flags, repo_root=root)
    except CloverError as exc:
        checks.append(
            Check("config", "settings", "fail", exc.message, "fix the file the sentence names")
        )
        return checks, None
    checks.append(Check("config", "workspace", "info", f"{root}"))
    report = settings.project_trust
    for file in report.files if report is not None else ():
        if not file.loosening:
            checks.append(Check("config", file.rel, "ok", "read (it loosens nothing)"))
        elif file.trusted:
            loosens = ", ".join(file.loosening)
            checks.append(Check("config", file.rel, "ok", f"trusted as it is now ({loosens})"))
        else:
            checks.append(
                Check(
                    "config",
                    file.rel,
                    "warn",
                    f"not trusted, so these settings are ignored: {', '.join(file.loosening)}",
                    f"review {file.path}, then run once with --trust-project",
                )
            )
    return checks, settings


def server_checks(settings: Any) -> list[Check]:
    """Whether the configured server answers, what it serves, and how it calls tools."""
    if not settings.base_url:
        if settings.engine in ("hf", "sglang") or settings.model_path is not None:
            return [Check("model", "server", "info", "a local engine is configured")]
        return [
            Check(
                "model",
                "server",
                "fail",
                "no model server is configured",
                "clover-code --base-url http://127.0.0.1:8080/v1 (any OpenAI-compatible "
                "server), or base_url in the user config",
            )
        ]
    key = settings.api_key.get_secret_value() if settings.api_key else None
    return asyncio.run(_probe(settings.base_url, settings.model, key, settings.context_window))


async def _probe(base_url: str, model: str, key: str | None, window: int) -> list[Check]:
    from clover_code.engine.remote.endpoint import api_root, pick_model

    root = api_root(base_url)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    shown = _shown(root)
    async with httpx.AsyncClient(
        headers=headers, timeout=_PROBE_TIMEOUT, follow_redirects=False
    ) as client:
        try:
            chosen = await pick_model(client, root, model)
        except CloverError as exc:
            message = exc.message.replace(root, shown)
            if key:
                message = message.replace(key, "***")
            return [
                Check("model", "server", "fail", message, "start the server, or fix --base-url")
            ]
        checks = [Check("model", "server", "ok", f"{shown} answers and serves {chosen!r}")]
        checks.append(await _window(client, root, chosen, window))
        checks.extend(await _tool_call(client, root, chosen))
    return checks


async def _window(client: httpx.AsyncClient, root: str, model: str, window: int) -> Check:
    from clover_code.engine.remote.endpoint import served_window

    served = await served_window(client, root, model)
    if served is None:
        return Check(
            "model",
            "context window",
            "info",
            f"the server does not say; clover-code assumes {window:,} tokens",
            "set context_window in the config (or CLOVER_CONTEXT_WINDOW) to the server's",
        )
    if served < window:
        return Check(
            "model",
            "context window",
            "warn",
            f"the server holds {served:,} tokens but clover-code assumes {window:,}",
            f"CLOVER_CONTEXT_WINDOW={served} (or context_window = {served} in the config)",
        )
    return Check("model", "context window", "ok", f"{served:,} tokens on the server")


async def _tool_call(client: httpx.AsyncClient, root: str, model: str) -> list[Check]:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Call the tool named ping now."}],
        "tools": [_PING_TOOL],
        "max_tokens": 256,
        "stream": False,
    }
    try:
        response = await client.post(f"{root}/chat/completions", json=body)
        message = response.json()["choices"][0]["message"]
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        what = f"HTTP {response.status_code}" if "response" in locals() else type(exc).__name__
        return [
            Check(
                "model",
                "tool calling",
                "warn",
                f"a chat request with a tool failed ({what})",
                "check that the server supports tools (llama.cpp: --jinja or a "
                "function-calling chat format)",
            )
        ]
    content = message.get("content") or ""
    checks: list[Check] = []
    if message.get("tool_calls"):
        checks.append(Check("model", "tool calling", "ok", "the server returns tool calls"))
    elif "<tool_call>" in content:
        checks.append(
            Check(
                "model",
                "tool calling",
                "ok",
                "the model writes Qwen3 tool-call tags in its text; clover-code parses them",
            )
        )
    else:
        checks.append(
            Check(
                "model",
                "tool calling",
                "warn",
                f"asked to call a tool, the model answered text ({json.dumps(content[:60])})",
                "use a tool-calling model and chat format (llama.cpp: --jinja; "
                "SGLang: --tool-call-parser qwen3_coder)",
            )
        )
    if message.get("reasoning_content") or message.get("reasoning"):
        checks.append(Check("model", "reasoning", "ok", "sent in a field of its own"))
    elif "<think>" in content or "</think>" in content:
        checks.append(Check("model", "reasoning", "ok", "inside the text (<think> tags)"))
    else:
        checks.append(Check("model", "reasoning", "info", "none seen in a short answer"))
    return checks
