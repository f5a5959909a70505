"""Where a remote server is and what it serves: the API root, its model list, and
the context window it reports.

The base URL rule and the model check of ``clover_code.engine.remote.backend``'s
``OpenAIBackend`` live here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import httpx

from clover_code.engine.remote.retry import error_for_transport, error_message
from clover_code.errors import AuthError, EngineError, EngineUnavailable, ModelNotFound


def api_root(base_url: str) -> str:
    """The API root for a base URL: trailing slash dropped, ``/v1`` appended if missing."""
    root = base_url.strip().rstrip("/")
    if not root.endswith("/v1"):
        root += "/v1"
    return root


WINDOW_KEYS = ("max_model_len", "context_length", "context_window")
"""Where a /models entry says its context window (vLLM and SGLang: max_model_len)."""


@dataclass(frozen=True, slots=True)
class ServedModel:
    """One model of a server's /models list."""

    id: str
    context_window: int | None = None
    """The window its entry reports (None: it does not say)."""
    owned_by: str | None = None
    """Its entry's ``owned_by`` (``clover-code`` for a ``clover-code serve`` server)."""


async def pick_model(client: httpx.AsyncClient, base_url: str, model: str) -> str:
    """Make sure the server is reachable and serves ``model``; the model to use
    (the first one it lists when ``model`` is empty)."""
    served = [m.id for m in await list_served(client, base_url)]
    if not served:
        raise ModelNotFound(
            f"the server at {base_url} serves no models; load a model into it first"
        )
    if not model:
        model = served[0]
    elif model not in served:
        raise ModelNotFound(
            f"the server at {base_url} does not serve the model {model!r}; "
            f"it serves {', '.join(repr(m) for m in served)}: pick one with --model"
        )
    return model


async def list_served(client: httpx.AsyncClient, base_url: str) -> list[ServedModel]:
    """The models the server lists; the errors say why it could not be asked."""
    url = f"{base_url}/models"
    try:
        response = await client.get(url, headers={"Accept": "application/json"})
    except httpx.RequestError as exc:
        raise error_for_transport(exc, url=base_url, attempts=1) from exc
    if response.status_code in (401, 403):
        raise AuthError(
            f"the server at {base_url} refused the API key "
            f"(HTTP {response.status_code}); set --api-key or CLOVER_API_KEY"
        )
    if response.status_code != 200:
        raise EngineUnavailable(
            f"the server at {base_url} did not list its models "
            f"(HTTP {response.status_code}: {error_message(response.content)}); "
            "check that --base-url points at an OpenAI-compatible server"
        )
    served = served_list(response.content)
    if served is None:
        raise EngineUnavailable(
            f"the server at {base_url} answered /models with something that is "
            "not an OpenAI model list; check that --base-url points at an "
            "OpenAI-compatible server"
        )
    return served


async def served_window(client: httpx.AsyncClient, base_url: str, model: str) -> int | None:
    """The context window the server reports for ``model``: its /models entry's, else
    llama.cpp's ``/props`` (``n_ctx``); None when it says nothing or cannot be asked."""
    try:
        for entry in await list_served(client, base_url):
            if entry.id == model and entry.context_window is not None:
                return entry.context_window
        props = await client.get(
            base_url.removesuffix("/v1") + "/props", headers={"Accept": "application/json"}
        )
        if props.status_code != 200:
            return None
        settings = props.json().get("default_generation_settings", {})
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    except (httpx.HTTPError, ValueError, AttributeError, EngineError):
        return None
    return n_ctx if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0 else None


def is_loopback(url: str) -> bool:
    """Whether the URL names this machine (no proxy can reach it)."""
    host = httpx.URL(url).host
    return host in ("localhost", "::1") or host.startswith("127.")


def served_list(content: bytes) -> list[ServedModel] | None:
    """The models of a /models answer, with the windows they report; None when it is
    not an OpenAI model list."""
    try:
        payload = json.loads(content)
    except ValueError:
        return None
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        return None
    return [
        ServedModel(
            e["id"], _window(e), e["owned_by"] if isinstance(e.get("owned_by"), str) else None
        )
        for e in entries
        if isinstance(e, dict) and isinstance(e.get("id"), str)
    ]


def _window(entry: dict[str, object]) -> int | None:
    for key in WINDOW_KEYS:
        value = entry.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
