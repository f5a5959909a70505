"""What the Docker and bubblewrap sandboxes share: limits, environment, user.

- ``SandboxLimits``: memory, processes and CPUs a sandbox may use.
- ``sandbox_env``: the environment commands see. Nothing of the host's is
  passed except the names in an allowlist, and never a name that looks like a
  credential (key, token, secret, password...), whatever the allowlist says,
  nor the model's or the bot's credentials (``clover_code.redact``).
- ``sandbox_user``: the host uid:gid whose files commands write: the host
  user's, or, when clover-code itself runs as root, the workspace owner's.
  That is root only for a root-owned workspace (the usual container CI); then
  ``runs_as_root`` is true and each sandbox keeps commands unprivileged its
  own way (bubblewrap: an unprivileged uid in a user namespace; Docker: uid 0
  with no capabilities), always with every capability dropped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from clover_code.redact import without_agent_credentials

__all__ = [
    "DEFAULT_PASSTHROUGH",
    "INNER_ID",
    "SANDBOX_HOME",
    "SandboxLimits",
    "looks_secret",
    "needs_setuid_filter",
    "runs_as_root",
    "sandbox_env",
    "sandbox_user",
]

SANDBOX_HOME = "/home/sandbox"
"""HOME inside the sandbox: an empty, private tmpfs."""

INNER_ID = 65534
"""The uid and gid (``nobody``) commands see for themselves under bubblewrap when
clover-code runs as root on a root-owned workspace: the user namespace maps
it to root outside, without any capability."""

SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

DEFAULT_PASSTHROUGH = ("TZ",)
"""Host variables passed into the sandbox unless configured otherwise."""

_SECRET = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|"
    r"SSH_AUTH_SOCK|DOCKER_HOST|CERT",
    re.IGNORECASE,
)

_FIXED = {
    "PATH": SANDBOX_PATH,
    "HOME": SANDBOX_HOME,
    "USER": "sandbox",
    "LOGNAME": "sandbox",
    "SHELL": "/bin/bash",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
}
"""Set in every sandbox: tools must not wait for a pager or a prompt nobody sees."""


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Resources one sandbox may use; Docker enforces all, bubblewrap what rlimits can."""

    memory_mb: int = 4096
    """Memory for all its processes together (Docker); data size per process (bubblewrap)."""
    pids: int = 512
    """Processes and threads at once."""
    cpus: float = 2.0
    """CPUs' worth of time (Docker only)."""
    tmp_mb: int = 1024
    """Size of the /tmp tmpfs."""
    home_mb: int = 512
    """Size of the HOME tmpfs."""


def looks_secret(name: str) -> bool:
    """Whether an environment variable's name suggests it holds a credential."""
    return bool(_SECRET.search(name))


def sandbox_env(
    passthrough: Iterable[str] = DEFAULT_PASSTHROUGH,
    host_env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for sandboxed commands: fixed values plus allowed host variables."""
    source = os.environ if host_env is None else host_env
    env = dict(_FIXED)
    for name in passthrough:
        if name in source and name not in _FIXED and not looks_secret(name):
            env[name] = source[name]
    return without_agent_credentials(env)


def sandbox_user(root: Path) -> tuple[int, int]:
    """The host uid:gid whose files sandboxed commands write.

    The host user's; when clover-code runs as root, the workspace owner's,
    which is root itself for a root-owned workspace (see ``runs_as_root``).
    """
    uid, gid = os.getuid(), os.getgid()
    if uid != 0:
        return uid, gid
    st = root.stat()
    return st.st_uid, st.st_gid


def runs_as_root(user: tuple[int, int]) -> bool:
    """Whether commands write as host root (a root-owned workspace, clover-code as root).

    The sandboxes then never grant them a capability; bubblewrap also shows
    them an unprivileged uid (``INNER_ID``) through a user namespace.
    """
    return user[0] == 0


def needs_setuid_filter(user: tuple[int, int]) -> bool:
    """Whether commands running as ``user`` must be kept from setting setuid/setgid modes:
    when their files are root's (uid 0), or their group is root's (gid 0, a workspace a
    regular user owns with group root), since a setgid file of group root would hand
    whoever runs it the root group."""
    return user[0] == 0 or user[1] == 0
