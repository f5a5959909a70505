"""Where a remote server is and what it serves: the API root, and its model list.

The base URL rule and the model check of ``clover_code.engine.remote.backend``'s
``OpenAIBackend`` live here.
"""

from __future__ import annotations

import json

import httpx

from clover_code.engine.remote.retry import error_for_transport, error_message
from clover_code.errors import AuthError, EngineUnavailable, ModelNotFound


def api_root(base_url: str) -> str:
    """The API root for a base URL: trailing slash dropped, ``/v1`` appended if missing."""
    root = base_url.strip().rstrip("/")
    if not root.endswith("/v1"):
        root += "/v1"
    return root


async def pick_model(client: httpx.AsyncClient, base_url: str, model: str) -> str:
    """Make sure the server is reachable and serves ``model``; the model to use
    (the first one it lists when ``model`` is empty)."""
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
    served = served_models(response.content)
    if served is None:
        raise EngineUnavailable(
            f"the server at {base_url} answered /models with something that is "
            "not an OpenAI model list; check that --base-url points at an "
            "OpenAI-compatible server"
        )
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


def is_loopback(url: str) -> bool:
    """Whether the URL names this machine (no proxy can reach it)."""
    host = httpx.URL(url).host
    return host in ("localhost", "::1") or host.startswith("127.")


def served_models(content: bytes) -> list[str] | None:
    """The model ids in a /models answer; None when it is not an OpenAI model list."""
    try:
        payload = json.loads(content)
    except ValueError:
        return None
    entries = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(entries, list):
        return None
    return [e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]
