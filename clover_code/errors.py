"""The one error tree of clover-code.

Every error a user can cause or meet is a ``CloverError`` carrying one clear
sentence (what was wrong and what to do) and the process exit code a front
end should use. Front ends catch ``CloverError`` at their boundary and print
``str(error)``; anything else is a bug and may show a traceback.

    CloverError
    ├── UsageError            bad flag, missing task file            (exit 2)
    │   └── MissingExtra      an optional dependency not installed   (exit 2)
    ├── ConfigError           malformed or unknown config            (exit 2)
    │   └── PluginError       a plugin that cannot be installed or used
    ├── EngineError           model access                           (exit 1)
    │   ├── EngineUnavailable no engine / server unreachable         (exit 3)
    │   ├── AuthError         server refused the API key             (exit 3)
    │   ├── ModelNotFound     server does not serve that model       (exit 3)
    │   ├── ContextOverflow   prompt + response exceed the window    (exit 1)
    │   └── StreamInterrupted output began, then the stream broke    (exit 1)
    ├── SandboxUnavailable    --sandbox docker/bwrap cannot run      (exit 3)
    ├── ToolError             a tool call failed (goes back to the model)
    │   └── WorkspaceError    a path outside the workspace or in .git
    └── LimitReached          max turns or wall time                 (exit 4)
"""

from __future__ import annotations

from enum import IntEnum

from clover_code.redact import redact


class ExitCode(IntEnum):
    """Process exit codes, documented in the README."""

    OK = 0
    AGENT_ERROR = 1
    USAGE = 2
    ENGINE_UNAVAILABLE = 3
    SANDBOX_UNAVAILABLE = 3
    """The same code: what the task needs (engine, or the sandbox asked for) is missing."""
    LIMIT_REACHED = 4
    """--max-turns, --timeout, --max-tokens or --max-cost stopped the task."""
    INTERRUPTED = 130
    TERMINATED = 143
    """SIGTERM (128 + 15), handled as an interruption: what CI runners and ``timeout`` send."""


class CloverError(Exception):
    """Root of all errors that carry a user-facing sentence."""

    exit_code: ExitCode = ExitCode.AGENT_ERROR

    def __init__(self, message: str) -> None:
        # A sentence may quote a server's answer or a URL: no secret leaves in it.
        message = redact(message)
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return redact(self.message)


class UsageError(CloverError):
    """A command-line mistake."""

    exit_code = ExitCode.USAGE


class MissingExtra(UsageError):
    """An optional dependency (a package extra) that a command needs is not installed."""


_EXTRA_OF: dict[str, str] = {
    "torch": "local",
    "transformers": "local",
    "starlette": "local",
    "uvicorn": "local",
    "sse_starlette": "local",
    "sglang": "sglang",
    "textual_serve": "web",
    "opentelemetry": "otel",
    "ray": "ray",
}
"""The extra that brings each optional top-level module."""


def missing_extra(exc: ImportError, what: str) -> MissingExtra:
    """The one sentence for ``what`` failing on an optional module that is not installed.

    Re-raises ``exc`` when the missing module belongs to no extra (that is a bug,
    not a missing install)."""
    top = (exc.name or "").split(".")[0]
    extra = _EXTRA_OF.get(top)
    if extra is None:
        raise exc
    return MissingExtra(
        f"{what} needs the {extra} extra ({top} is not installed); "
        f"install it with: pip install 'clover-code[{extra}]'."
    )


class ConfigError(CloverError):
    """A config file or value that cannot be used."""

    exit_code = ExitCode.USAGE


class PluginError(ConfigError):
    """A plugin that cannot be installed or used (a bad ``plugin.toml``, a failed fetch)."""


class EngineError(CloverError):
    """The model could not produce a response."""


class EngineUnavailable(EngineError):
    """No engine can be reached or started."""

    exit_code = ExitCode.ENGINE_UNAVAILABLE


class AuthError(EngineError):
    """The server refused the credentials."""

    exit_code = ExitCode.ENGINE_UNAVAILABLE


class ModelNotFound(EngineError):
    """The server does not serve the requested model."""

    exit_code = ExitCode.ENGINE_UNAVAILABLE


class ContextOverflow(EngineError):
    """The conversation does not fit the model's context window."""


class StreamInterrupted(EngineError):
    """The stream broke after output had begun; what arrived is kept."""


class SandboxUnavailable(CloverError):
    """The sandbox asked for explicitly (``--sandbox docker`` or ``bwrap``) cannot run."""

    exit_code = ExitCode.SANDBOX_UNAVAILABLE


class ToolError(CloverError):
    """A tool call that failed; its message goes back to the model."""


class WorkspaceError(ToolError):
    """A path the file tools refuse (outside the workspace, or git internals)."""


class LimitReached(CloverError):
    """A configured limit (turns, wall time, money) stopped the agent."""

    exit_code = ExitCode.LIMIT_REACHED
