"""What of the host a ``BwrapSandbox`` command does not see.

- ``HIDDEN``: the homes and /run, behind an empty read-only tmpfs (no dotfile
  credentials, Docker socket or SSH agent socket);
- ``data_tops``: every top-level directory that is neither the system's nor a
  toolchain's (``/srv``, ``/mnt``, other people's projects), hidden the same
  way; the workspace and the PATH entries in it are bound back in;
- ``root_hidden``: host root's own secrets (shadow, sudoers, ssh host keys,
  container engines' state), hidden too when commands act as host root.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["HIDDEN", "data_tops", "root_hidden", "under"]

HIDDEN = ("/home", "/root", "/run", "/var/run")
"""Host directories replaced by an empty read-only tmpfs (plus the user's home)."""

_SYSTEM_TOP = frozenset(
    {"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "opt", "proc", "run"}
    | {"sbin", "sys", "tmp", "usr", "var", "home", "root", "snap", "nix", "gnu"}
)
"""Top-level directories of the system and its toolchains. Every other one (``/srv``,
``/mnt``, ``/media``, ``/work``...) holds someone's data and is hidden like /home; the
workspace and the PATH entries and toolchains in it are bound back in."""


def data_tops() -> list[str]:
    """The top-level directories that are neither system nor toolchain."""
    try:
        entries = list(os.scandir("/"))
    except OSError:
        return []
    tops = []
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.name not in _SYSTEM_TOP and entry.is_dir(follow_symlinks=False):
                tops.append(entry.path)
    return sorted(tops)


_ROOT_SECRETS = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/docker",
    "/etc/kubernetes",
    "/var/lib/docker",
    "/var/lib/containerd",
    "/var/lib/kubelet",
)
"""Hidden too when commands act as host root, whose owner bits would let them read these."""


def root_hidden() -> tuple[list[str], list[str]]:
    """The root-only secrets present here: (directories, files)."""
    dirs = [p for p in _ROOT_SECRETS if os.path.isdir(p) and not os.path.islink(p)]
    files = [p for p in _ROOT_SECRETS if os.path.isfile(p) and not os.path.islink(p)]
    return dirs, files


def under(path: str, parent: str) -> bool:
    """Whether ``path`` is ``parent`` or lies inside it (both absolute, as written)."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")
