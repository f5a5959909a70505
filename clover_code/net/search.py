"""Web search through a configured provider: a SearXNG-compatible JSON endpoint,
or a hosted API (Brave-style or Tavily-style) reached by URL and key.

- searxng: GET search_url?q=QUERY&format=json; results[].content.
- brave: GET search_url?q=QUERY with X-Subscription-Token: KEY; web.results[].description.
- tavily: POST search_url {"query": QUERY} with Authorization: Bearer KEY; results[].content.

The endpoint is the user's choice (a project file may set it only once
trusted), so it is not held to the private-address check: a SearXNG on the
user's own machine is the common case.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

import httpx

import clover_code
from clover_code.errors import ToolError

__all__ = ["SearchProvider", "SearchResult", "search"]

ProviderKind = Literal["searxng", "brave", "tavily"]


@dataclass(frozen=True, slots=True)
class SearchProvider:
    """Where and how to search."""

    kind: ProviderKind
    url: str
    api_key: str | None = None
    timeout: float = 30.0


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One hit: its title, address and a snippet."""

    title: str
    url: str
    snippet: str


async def search(provider: SearchProvider, query: str, limit: int = 8) -> list[SearchResult]:
    """The provider's first ``limit`` results for ``query``; ``ToolError`` on failure."""
    headers = {
        "Accept": "application/json",
        "User-Agent": f"clover-code/{clover_code.__version__} (web_search)",
    }
    try:
        async with (
            asyncio.timeout(provider.timeout),
            httpx.AsyncClient(timeout=provider.timeout, trust_env=False) as client,
        ):
            if provider.kind == "tavily":
                if provider.api_key:
                    headers["Authorization"] = f"Bearer {provider.api_key}"
                body = {"query": query, "max_results": limit}
                response = await client.post(provider.url, json=body, headers=headers)
            else:
                params = {"q": query}
                if provider.kind == "searxng":
                    params["format"] = "json"
                elif provider.api_key:
                    headers["X-Subscription-Token"] = provider.api_key
                response = await client.get(provider.url, params=params, headers=headers)
            response.raise_for_status()
            data = response.json()
    except TimeoutError:
        raise ToolError(
            f"the search provider did not answer within {provider.timeout:g} s."
        ) from None
    except httpx.HTTPStatusError as exc:
        code = exc.response.status_code
        raise ToolError(f"the search provider answered HTTP {code}.") from None
    except (httpx.HTTPError, ValueError) as exc:
        raise ToolError(f"the search provider failed: {exc or type(exc).__name__}.") from None
    return _results(provider.kind, data)[:limit]


def _results(kind: ProviderKind, data: Any) -> list[SearchResult]:
    if not isinstance(data, dict):
        raise ToolError("the search provider's answer is not a JSON object.")
    if kind == "brave":
        web = data.get("web")
        items = web.get("results") if isinstance(web, dict) else None
        snippet_key = "description"
    else:
        items = data.get("results")
        snippet_key = "content"
    found: list[SearchResult] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            found.append(
                SearchResult(
                    title=str(item.get("title") or "")[:300],
                    url=item["url"][:2000],
                    snippet=str(item.get(snippet_key) or "")[:1000],
                )
            )
    return found
