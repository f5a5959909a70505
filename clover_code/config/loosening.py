"""Which settings of a project file loosen safety: the one definition of "looser".

For each setting that can weaken safety, a test of the project's value against
the value below it (the user config, else the default) says whether the
project's is looser; every other setting is in ``NEUTRAL_KEYS``. ``loosening``
names what a ``.clover/config.toml`` would loosen, ``without_loosening`` keeps
the rest of it, and ``mcp_loosening`` says what a ``.mcp.json`` would start.
What loosens applies only once the user trusted the file (``config/trust.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from clover_code.config.trust import TRUST_SWITCH
from clover_code.protocol import APPROVAL_MODES
from clover_code.protocol.json_text import loads_bounded

__all__ = [
    "APPROVAL_ORDER",
    "LOOSENING_KEYS",
    "NEUTRAL_KEYS",
    "loosening",
    "looser_approval",
    "mcp_loosening",
    "without_loosening",
]

APPROVAL_ORDER: tuple[str, ...] = APPROVAL_MODES
"""Approval modes, strictest first (plan runs only reads and the todo list, as strict as
read-only, so it sits next to it)."""
DEFAULT_APPROVAL = "ask"
"""The mode an unset ``approval`` is judged against: the app's default, the
strictest of the defaults (headless uses sandbox-auto)."""
_MCP_PROJECT_ORDER: tuple[str, ...] = ("ignore", "ask", "trust")


# A value the settings model would refuse is left in place, so that the load
# fails with the usual sentence naming the file and key; every value the model
# accepts is judged.


def looser_approval(mode: Any, than: Any) -> bool:
    """Whether approval ``mode`` lets more run without asking than ``than``
    (None is the default)."""
    return _ranked(APPROVAL_ORDER)(mode, than if than is not None else DEFAULT_APPROVAL)


def _ranked(order: tuple[str, ...]) -> Callable[[Any, Any], bool]:
    def looser(value: Any, base: Any) -> bool:
        if value not in order:
            return False  # refused by the model
        return base not in order or order.index(value) > order.index(base)

    return looser


def _sandbox(value: Any, base: Any) -> bool:
    # none runs commands on the host; every other kind is a sandbox.
    return bool(value == "none" and base != "none")


def _switched_on(value: Any, base: Any) -> bool:
    return value is not False and base is False


def _more(value: Any, base: Any) -> bool:
    # The model reads "8192" and true as numbers too.
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False  # refused by the model
    try:
        return number > float(base)
    except (TypeError, ValueError):
        return True


def _changed(value: Any, base: Any) -> bool:
    return bool(value != base)


def _more_names(value: Any, base: Any) -> bool:
    if not isinstance(value, list):
        return False  # refused by the model
    return not set(value) <= set(base if isinstance(base, list) else [])


def _more_private(value: Any, base: Any) -> bool:
    # true allows every internal address; a list allows those networks.
    if base is True or value is False or value == []:
        return False
    if value is True:
        return True
    return _more_names(value, base)


def _any(value: Any, base: Any) -> bool:
    return bool(value)


def _raised_limit(value: Any, base: Any) -> bool:
    # Unset is no limit at all: a project that sets one only tightens.
    return base is not None and _more(value, base)


_RATES = ("input", "cached_input", "output")


def _cheaper(value: Any, base: Any) -> bool:
    # A lower price (or one where the user set none) lets a budget last longer.
    if not isinstance(value, Mapping):
        return False  # refused by the model
    mine = base if isinstance(base, Mapping) else {}
    for model, entry in value.items():
        theirs = mine.get(model)
        if not isinstance(theirs, Mapping):
            return True
        if not isinstance(entry, Mapping):
            continue
        merged = {**theirs, **entry}  # tables merge key by key
        for rate in _RATES:
            now, before = _rate(merged, rate), _rate(theirs, rate)
            if now is not None and before is not None and now < before:
                return True
    return False


def _rate(entry: Mapping[str, Any], rate: str) -> float | None:
    # An unset cached_input is priced as input.
    raw = entry.get(rate, entry.get("input") if rate == "cached_input" else None)
    try:
        return float(raw)
    except (TypeError, ValueError):
        return None


_LSP_PROGRAM = ("command", "args", "init_options")
"""What in a language server's entry decides what runs (options can name programs too)."""


def _lsp_programs(value: Any, base: Any) -> bool:
    # A language whose program, arguments or options differ from the user's (or the
    # built-in ones) runs something the project chose; patterns and enabled do not.
    if not isinstance(value, Mapping):
        return False  # refused by the model
    mine = base if isinstance(base, Mapping) else {}
    for language, entry in value.items():
        if not isinstance(entry, Mapping):
            continue
        theirs = mine.get(language)
        theirs = theirs if isinstance(theirs, Mapping) else {}
        if any(k in entry and entry[k] != theirs.get(k) for k in _LSP_PROGRAM):
            return True
    return False


# The one definition of "looser": for each setting that can weaken safety, a
# test of the project's value against the value below it (user config, else
# the default). Every other setting is in NEUTRAL_KEYS; a test makes sure each
# setting is in one of the two, so a new one has to be classified. A setting
# whose value is a program to run is always looser when set.
_LOOSER: dict[str, Callable[[Any, Any], bool]] = {
    "approval": looser_approval,
    "sandbox": _sandbox,
    "sandbox_network": _switched_on,
    "sandbox_env": _more_names,  # host variables (secrets) handed to commands
    "sandbox_image": _changed,  # what the sandbox runs
    "sandbox_memory_mb": _more,
    "sandbox_pids": _more,
    "max_jobs": _more,  # background jobs running at once in the sandbox
    "sandbox_cpus": _more,
    "mcp_servers": _any,  # programs started on the host
    "hooks": _any,  # programs run on the host at lifecycle points
    "plugins": _more_names,  # installed plugins: their hooks, MCP servers and commands
    "lsp": _lsp_programs,  # language servers: programs that load the workspace's code
    "mcp_project": _ranked(_MCP_PROJECT_ORDER),
    "mcp_read_only": _more_names,  # MCP tools run in plan and read-only without asking
    "model_path": _changed,  # checkpoints load with their own code (trust_remote_code)
    "sessions_dir": _changed,  # where the harness writes on the host
    "sandbox_setup": _any,  # commands run with the network on when the image is built
    "web_allow_private": _more_private,  # web_fetch reaching the host's own network
    "search_url": _changed,  # where web_search sends the model's queries
    "base_url": _changed,  # where the model's requests go: the code, and the user's API key
    "github_host_shell": _switched_on,  # the bot's agent on the runner, beside the token
    "serve_host": _changed,  # who can reach clover-code serve
    "serve_api_key": _changed,  # a key the project's author knows would let them in
    "max_cost": _raised_limit,  # the user's money: a budget a project raises
    "pricing": _cheaper,  # a lower price makes the same budget buy more requests
    "statusline_command": _any,  # a program the app runs on the host
    "keys": _any,  # a remap could make a key you type often switch the approval mode
}

_SECRET_KEYS = frozenset({"serve_api_key"})
"""Loosening settings whose value is a secret: named, never shown."""

NEUTRAL_KEYS = frozenset(
    {
        "engine", "model", "models", "api_key", "block_size", "remote_drafts",
        "raw_parsing", "thinking", "max_tokens", "temperature", "context_window",
        "threshold", "dtype", "device", "repetition_penalty", "presence_penalty",
        "frequency_penalty", "end_bias_after", "end_bias_per_1k", "think_bias_after",
        "think_bias_per_1k", "tp_size", "mem_fraction_static", "quantization",
        "serve_port", "serve_drafts", "serve_max_body_mb", "serve_read_timeout",
        "response_reserve", "remask_below", "remask_rounds",
        "compact_threshold", "repo_map_tokens", "show_denoising", "draft_confidences",
        "shade_confidence", "low_confidence",
        "mcp_timeout", "auto_commit", "max_turns", "timeout", "shell_timeout",
        "output_limit", "tool_retries", "early_tools", "max_retries", "request_timeout",
        "max_subagents", "subagent_max_turns", "subagent_timeout", "subagent_max_tokens", "decoder",
        "logits_shift", "expert_mass", "expert_select", "prefill", "max_batch",
        "web_max_bytes", "web_timeout", "web_max_redirects",
        "search_provider", "search_api_key",
        "github_trigger", "github_max_review_comments",
        "checkpoint_max_files", "checkpoint_max_bytes", "lsp_severity", "lsp_wait",
        "theme", "editor_mode", "notify", "notify_after", "statusline_interval",
        "statusline_timeout",
    }
)  # fmt: skip
"""Settings that never weaken safety (``permissions`` is split: allow rules
loosen, deny rules tighten)."""

LOOSENING_KEYS = frozenset(_LOOSER) | {"permissions", TRUST_SWITCH}
"""Settings ``loosening`` judges."""


def loosening(project: Mapping[str, Any], base: Mapping[str, Any]) -> list[str]:
    """The settings of a project file that loosen safety compared with ``base``
    (what applies without the file), as ``key = value`` or ``key`` texts."""
    found: list[str] = []
    for key, value in project.items():
        test = _LOOSER.get(key)
        if test is not None and test(value, base.get(key)):
            plain = isinstance(value, str | bool | int | float) and key not in _SECRET_KEYS
            shown = json.dumps(value) if plain else ""
            found.append(f"{key} = {shown}" if shown else key)
        elif key == "permissions" and isinstance(value, Mapping) and value.get("allow"):
            found.append("permissions.allow")
        elif key == TRUST_SWITCH:
            found.append(f"{TRUST_SWITCH} (only your user config can set it)")
    return found


def without_loosening(project: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any]:
    """``project`` less what loosens safety; tightening settings stay."""
    kept: dict[str, Any] = {}
    for key, value in project.items():
        test = _LOOSER.get(key)
        if key == "lsp" and isinstance(value, Mapping) and _lsp_programs(value, base.get(key)):
            # Which files and whether: those still apply, with the user's programs.
            value = {
                language: {k: v for k, v in entry.items() if k not in _LSP_PROGRAM}
                for language, entry in value.items()
                if isinstance(entry, Mapping)
            }
        elif key == TRUST_SWITCH or (test is not None and test(value, base.get(key))):
            continue
        if key == "permissions" and isinstance(value, Mapping):
            value = {k: v for k, v in value.items() if k != "allow"}
        kept[key] = value
    return kept


def mcp_loosening(data: bytes) -> list[str]:
    """What a ``.mcp.json`` would loosen: the servers it would start (none when
    it cannot be read; then nothing starts either)."""
    try:
        table = loads_bounded(data.decode("utf-8")).get("mcpServers")
    except (ValueError, AttributeError):
        return []
    if not isinstance(table, dict) or not table:
        return []
    return [f"mcpServers ({', '.join(str(name) for name in table)})"]
