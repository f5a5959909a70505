"""What every git command the harness runs on the host is given, whatever it does.

``HARDENING_CONFIG`` are the ``-c`` settings that switch off the programs a
repository's config could name (hooks, fsmonitor, signing, pagers, ``ssh`` and
credential helpers, the ``ext::`` transport) and keep git out of submodules;
``HARDENING_ENV`` the environment that skips the system config, replace refs
and every prompt. ``git_env`` is an environment without the inherited
``GIT_*`` variables plus those. Why each one is there: ``git/safe.py``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "HARDENING_CONFIG",
    "HARDENING_ENV",
    "config_args",
    "git_env",
    "location_args",
]

HARDENING_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.sshCommand", "ssh"),
    ("core.askPass", ""),
    ("core.pager", "cat"),
    ("credential.helper", ""),
    ("protocol.ext.allow", "never"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", "gpg"),
    ("gpg.ssh.program", "ssh-keygen"),
    ("gpg.x509.program", "gpgsm"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("diff.submodule", "short"),
    ("status.submoduleSummary", "false"),
    ("fetch.recurseSubmodules", "false"),
)
"""``-c`` settings given to every harness git command (command-line scope wins)."""

HARDENING_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
}
"""The environment every harness git command runs with (over one without ``GIT_*``)."""


def git_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without ``GIT_*``, plus the hardening."""
    source = os.environ if base is None else base
    env = {k: v for k, v in source.items() if not k.startswith("GIT_")}
    env.update(HARDENING_ENV)
    return env


def location_args(git_dir: Path | None, work_tree: Path | None) -> list[str]:
    """``--git-dir`` and ``--work-tree`` for the ones given."""
    args = []
    if git_dir is not None:
        args.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        args.append(f"--work-tree={work_tree}")
    return args


def config_args(settings: Sequence[tuple[str, str]]) -> list[str]:
    """``-c key=value`` for each setting."""
    args: list[str] = []
    for key, value in settings:
        args += ["-c", f"{key}={value}"]
    return args
