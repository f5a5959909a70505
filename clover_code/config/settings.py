"""Settings: one pydantic model of everything clover-code can be told, and where its
files live on this platform.

The model's fields are documented one by one (the model and engine fields in
``ModelSettings``, the app's in ``AppSettings``). ``config/load.py`` fills it from
the flags, the environment, the project's and the user's config files and the
administrator's managed files; settings of the project's files that loosen
safety apply only once the user trusted that exact file content (see
``clover_code.config.trust``).
"""

# Annotations are objects here, not text (no ``from __future__ import annotations``):
# pydantic reads every field's, and text would be compiled and evaluated at each start.

import os
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    field_validator,
)

from clover_code.config import trust
from clover_code.config.app_settings import AppSettings
from clover_code.config.engine import EngineKind as EngineKind
from clover_code.config.engine import ModelSettings
from clover_code.config.managed import ManagedPolicy
from clover_code.config.sections import HookConfig as HookConfig
from clover_code.config.sections import HookEvent as HookEvent
from clover_code.config.sections import LspServerConfig as LspServerConfig
from clover_code.config.sections import McpServerConfig as McpServerConfig
from clover_code.config.sections import ModelPrice as ModelPrice
from clover_code.config.sections import PermissionRules as PermissionRules
from clover_code.config.sections import empty_list
from clover_code.config.sources import check_base_url
from clover_code.protocol import ApprovalMode as ApprovalMode  # the settings name it too

APP_NAME = "clover-code"

SandboxKind = Literal["auto", "docker", "bwrap", "none"]


def user_config_path() -> Path:
    """Where the user config file lives on this platform."""
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def user_data_dir() -> Path:
    """Where sessions and other user data live on this platform."""
    return Path(platformdirs.user_data_dir(APP_NAME))


def user_cache_dir() -> Path:
    """Where clover-code keeps caches (the sandbox image's build folder)."""
    return Path(platformdirs.user_cache_dir(APP_NAME))


def worktrees_dir() -> Path:
    """Where clover-code keeps the worktrees it makes for sessions: each one is a
    workspace, so this folder is exempt from ``Settings.own_dirs``."""
    return user_data_dir() / "worktrees"


def trust_store() -> trust.TrustStore:
    """The user's project trust records (in the user data dir, outside every workspace)."""
    return trust.TrustStore(user_data_dir() / "trusted-projects.json")


class Settings(AppSettings, ModelSettings):
    """Everything clover-code can be told. Each field is documented below (the model
    and engine fields in ``ModelSettings``, the app's in ``AppSettings``)."""

    model_config = ConfigDict(
        extra="forbid",
        validate_default=True,
        protected_namespaces=(),
    )

    response_reserve: int = Field(16_384, ge=256)
    """Tokens of the window kept free for the response when max_tokens is unset (at most
    a quarter of the context window, so small windows keep room for the prompt)."""

    compact_threshold: float = Field(0.85, gt=0.1, le=1.0)
    """Share of the prompt budget at which older turns are summarised automatically."""

    repo_map_tokens: int = Field(1024, ge=0, le=16_384)
    """Tokens of the ranked repository map put in the system prompt (0 turns it off)."""

    show_denoising: bool = True
    """Draw the block being denoised live in the app (needs a backend that sends drafts)."""

    draft_confidences: bool = True
    """hf engine: send each filled token's confidence with the drafts (tints the live view)."""

    low_confidence: float = Field(0.5, ge=0.0, le=1.0)
    """A token filled below this confidence counts as unsure: the approval of an edit and
    headless JSON count them and name their lines."""

    sandbox: SandboxKind = "auto"
    """Where shell commands run: auto, docker, bwrap, or none (the host, only when chosen)."""

    sandbox_network: bool = False
    """Let sandboxed commands use the network (Docker bridge; bubblewrap shares the host's)."""

    sandbox_memory_mb: int = Field(4096, ge=128)
    """Memory for all sandboxed processes together (Docker); data size per process (bwrap)."""

    sandbox_pids: int = Field(512, ge=32)
    """Most processes and threads at once in the sandbox."""

    sandbox_cpus: float = Field(2.0, gt=0)
    """CPUs' worth of time the Docker sandbox may use."""

    sandbox_env: list[str] = Field(default_factory=lambda: ["TZ"])
    """Host environment variables passed into the sandbox; credential-like names never are."""

    sandbox_image: str | None = None
    """Docker image for the sandbox; unset means clover-code's own, built on first use."""

    sandbox_setup: list[str] = Field(default_factory=empty_list)
    """Shell commands run once per Docker sandbox image, as root with the network on and
    the workspace mounted (e.g. ``pip install -e '.[test]'``); the result is cached."""

    approval: ApprovalMode | None = None
    """What may run without asking (an approval mode, strictest first: read-only, plan, ask,
    auto-edit, sandbox-auto, full-auto); unset means ask in the app and sandbox-auto
    headless (commands run without asking only inside Docker or bubblewrap)."""

    permissions: PermissionRules = Field(default_factory=PermissionRules)
    """Allow and deny rules per tool, e.g. [permissions.allow] shell = ["pytest *"]."""

    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """Stdio MCP servers by name, e.g. [mcp_servers.docs] command = "uvx", args = ["docs-mcp"]."""

    mcp_project: Literal["ask", "trust", "ignore"] = "ask"
    """Servers in the project's .mcp.json: ask (start them once you trust that file's
    content), trust (start them without asking), or ignore them."""

    hooks: dict[HookEvent, list[HookConfig]] = Field(default_factory=dict)
    """Programs run at lifecycle points, e.g. [[hooks.PreToolUse]] command = "./check"."""

    plugins: list[str] = Field(default_factory=empty_list)
    """Installed plugins to use besides the enabled ones (clover-code plugin enable), by
    name, e.g. ["lint-kit"]; a project file names them only once you trusted it."""

    mcp_read_only: list[str] = Field(default_factory=empty_list)
    """MCP tools you vouch for as read-only, by name or glob (mcp__docs__search,
    mcp__docs__*): they count as reading, so plan and read-only modes run them. A
    server's own readOnlyHint is a claim and never counts; a project file sets this
    only once you trusted it."""

    mcp_timeout: float = Field(120.0, gt=0)
    """Longest an MCP tool call may take, in seconds."""

    lsp: dict[str, LspServerConfig] = Field(default_factory=dict)
    """Language servers by language, e.g. [lsp.python] command = "pylsp"; python,
    typescript, go and rust have built-in ones, used when found in the sandbox."""

    lsp_severity: Literal["error", "warning"] = "error"
    """The least severe diagnostic added to an edit's result: error, or warning (errors
    and warnings)."""

    lsp_wait: float = Field(2.0, ge=0, le=300)
    """Longest an edit waits for its files' diagnostics from the language server, in
    seconds (0: report only what the server already published)."""

    web_allow_private: bool | list[str] = False
    """Let web_fetch connect to private, loopback and link-local addresses: true for
    all, or a list of addresses and networks, e.g. ["10.1.2.3", "192.168.0.0/16"]."""

    web_max_bytes: int = Field(5_000_000, ge=1024)
    """Most bytes web_fetch reads of one page; the rest is never downloaded."""

    web_timeout: float = Field(30.0, gt=0)
    """Longest one web_fetch or web_search may take, in seconds."""

    web_max_redirects: int = Field(5, ge=0, le=20)
    """Most redirects web_fetch follows for one page."""

    search_provider: Literal["searxng", "brave", "tavily"] = "searxng"
    """The kind of search endpoint search_url is: searxng (JSON API), brave or tavily."""

    search_url: str | None = None
    """The search endpoint web_search uses, e.g. http://localhost:8888/search for SearXNG,
    https://api.search.brave.com/res/v1/web/search; unset: no web_search tool."""

    search_api_key: SecretStr | None = None
    """The hosted search API's key (sent only to search_url)."""

    auto_commit: bool = False
    """Commit the agent's changes on the current branch after each task (for CI)."""

    github_trigger: str = Field("@clover", min_length=1)
    """clover-code github: the mention in an issue or comment that asks for a run."""

    github_max_review_comments: int = Field(20, ge=0, le=100)
    """clover-code github: most inline comments one pull-request review posts (the other
    findings are listed in the review's summary)."""

    github_host_shell: bool = False
    """clover-code github: allow sandbox none. It exposes the job's token: the agent's shell
    then runs on the runner, where the step's own processes hold the token."""

    max_turns: int = Field(50, ge=1)
    """Most model requests the agent makes for one task."""

    max_subagents: int = Field(4, ge=1)
    """Most child agents (``task`` calls) that run at the same time."""

    subagent_max_turns: int = Field(20, ge=1)
    """Most model requests one child agent makes."""

    subagent_timeout: float = Field(600.0, gt=0)
    """Wall-clock limit for one child agent, in seconds."""

    subagent_max_tokens: int = Field(100_000, ge=1)
    """Most tokens one child agent may generate (over all its requests)."""

    timeout: float | None = Field(None, gt=0)
    """Wall-clock limit for one task, in seconds."""

    pricing: dict[str, ModelPrice] = Field(default_factory=dict)
    """Prices by model, per million tokens, e.g. [pricing."gpt-4.1-mini"] input = 0.4,
    cached_input = 0.1, output = 1.6; a local engine (hf, sglang) costs 0 unless priced,
    another model's cost is unknown until priced."""

    max_cost: float | None = Field(None, gt=0)
    """Most money a session may spend (its child agents included): the task ends as a
    limit before the next model request once it is spent. Needs a price for every model
    used (see pricing)."""

    shell_timeout: float = Field(120.0, gt=0)
    """Longest a single shell command may run, in seconds."""

    output_limit: int = Field(30_000, ge=1000)
    """Characters of tool output the model sees before head + tail truncation."""

    max_jobs: int = Field(4, ge=0)
    """Background jobs (``shell`` with ``background: true``) that may run at once in a
    session; 0 turns them off."""

    tool_retries: int = Field(3, ge=0)
    """Malformed tool calls in a row the model may make before the turn fails."""

    early_tools: bool = True
    """Start reading tool calls (read, grep, glob, list, repo map, web fetch, MCP tools
    in mcp_read_only) that the approval mode runs without asking as soon as their
    arguments are complete, while the rest of the response is still coming; their
    results reach the model in order when it ends."""

    max_retries: int = Field(4, ge=0)
    """Retries of a model request that failed before any output arrived."""

    request_timeout: float = Field(300.0, gt=0)
    """Seconds to wait for the next bytes of a model response."""

    sessions_dir: Path | None = None
    """Where session transcripts are written; unset means the user data dir."""

    checkpoint_max_files: int = Field(50_000, ge=1)
    """Most files a workspace may hold for checkpoints (undo, diff): past it the app
    asks first, headless and MCP go on without checkpoints."""

    checkpoint_max_bytes: int = Field(2 * 2**30, ge=1)
    """Most bytes of files a workspace may hold for checkpoints (2 GiB), as above."""

    trust_project_settings: bool = False
    """Apply every project's safety-loosening settings without asking (user config or
    CLOVER_TRUST_PROJECT_SETTINGS only; a project file cannot set it)."""

    _project_trust: trust.TrustReport | None = PrivateAttr(default=None)
    _managed: ManagedPolicy = PrivateAttr(default_factory=ManagedPolicy)

    @property
    def project_trust(self) -> trust.TrustReport | None:
        """What was decided about the project's config files; None without a workspace."""
        return self._project_trust

    @property
    def managed(self) -> ManagedPolicy:
        """What the administrator's managed settings files pin and limit."""
        return self._managed

    def approval_or(self, default: ApprovalMode) -> ApprovalMode:
        """The approval mode a front end starts in: the setting, else its own
        ``default`` held to the administrator's ``max_approval``."""
        return self.approval or self._managed.approval_or(default)

    @field_validator("search_url")
    @classmethod
    def _search_url_is_http(cls, value: str | None) -> str | None:
        return check_base_url(value)

    @field_validator("web_allow_private")
    @classmethod
    def _networks(cls, value: bool | list[str]) -> bool | list[str]:
        if isinstance(value, list):
            import ipaddress

            for entry in value:
                try:
                    ipaddress.ip_network(entry.strip(), strict=False)
                except ValueError:
                    raise ValueError(f"'{entry}' is not an IP address or network") from None
        return value

    def resolved_sessions_dir(self) -> Path:
        """The directory transcripts go to."""
        return self.sessions_dir or user_data_dir() / "sessions"

    def own_dirs(self) -> tuple[Path, ...]:
        """clover-code's own directories (config, data with the trust records and
        checkpoints, sessions, cache), real paths: never a workspace, and never
        written by a file tool (``worktrees_dir`` excepted)."""
        dirs = (
            user_config_path().parent,
            user_data_dir(),
            self.resolved_sessions_dir(),
            user_cache_dir(),
        )
        return tuple(dict.fromkeys(Path(os.path.realpath(d.expanduser())) for d in dirs))
